"""Model config of the ``vad_webrtc`` integration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from voicehub.core.errors import ConfigError
from voicehub.registry.model_config import ModelConfig

WEBRTC_SAMPLE_RATES = (8000, 16000, 32000, 48000)
"""Rates (Hz) the WebRTC detector accepts."""

WEBRTC_FRAME_DURATIONS_MS = (10, 20, 30)
"""Frame lengths (ms) the WebRTC detector accepts."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VADWebRTCConfig(ModelConfig):
    """Settings of the WebRTC detector.

    Attributes:
        aggressiveness: 0 (least aggressive about filtering out non-speech) to 3 (most).
        frame_duration_ms: analysis frame, 10, 20 or 30 ms; one 0/1 decision per frame.
        sample_rate: the rate (Hz) audio at other rates is resampled to; one of 8000, 16000, 32000, 48000.
        resample: resample audio at unsupported rates; when false such audio raises
            :class:`~voicehub.core.errors.SampleRateError`.
    """

    config_type: ClassVar[str] = "vad_webrtc"
    schema_version: ClassVar[int] = 1

    aggressiveness: int = 3
    frame_duration_ms: int = 30
    sample_rate: int = 16000
    resample: bool = True

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: naming the field, the allowed values and the value given.
        """
        ModelConfig.validate(self)
        checks = (
            ("aggressiveness", (0, 1, 2, 3)),
            ("frame_duration_ms", WEBRTC_FRAME_DURATIONS_MS),
            ("sample_rate", WEBRTC_SAMPLE_RATES),
        )
        for key, allowed in checks:
            if getattr(self, key) not in allowed:
                raise ConfigError(
                    f"vad_webrtc.{key}: expected one of {list(allowed)}, got {getattr(self, key)!r}",
                    config_type=self.config_type,
                    key=key,
                )


__all__ = ["WEBRTC_FRAME_DURATIONS_MS", "WEBRTC_SAMPLE_RATES", "VADWebRTCConfig"]
