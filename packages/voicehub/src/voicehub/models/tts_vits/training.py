"""Training declaration of ``tts_vits``: not trainable from a Piper voice file."""

from __future__ import annotations

from voicehub.training.spec import ModelTrainingSpec, SupportLevel

TRAINING_SPEC = ModelTrainingSpec(
    model_type="tts_vits",
    support=SupportLevel.NONE,
    reason="a Piper voice (.onnx) holds only the inference generator: VITS training also needs the posterior "
    "encoder and the discriminators, which are not in it; train with piper's recipe and load its checkpoint "
    "(voicehub.architectures.vits.load_vits_training_checkpoint) for inference",
)

__all__ = ["TRAINING_SPEC"]
