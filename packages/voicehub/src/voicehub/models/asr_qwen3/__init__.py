"""The ``asr_qwen3`` integration: Qwen3-ASR-0.6B, declared and lazily created; the graph is pending.

Importing this package is light (no torch). See :mod:`voicehub.models.asr_qwen3.wrapper` for what
the first use does.
"""

from __future__ import annotations

from voicehub.models.asr_qwen3.config import ASRQwen3Config
from voicehub.models.asr_qwen3.registration import MODEL_SPEC, REPOSITORY

__all__ = ["MODEL_SPEC", "REPOSITORY", "ASRQwen3Config"]
