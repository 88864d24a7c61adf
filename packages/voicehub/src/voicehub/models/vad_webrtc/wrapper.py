"""The ``vad_webrtc`` wrapper: the WebRTC detector behind :class:`~voicehub.voice_activity.PreTrainedVADModel`.

The detector (``webrtcvad`` module from the ``webrtcvad-wheels`` distribution, MIT; the algorithm is
WebRTC's fixed-point filter bank + Gaussian mixture model) makes one speech/non-speech decision per
10, 20 or 30 ms frame of 16-bit PCM, with state carried from frame to frame. Its decisions become
probabilities 0.0 / 1.0 and go through the same segmentation as every VAD
(:mod:`voicehub.voice_activity`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from voicehub.core.audio import Waveform
from voicehub.core.device import Device
from voicehub.core.lazy import import_optional
from voicehub.core.outputs import VADOutput
from voicehub.core.runtime import RuntimeBundle
from voicehub.models.vad_webrtc.config import WEBRTC_SAMPLE_RATES, VADWebRTCConfig
from voicehub.voice_activity import FloatArray, PreTrainedVADModel, VADOptions, VADStreamSession, build_vad_output

PCM_FULL_SCALE = 32768.0
"""float [-1, 1) -> int16 scale."""


def to_pcm16(samples: FloatArray) -> bytes:
    """float32 samples in [-1, 1] -> little-endian 16-bit PCM bytes (rounded, clipped)."""
    scaled = np.clip(np.round(samples.astype(np.float64) * PCM_FULL_SCALE), -32768, 32767)
    return scaled.astype("<i2").tobytes()


class WebRTCDetector:
    """The runtime: makes per-frame decisions with fresh detector state per stream.

    Args:
        aggressiveness: 0-3.
        frame_duration_ms: 10, 20 or 30.
    """

    def __init__(self, aggressiveness: int, frame_duration_ms: int) -> None:
        self._module = import_optional(
            "webrtcvad", purpose="the vad_webrtc model", install_hint="pip install webrtcvad-wheels"
        )
        self.aggressiveness = aggressiveness
        self.frame_duration_ms = frame_duration_ms

    def frame_num_samples(self, sample_rate: int) -> int:
        """Samples per frame at ``sample_rate`` Hz (480 for 30 ms at 16 kHz)."""
        return sample_rate * self.frame_duration_ms // 1000

    def new_vad(self) -> Any:
        """A detector with fresh state."""
        return self._module.Vad(self.aggressiveness)

    def decide(self, vad: Any, frames: FloatArray, sample_rate: int) -> FloatArray:
        """Decisions for consecutive frames, float32 (num_frames, frame) -> (num_frames,) of 0.0/1.0."""
        out = np.empty(frames.shape[0], dtype=np.float32)
        for index in range(frames.shape[0]):
            out[index] = 1.0 if vad.is_speech(to_pcm16(frames[index]), sample_rate) else 0.0
        return out

    def probabilities(self, samples: FloatArray, sample_rate: int) -> FloatArray:
        """Decisions for a whole signal (the last frame zero-padded), float32 (num_frames,)."""
        frame = self.frame_num_samples(sample_rate)
        padded = np.concatenate([samples, np.zeros((-samples.shape[0]) % frame, dtype=np.float32)])
        return self.decide(self.new_vad(), padded.reshape(-1, frame), sample_rate)


class WebRTCFrameScorer:
    """Streaming half of the WebRTC detector (one detector instance per stream)."""

    def __init__(self, detector: WebRTCDetector, sample_rate: int) -> None:
        self.detector = detector
        self.sample_rate = sample_rate
        self.frame_num_samples = detector.frame_num_samples(sample_rate)
        self._vad = detector.new_vad()

    def reset(self) -> None:
        """Fresh detector state."""
        self._vad = self.detector.new_vad()

    def score(self, frames: FloatArray) -> FloatArray:
        """Decisions of consecutive frames, float32 (num_frames, frame) -> (num_frames,)."""
        return self.detector.decide(self._vad, frames, self.sample_rate)


class WebRTCVADModel(PreTrainedVADModel[VADWebRTCConfig, VADOptions, RuntimeBundle[WebRTCDetector]]):
    """WebRTC VAD with the shared segmentation; no weights.

    ``detect(audio, threshold=..., ...)`` returns a :class:`~voicehub.core.VADOutput`; sample
    bounds refer to the rate the detector ran at (8, 16, 32 or 48 kHz; other rates are resampled
    to ``config.sample_rate``). ``stream(sample_rate)`` returns a
    :class:`~voicehub.voice_activity.VADStreamSession`.
    """

    config_class = VADWebRTCConfig
    options_class = VADOptions
    resamples_in_detect = True  # outputs record the input's own rate
    has_weights = False  # save_pretrained writes the config (aggressiveness, frame length) and options only

    @property
    def supported_sample_rates(self) -> tuple[int, ...]:
        """``config.sample_rate`` first, then the other rates the detector accepts."""
        return (self.config.sample_rate, *(r for r in WEBRTC_SAMPLE_RATES if r != self.config.sample_rate))

    def _load_runtime(
        self, checkpoint: Path | None, *, device: Device, dtype: object, training: bool
    ) -> RuntimeBundle[WebRTCDetector]:
        return RuntimeBundle(module=WebRTCDetector(self.config.aggressiveness, self.config.frame_duration_ms))

    def _metadata(self, input_sample_rate: int) -> dict[str, Any]:
        return {
            "model_type": self.model_type,
            "aggressiveness": self.config.aggressiveness,
            "frame_duration_ms": self.config.frame_duration_ms,
            "input_sample_rate": input_sample_rate,
        }

    def _detect(
        self, bundle: RuntimeBundle[WebRTCDetector], waveforms: Sequence[Waveform], options: VADOptions
    ) -> list[VADOutput]:
        runtime = bundle.module
        outputs = []
        for original in waveforms:
            rate = original.sample_rate if original.sample_rate in WEBRTC_SAMPLE_RATES else self.config.sample_rate
            waveform = original.with_sample_rate(rate)
            outputs.append(
                build_vad_output(
                    runtime.probabilities(waveform.samples, rate),
                    num_samples=waveform.num_samples,
                    sample_rate=rate,
                    frame_num_samples=runtime.frame_num_samples(rate),
                    options=options,
                    source=waveform.source,
                    metadata=self._metadata(original.sample_rate),
                )
            )
        return outputs

    def stream(self, sample_rate: int, *, options: VADOptions | None = None, **overrides: Any) -> VADStreamSession:
        """Start an incremental detector for audio arriving in chunks of any size.

        Args:
            sample_rate: rate in Hz of the pushed audio; 8000, 16000, 32000 and 48000 run natively,
                others are resampled to ``config.sample_rate`` (unless ``config.resample`` is false).
            options: segmentation options replacing the defaults.
            **overrides: individual options, validated now.

        Raises:
            SampleRateError: for an unsupported rate when resampling is off.
            UnknownInferenceOptionError, InferenceOptionError: for bad options.
        """
        resolved = self.resolve_options_for("stream", options, overrides)
        self.check_stream_rate(sample_rate)
        runtime = self._inference_runtime().module
        rate = sample_rate if sample_rate in WEBRTC_SAMPLE_RATES else self.config.sample_rate
        return VADStreamSession(
            WebRTCFrameScorer(runtime, rate), resolved, sample_rate=sample_rate, metadata=self._metadata(sample_rate)
        )


__all__ = ["PCM_FULL_SCALE", "WebRTCDetector", "WebRTCFrameScorer", "WebRTCVADModel", "to_pcm16"]
