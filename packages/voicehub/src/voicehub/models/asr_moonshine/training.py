"""Training declaration of ``asr_moonshine``: not trainable from its int8 weights."""

from __future__ import annotations

from voicehub.training.spec import ModelTrainingSpec, SupportLevel

TRAINING_SPEC = ModelTrainingSpec(
    model_type="asr_moonshine",
    support=SupportLevel.NONE,
    reason="the only offline weights are int8-quantised ONNX Runtime files, dequantised for inference; "
    "fine-tuning from int8-rounded weights is not supported (fine-tune asr_whisper instead)",
)

__all__ = ["TRAINING_SPEC"]
