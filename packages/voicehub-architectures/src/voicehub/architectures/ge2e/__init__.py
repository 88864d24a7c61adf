"""GE2E LSTM speaker encoder (resemblyzer 0.1.4 weights) as a Hyperion ``HyperTorchModel``.

Importing this package imports torch; :mod:`.registration` does not.
"""

from __future__ import annotations

from voicehub.architectures.ge2e.checkpoint import load_resemblyzer_checkpoint, locate_resemblyzer_weights
from voicehub.architectures.ge2e.config import SAMPLE_RATE, GE2EConfig
from voicehub.architectures.ge2e.model import GE2ESpeakerEncoder
from voicehub.architectures.ge2e.processor import preprocess

__all__ = [
    "SAMPLE_RATE",
    "GE2EConfig",
    "GE2ESpeakerEncoder",
    "load_resemblyzer_checkpoint",
    "locate_resemblyzer_weights",
    "preprocess",
]
