"""Catalog entry of ``vad_webrtc`` (declaration only: imports nothing heavy)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.model_registry import ModelSpec

MODEL_SPEC = ModelSpec(
    model_type="vad_webrtc",
    task=SpeechTask.VOICE_ACTIVITY_DETECTION,
    config="voicehub.models.vad_webrtc.config:VADWebRTCConfig",
    wrapper="voicehub.models.vad_webrtc.wrapper:WebRTCVADModel",
    default_source=None,
    aliases=("webrtc", "webrtcvad"),
    capabilities=("streaming", "8khz", "16khz", "32khz", "48khz", "frame-probabilities"),
    architecture=None,
    default_for_task=False,
    license="MIT",
    description="WebRTC GMM voice activity detector through the webrtcvad C extension (no weights)",
    training_spec="voicehub.models.vad_webrtc.training:TRAINING_SPEC",
)

__all__ = ["MODEL_SPEC"]
