"""Training declaration of ``vad_silero`` (imports no torch; the hooks live in ``training_hooks``)."""

from __future__ import annotations

from voicehub.training.spec import DataContract, ManifestField, ModelTrainingSpec, SupportLevel

TRAINING_SPEC = ModelTrainingSpec(
    model_type="vad_silero",
    support=SupportLevel.NATIVE,
    reason="the native graph is a differentiable torch module from raw 16 kHz audio to one speech "
    "probability per 32 ms chunk, so it fine-tunes on segment-labelled audio as loaded",
    family="frame_classification",
    objective="binary_cross_entropy",
    data=DataContract(required_fields=(ManifestField.SEGMENTS,), sample_rate=16000, frame_num_samples=512),
    # Training runs at 16 kHz: the 8 kHz branch gets no gradient and is kept as shipped.
    frozen_parts=("branches.8k.",),
    checkpoint_kind="state_dict",
    export_path="save_pretrained",
    hooks="voicehub.models.vad_silero.training_hooks:SileroFrameHooks",
)
"""Frame classification (speech / non-speech per 512-sample chunk at 16 kHz) with binary cross-entropy."""

__all__ = ["TRAINING_SPEC"]
