"""Catalog entry of ``vad_silero`` (declaration only: imports no torch and no model code)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.checkpoints import DistributionSource
from voicehub.registry.model_registry import ModelSpec

DEFAULT_SOURCE = DistributionSource(
    distribution="silero-vad",
    path="silero_vad/data/silero_vad.jit",
    install_hint='pip install "silero-vad>=5.1.2,<7"',
)
"""Silero VAD (TorchScript, 16 and 8 kHz) inside the installed ``silero-vad`` wheel (MIT; 6.2.3 = model v6).

No digest here: ``voicehub`` accepts ``silero-vad>=5.1.2,<7`` so that it installs next to other tools.
The adapter checks the content instead (:func:`voicehub.architectures.silero_vad.checkpoint.load_silero_vad`):
a released file is recognised by its SHA-256, any other must fit the graph tensor by tensor.
"""

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
    training_spec="voicehub.models.vad_silero.training:TRAINING_SPEC",
)

__all__ = ["DEFAULT_SOURCE", "MODEL_SPEC"]
