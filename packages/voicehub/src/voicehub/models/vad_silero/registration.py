"""Catalog entry of ``vad_silero`` (declaration only: imports no torch and no model code)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.checkpoints import DistributionSource
from voicehub.registry.model_registry import ModelSpec

DEFAULT_SOURCE = DistributionSource(
    distribution="silero-vad",
    path="silero_vad/data/silero_vad.jit",
    sha256="e1122837f4154c511485fe0b9c64455f7b929c96fbb8d79fbdb336383ebd3720",
)
"""Silero VAD v6 (TorchScript, 16 and 8 kHz) inside the ``silero-vad==6.2.3`` wheel (MIT)."""

MODEL_SPEC = ModelSpec(
    model_type="vad_silero",
    task=SpeechTask.VOICE_ACTIVITY_DETECTION,
    config="voicehub.models.vad_silero.config:VADSileroConfig",
    wrapper="voicehub.models.vad_silero.wrapper:SileroVADModel",
    default_source=DEFAULT_SOURCE,
    aliases=("silero", "silero-vad"),
    capabilities=("streaming", "16khz", "8khz", "frame-probabilities", "batched-inference"),
    architecture="silero",
    default_for_task=True,
    license="MIT",
    description="Silero VAD v5/v6, native PyTorch graph on the weights of the silero-vad wheel",
)

__all__ = ["DEFAULT_SOURCE", "MODEL_SPEC"]
