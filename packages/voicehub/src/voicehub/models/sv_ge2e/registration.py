"""Catalog entry of ``sv_ge2e`` (declaration only: imports no torch and no model code)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.checkpoints import DistributionSource
from voicehub.registry.model_registry import ModelSpec

DEFAULT_SOURCE = DistributionSource(
    distribution="voicehub-ge2e-weights",
    path="voicehub_ge2e_weights/pretrained.pt",
    sha256="39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e",
    install_hint=(
        "uv build --package voicehub-ge2e-weights --out-dir dist && pip install dist/voicehub_ge2e_weights-*.whl "
        "(in a VoiceHub checkout; it is a dependency of the voicehub wheel and `uv sync` installs it)"
    ),
)
"""GE2E LSTM encoder weights of ``resemblyzer`` 0.1.4 (``pretrained.pt``, byte-identical, Apache-2.0).

Shipped by the workspace member ``weights/voicehub-ge2e-weights`` (a dependency of ``voicehub``):
``pip install resemblyzer`` would also build the ``webrtcvad`` sdist, which breaks ``import webrtcvad``.
"""

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
    training_spec="voicehub.models.sv_ge2e.training:TRAINING_SPEC",
)

__all__ = ["DEFAULT_SOURCE", "MODEL_SPEC"]
