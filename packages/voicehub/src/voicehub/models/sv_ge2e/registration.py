"""Catalog entry of ``sv_ge2e`` (declaration only: imports no torch and no model code)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.checkpoints import DistributionSource
from voicehub.registry.model_registry import ModelSpec

DEFAULT_SOURCE = DistributionSource(
    distribution="resemblyzer",
    path="resemblyzer/pretrained.pt",
    sha256="39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e",
    requirement="resemblyzer==0.1.4",
)
"""GE2E LSTM encoder weights inside the ``resemblyzer==0.1.4`` wheel (Apache-2.0)."""

MODEL_SPEC = ModelSpec(
    model_type="sv_ge2e",
    task=SpeechTask.SPEAKER_VERIFICATION,
    config="voicehub.models.sv_ge2e.config:SVGE2EConfig",
    wrapper="voicehub.models.sv_ge2e.wrapper:GE2ESpeakerVerifier",
    default_source=DEFAULT_SOURCE,
    aliases=("ge2e", "resemblyzer"),
    capabilities=("16khz", "batched-inference", "cosine-scoring", "plda-backend"),
    architecture="ge2e",
    default_for_task=True,
    license="Apache-2.0",
    description="GE2E LSTM speaker encoder (resemblyzer 0.1.4 weights) with cosine or Hyperion PLDA scoring",
)

__all__ = ["DEFAULT_SOURCE", "MODEL_SPEC"]
