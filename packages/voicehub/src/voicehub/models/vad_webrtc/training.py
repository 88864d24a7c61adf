"""Training declaration of ``vad_webrtc``: it cannot be trained."""

from __future__ import annotations

from voicehub.training.spec import ModelTrainingSpec, SupportLevel

TRAINING_SPEC = ModelTrainingSpec(
    model_type="vad_webrtc",
    support=SupportLevel.NONE,
    reason="the WebRTC detector is a fixed-point GMM inside the webrtcvad C extension; it has no tensors "
    "to optimise (fine-tune vad_silero instead)",
)

__all__ = ["TRAINING_SPEC"]
