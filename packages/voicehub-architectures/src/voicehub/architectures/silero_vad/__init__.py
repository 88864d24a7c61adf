"""Silero VAD v5/v6: native graph, config and checkpoint adapters (torch is imported here)."""

from __future__ import annotations

from voicehub.architectures.silero_vad.checkpoint import (
    KNOWN_CHECKPOINTS,
    CheckpointFormat,
    config_for_checkpoint,
    convert_state_dict,
    detect_format,
    load_silero_vad,
    read_tensors,
    tensor_rules,
)
from voicehub.architectures.silero_vad.config import SileroVADConfig, chunk_num_samples, context_num_samples
from voicehub.architectures.silero_vad.model import SileroVAD, SileroVADBranch, SileroVADState

__all__ = [
    "KNOWN_CHECKPOINTS",
    "CheckpointFormat",
    "SileroVAD",
    "SileroVADBranch",
    "SileroVADConfig",
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
