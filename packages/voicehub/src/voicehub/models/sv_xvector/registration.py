"""Catalog entry of ``sv_xvector`` (declaration only: imports no torch and no model code)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.model_registry import ModelSpec

MODEL_SPEC = ModelSpec(
    model_type="sv_xvector",
    task=SpeechTask.SPEAKER_VERIFICATION,
    config="voicehub.models.sv_xvector.config:SVXVectorConfig",
    wrapper="voicehub.models.sv_xvector.wrapper:XVectorSpeakerVerifier",
    default_source=None,
    aliases=("xvector", "ecapa"),
    capabilities=("16khz", "batched-inference", "cosine-scoring", "trainable"),
    architecture="xvector",
    default_for_task=False,
    license="Apache-2.0",
    description="ECAPA-style x-vector HyperTorchModel; no pretrained weights (train it, or load your checkpoint)",
    training_spec="voicehub.models.sv_xvector.training:TRAINING_SPEC",
)

__all__ = ["MODEL_SPEC"]
