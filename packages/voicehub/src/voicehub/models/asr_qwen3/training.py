"""Training declaration of ``asr_qwen3``: not trainable (no graph yet)."""

from __future__ import annotations

from voicehub.training.spec import ModelTrainingSpec, SupportLevel

TRAINING_SPEC = ModelTrainingSpec(
    model_type="asr_qwen3",
    support=SupportLevel.NONE,
    reason="the native Qwen3-ASR graph is not implemented yet, so there is nothing to fine-tune; fine-tune "
    "asr_whisper instead",
)

__all__ = ["TRAINING_SPEC"]
