"""GE2E LSTM speaker encoder (resemblyzer 0.1.4 weights) as a Hyperion ``HyperTorchModel``.

Importing this package stays light (no torch): the architecture declaration is imported at once,
the config, graph, preprocessing and checkpoint adapter on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicehub.architectures.ge2e.registration import ARCHITECTURE
from voicehub.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from voicehub.architectures.ge2e.checkpoint import load_resemblyzer_checkpoint, locate_resemblyzer_weights
    from voicehub.architectures.ge2e.config import SAMPLE_RATE, GE2EConfig, GE2EPreprocessing
    from voicehub.architectures.ge2e.model import GE2ESpeakerEncoder
    from voicehub.architectures.ge2e.processor import preprocess

_LAZY = {
    "SAMPLE_RATE": "config",
    "GE2EConfig": "config",
    "GE2EPreprocessing": "config",
    "GE2ESpeakerEncoder": "model",
    "load_resemblyzer_checkpoint": "checkpoint",
    "locate_resemblyzer_weights": "checkpoint",
    "preprocess": "processor",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "ARCHITECTURE",
    "SAMPLE_RATE",
    "GE2EConfig",
    "GE2EPreprocessing",
    "GE2ESpeakerEncoder",
    "load_resemblyzer_checkpoint",
    "locate_resemblyzer_weights",
    "preprocess",
]
