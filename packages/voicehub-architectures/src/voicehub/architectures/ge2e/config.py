"""Configuration of the GE2E LSTM speaker encoder.

Defaults reproduce the ``resemblyzer`` 0.1.4 encoder (``resemblyzer/hparams.py``): 16 kHz,
40 mel bands from a 25 ms (400-sample) window with a 10 ms (160-sample) hop, partial
utterances of 160 frames (1.6 s) taken 1.3 times per second, a 3-layer LSTM 40 -> 256, a
linear layer 256 -> 256, ReLU, L2 norm; preprocessing raises quiet audio to -30 dBFS and trims
long silences with the WebRTC VAD (aggressiveness 3, 30 ms windows).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from voicehub.components.mel_scale import MelSpectrogramConfig
from voicehub.core import Config, ConfigError
from voicehub.hyperion.torch.config import HyperTorchConfig

SAMPLE_RATE = 16000
"""Input rate of the pretrained encoder, in Hz."""


def _resemblyzer_frontend() -> MelSpectrogramConfig:
    # librosa.feature.melspectrogram defaults as resemblyzer calls it: power 2, Slaney mel scale
    # and norm, centred frames with zero padding, no logarithm.
    return MelSpectrogramConfig(
        sample_rate=SAMPLE_RATE, n_fft=400, win_length=400, hop_length=160, num_mel_bins=40, log=False
    )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GE2EPreprocessing(Config):
    """How audio is prepared and cut into partials before the encoder: the part of
    :class:`GE2EConfig` a user may change without changing the weights.

    Attributes:
        trim_silence: remove long silences with the WebRTC VAD before embedding (as resemblyzer).
        target_dbfs: raise quiet input to this RMS level in dBFS (never lowered); ``None`` skips it.
        partials_per_second: partial utterances (1.6 s each) started per second of audio.
        min_coverage: keep the last partial when at least this fraction of it is audio.
    """

    config_type: ClassVar[str] = "ge2e-preprocessing"
    schema_version: ClassVar[int] = 1

    trim_silence: bool = True
    target_dbfs: float | None = -30.0
    partials_per_second: float = 1.3
    min_coverage: float = 0.75

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: naming the field and the allowed range.
        """
        Config.validate(self)
        if not 0.625 <= self.partials_per_second <= 100.0:
            raise ConfigError(
                f"{self.config_type}.partials_per_second must be in [0.625, 100] (partials must cover the audio), "
                f"got {self.partials_per_second}",
                key="partials_per_second",
            )
        if not 0.0 < self.min_coverage <= 1.0:
            raise ConfigError(f"{self.config_type}.min_coverage must be in (0, 1], got {self.min_coverage}")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GE2EConfig(HyperTorchConfig):
    """GE2E speaker encoder settings.

    Attributes:
        frontend: the mel-spectrogram front end (``frontend.num_mel_bins`` is the LSTM input size).
        hidden_size: LSTM hidden units per layer.
        num_layers: stacked LSTM layers.
        embedding_dim: output embedding size.
        partial_num_frames: frames per partial utterance (160 frames = 1.6 s at a 10 ms hop).
        partials_per_second: how many partial utterances start per second of audio.
        min_coverage: the last partial is kept when at least this fraction of it is real audio.
        target_dbfs: quiet input is raised to this RMS level in dBFS (never lowered); ``None`` skips it.
        trim_silence: remove silences longer than ``vad_max_silence_windows`` VAD windows.
        vad_window_ms: WebRTC VAD window in ms (10, 20 or 30).
        vad_mode: WebRTC VAD aggressiveness 0-3.
        vad_moving_average_width: VAD decisions are smoothed over this many windows.
        vad_max_silence_windows: silences up to this many windows are kept.
    """

    config_type: ClassVar[str] = "ge2e-speaker-encoder"

    frontend: MelSpectrogramConfig = dataclasses.field(default_factory=_resemblyzer_frontend)
    hidden_size: int = 256
    num_layers: int = 3
    embedding_dim: int = 256
    partial_num_frames: int = 160
    partials_per_second: float = 1.3
    min_coverage: float = 0.75
    target_dbfs: float | None = -30.0
    trim_silence: bool = True
    vad_window_ms: int = 30
    vad_mode: int = 3
    vad_moving_average_width: int = 8
    vad_max_silence_windows: int = 6

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: naming the field, the allowed range and the value.
        """
        HyperTorchConfig.validate(self)
        for name in ("hidden_size", "num_layers", "embedding_dim", "partial_num_frames", "vad_moving_average_width"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{self.config_type}.{name} must be > 0, got {getattr(self, name)}", key=name)
        frame_step = self.partial_frame_step
        if not 0 < frame_step <= self.partial_num_frames:
            raise ConfigError(
                f"{self.config_type}.partials_per_second={self.partials_per_second} gives a step of {frame_step} "
                f"frames; it must be in [1, partial_num_frames={self.partial_num_frames}]",
                key="partials_per_second",
            )
        if not 0.0 < self.min_coverage <= 1.0:
            raise ConfigError(f"{self.config_type}.min_coverage must be in (0, 1], got {self.min_coverage}")
        if self.vad_window_ms not in (10, 20, 30):
            raise ConfigError(f"{self.config_type}.vad_window_ms must be 10, 20 or 30, got {self.vad_window_ms}")
        if self.vad_mode not in (0, 1, 2, 3):
            raise ConfigError(f"{self.config_type}.vad_mode must be 0-3, got {self.vad_mode}")
        if self.vad_max_silence_windows < 0:
            raise ConfigError(f"{self.config_type}.vad_max_silence_windows must be >= 0")
        if self.frontend.sample_rate not in (8000, 16000, 32000, 48000) and self.trim_silence:
            raise ConfigError(
                f"{self.config_type}: the WebRTC VAD runs at 8, 16, 32 or 48 kHz, "
                f"frontend.sample_rate is {self.frontend.sample_rate}"
            )

    @property
    def sample_rate(self) -> int:
        """Input rate in Hz."""
        return self.frontend.sample_rate

    @property
    def preprocessing(self) -> GE2EPreprocessing:
        """The preprocessing fields of this config, as one record."""
        return GE2EPreprocessing(**{key: getattr(self, key) for key in GE2EPreprocessing.known_keys()})

    def with_preprocessing(self, preprocessing: GE2EPreprocessing) -> GE2EConfig:
        """This config with ``preprocessing``'s fields (the saved format keeps them flat, as resemblyzer's hparams).

        Raises:
            ConfigError: when the result is invalid (e.g. a partial step longer than a partial).
        """
        return self.replace(**{key: getattr(preprocessing, key) for key in GE2EPreprocessing.known_keys()})

    @property
    def partial_frame_step(self) -> int:
        """Frames between the starts of consecutive partial utterances (77 with the defaults)."""
        if self.partials_per_second <= 0:
            return 0
        # Same operation order as resemblyzer: (samples per partial step) / (samples per frame).
        return round((self.frontend.sample_rate / self.partials_per_second) / self.frontend.hop_length)


__all__ = ["SAMPLE_RATE", "GE2EConfig", "GE2EPreprocessing"]
