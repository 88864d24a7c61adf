"""Mel scales, mel filter banks and the mel-spectrogram front end's config (NumPy only, no torch).

Mel scales:

* ``"slaney"``: linear below 1 kHz (3 mels per 200 Hz), logarithmic above (27 mels per
  factor 6.4), from Malcolm Slaney's Auditory Toolbox (Interval Research TR 1998-010); this is
  librosa's default (``htk=False``).
* ``"htk"``: ``mel = 2595 log10(1 + f / 700)`` (the HTK Book, section 5.4).

Filters are triangles between consecutive centre frequencies spread evenly on the mel scale;
with ``norm="slaney"`` each triangle is scaled by ``2 / (f_{m+2} - f_m)`` so every filter has
the same area (constant energy per band), again as in the Auditory Toolbox.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from voicehub.core import Config, ConfigError

_F_SP = 200.0 / 3.0  # Hz per mel below the break (Slaney)
_MIN_LOG_HZ = 1000.0  # break frequency in Hz (Slaney)
_LOG_STEP = math.log(6.4) / 27.0  # log-frequency step per mel above the break (Slaney)


def hz_to_mel(frequency_hz: npt.ArrayLike, *, scale: Literal["slaney", "htk"] = "slaney") -> npt.NDArray[np.float64]:
    """Convert frequencies in Hz to mels.

    Args:
        frequency_hz: frequencies in Hz (any shape).
        scale: ``"slaney"`` or ``"htk"`` (see the module docstring).

    Returns:
        float64 array of the same shape, in mels.
    """
    f = np.asarray(frequency_hz, dtype=np.float64)
    if scale == "htk":
        return np.asarray(2595.0 * np.log10(1.0 + f / 700.0))
    mel = f / _F_SP
    high = f >= _MIN_LOG_HZ
    return np.where(high, _MIN_LOG_HZ / _F_SP + np.log(np.maximum(f, 1e-10) / _MIN_LOG_HZ) / _LOG_STEP, mel)


def mel_to_hz(mel: npt.ArrayLike, *, scale: Literal["slaney", "htk"] = "slaney") -> npt.NDArray[np.float64]:
    """Convert mels to Hz (inverse of :func:`hz_to_mel`).

    Returns:
        float64 array of the same shape, in Hz.
    """
    m = np.asarray(mel, dtype=np.float64)
    if scale == "htk":
        return np.asarray(700.0 * (10.0 ** (m / 2595.0) - 1.0))
    min_log_mel = _MIN_LOG_HZ / _F_SP
    return np.where(m >= min_log_mel, _MIN_LOG_HZ * np.exp(_LOG_STEP * (m - min_log_mel)), _F_SP * m)


def mel_filter_bank(
    *,
    sample_rate: int,
    n_fft: int,
    num_mel_bins: int,
    f_min: float = 0.0,
    f_max: float | None = None,
    scale: Literal["slaney", "htk"] = "slaney",
    norm: Literal["slaney"] | None = "slaney",
) -> npt.NDArray[np.float32]:
    """Triangular mel filters over the bins of a one-sided FFT.

    Args:
        sample_rate: audio rate in Hz.
        n_fft: FFT size in samples; the filters span ``n_fft // 2 + 1`` bins.
        num_mel_bins: number of filters.
        f_min: lowest band edge in Hz.
        f_max: highest band edge in Hz; ``None`` is the Nyquist frequency.
        scale: mel scale, ``"slaney"`` or ``"htk"``.
        norm: ``"slaney"`` for equal-area filters, ``None`` for unit-peak triangles.

    Returns:
        float32 (num_mel_bins, n_fft // 2 + 1), computed in float64 then rounded.

    Raises:
        ConfigError: for a non-positive size or rate, or band edges outside [0, Nyquist].
    """
    nyquist = sample_rate / 2.0
    top = nyquist if f_max is None else float(f_max)
    if sample_rate <= 0 or n_fft <= 0 or num_mel_bins <= 0:
        raise ConfigError(
            f"mel_filter_bank: sample_rate, n_fft and num_mel_bins must be > 0, "
            f"got {sample_rate}, {n_fft}, {num_mel_bins}"
        )
    if not 0.0 <= f_min < top <= nyquist:
        raise ConfigError(f"mel_filter_bank: expected 0 <= f_min < f_max <= {nyquist} Hz, got {f_min}, {top}")
    fft_hz = np.linspace(0.0, nyquist, n_fft // 2 + 1)
    edges_hz = mel_to_hz(
        np.linspace(hz_to_mel(f_min, scale=scale), hz_to_mel(top, scale=scale), num_mel_bins + 2), scale=scale
    )
    widths = np.diff(edges_hz)
    distance = edges_hz[:, None] - fft_hz[None, :]
    rising = -distance[:-2] / widths[:-1, None]
    falling = distance[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    if norm == "slaney":
        weights *= (2.0 / (edges_hz[2:] - edges_hz[:-2]))[:, None]
    return weights.astype(np.float32)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MelSpectrogramConfig(Config):
    """Settings of :class:`MelSpectrogram`.

    Attributes:
        sample_rate: input rate in Hz.
        n_fft: FFT size in samples.
        win_length: Hann window length in samples (<= ``n_fft``, centred in the FFT frame).
        hop_length: frame step in samples.
        num_mel_bins: number of mel bands.
        f_min: lowest band edge in Hz.
        f_max: highest band edge in Hz (``None``: Nyquist).
        mel_scale: ``"slaney"`` or ``"htk"``.
        mel_norm: ``"slaney"`` (equal-area filters) or ``None``.
        power: 2.0 for a power spectrogram, 1.0 for magnitude.
        center: pad ``n_fft // 2`` zeros at both ends so frame ``t`` is centred on sample ``t * hop_length``.
        log: return ``log(mel + log_floor)`` instead of the linear mel energies.
        log_floor: added before the logarithm.
    """

    config_type: ClassVar[str] = "mel-spectrogram"

    sample_rate: int = 16000
    n_fft: int = 400
    win_length: int = 400
    hop_length: int = 160
    num_mel_bins: int = 80
    f_min: float = 0.0
    f_max: float | None = None
    mel_scale: Literal["slaney", "htk"] = "slaney"
    mel_norm: Literal["slaney"] | None = "slaney"
    power: float = 2.0
    center: bool = True
    log: bool = False
    log_floor: float = 1e-6

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: naming the field.
        """
        Config.validate(self)
        for name in ("sample_rate", "n_fft", "win_length", "hop_length", "num_mel_bins"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"mel-spectrogram.{name} must be > 0, got {getattr(self, name)}", key=name)
        if self.win_length > self.n_fft:
            raise ConfigError(
                f"mel-spectrogram.win_length ({self.win_length}) must be <= n_fft ({self.n_fft})", key="win_length"
            )
        if self.power <= 0 or self.log_floor <= 0:
            raise ConfigError(f"mel-spectrogram.power and log_floor must be > 0, got {self.power}, {self.log_floor}")

    def num_frames(self, num_samples: int) -> int:
        """Frames produced for ``num_samples`` samples."""
        if self.center:
            return 1 + num_samples // self.hop_length
        return max(0, 1 + (num_samples - self.n_fft) // self.hop_length)


__all__ = ["MelSpectrogramConfig", "hz_to_mel", "mel_filter_bank", "mel_to_hz"]
