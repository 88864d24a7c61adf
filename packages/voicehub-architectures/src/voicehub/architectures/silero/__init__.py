"""Silero VAD v5/v6: native graph, config and checkpoint adapters.

Importing this package stays light (no torch): the config and the architecture declaration are
imported at once, the graph and the adapters on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicehub.architectures.silero.config import (
    SUPPORTED_SAMPLE_RATES,
    SileroConfig,
    chunk_num_samples,
    context_num_samples,
)
from voicehub.architectures.silero.registration import ARCHITECTURE
from voicehub.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from voicehub.architectures.silero.checkpoint import (
        KNOWN_CHECKPOINTS,
        CheckpointFormat,
        config_for_checkpoint,
        convert_state_dict,
        detect_format,
        load_silero_vad,
        read_tensors,
        tensor_rules,
    )
    from voicehub.architectures.silero.model import SileroVAD, SileroVADBranch, SileroVADState

_LAZY = {
    "KNOWN_CHECKPOINTS": "checkpoint",
    "CheckpointFormat": "checkpoint",
    "config_for_checkpoint": "checkpoint",
    "convert_state_dict": "checkpoint",
    "detect_format": "checkpoint",
    "load_silero_vad": "checkpoint",
    "read_tensors": "checkpoint",
    "tensor_rules": "checkpoint",
    "SileroVAD": "model",
    "SileroVADBranch": "model",
    "SileroVADState": "model",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "ARCHITECTURE",
    "KNOWN_CHECKPOINTS",
    "SUPPORTED_SAMPLE_RATES",
    "CheckpointFormat",
    "SileroConfig",
    "SileroVAD",
    "SileroVADBranch",
    "SileroVADState",
    "chunk_num_samples",
    "config_for_checkpoint",
    "context_num_samples",
    "convert_state_dict",
    "detect_format",
    "load_silero_vad",
    "read_tensors",
    "tensor_rules",
]
