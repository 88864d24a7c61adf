"""Model config of the ``asr_qwen3`` integration (no torch imported)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from voicehub.registry.model_config import ModelConfig

SAMPLE_RATE = 16000
"""Qwen3-ASR's input rate in Hz (its Whisper-style log-mel front end); other rates are resampled."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ASRQwen3Config(ModelConfig):
    """The ``asr_qwen3`` model config.

    It holds no graph sizes yet: the native graph is not implemented (it could not be verified
    against real weights on this project's machines), so there is nothing to size. Fields arrive
    with the graph, as optional fields with defaults (a compatible schema change).
    """

    config_type: ClassVar[str] = "asr_qwen3"
    schema_version: ClassVar[int] = 1

    @property
    def sample_rate(self) -> int:
        """16000 Hz."""
        return SAMPLE_RATE


__all__ = ["SAMPLE_RATE", "ASRQwen3Config"]
