"""GE2E input preprocessing: volume normalisation and long-silence trimming.

Reproduces ``resemblyzer.audio.preprocess_wav`` (0.1.4) after resampling to 16 kHz:

1. ``normalize_volume(increase_only=True)``: the RMS level is measured on the int16 scale
   (full scale 32767) in float32, and quiet audio is raised to ``target_dbfs`` (-30 dBFS);
   louder audio is left unchanged.
2. ``trim_long_silences``: the waveform is cut to a whole number of 30 ms windows, converted
   to 16-bit PCM, and each window is classified by the WebRTC VAD (aggressiveness 3). The
   decisions are smoothed with a centred moving average over 8 windows (zero padded, 3 before
   and 4 after, rounded half to even, so 4 of 8 is silence), dilated by 3 windows each side
   (a 7-window structuring element, ``vad_max_silence_windows + 1``, aligned as scipy's
   ``binary_dilation``), and the samples of the
   windows left unvoiced are removed.

Defects fixed: silent input (RMS 0) made upstream divide by zero and return NaN samples; here
it raises. Samples beyond full scale after the gain wrapped around when cast to int16; here
they are clipped before the cast (only the VAD sees the int16 copy). Audio in which the VAD
finds no speech became an empty waveform (and a NaN embedding); here it raises.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from voicehub.architectures.errors import NoSpeechFoundError
from voicehub.architectures.ge2e.config import GE2EConfig
from voicehub.core import AudioError, import_optional

INT16_MAX = 2**15 - 1
"""Full scale used for the dBFS measurement and the PCM conversion (as resemblyzer: 32767)."""


def normalize_volume(samples: npt.NDArray[np.float32], target_dbfs: float) -> npt.NDArray[np.float32]:
    """Raise quiet audio to ``target_dbfs`` RMS; never lower it.

    Args:
        samples: float32 (num_samples,) in [-1, 1].
        target_dbfs: target RMS level in dB relative to full scale (32767).

    Returns:
        float32 (num_samples,), scaled or unchanged.

    Raises:
        AudioError: for digital silence (RMS 0), whose level is undefined.
    """
    scaled = samples * np.float32(INT16_MAX)
    gain = volume_gain(np.mean(scaled**2), target_dbfs)
    if gain is None:
        return samples
    return np.asarray(samples * gain, dtype=np.float32)


def volume_gain(mean_square: Any, target_dbfs: float) -> Any:
    """The factor :func:`normalize_volume` multiplies by, or ``None`` when it leaves the audio as it is.

    Args:
        mean_square: float32 mean of the squared samples scaled to int16 full scale (32767).
        target_dbfs: target RMS level in dBFS.

    Raises:
        AudioError: for digital silence (mean square 0).
    """
    rms = np.sqrt(np.float32(mean_square))
    if not rms > 0:
        raise AudioError(
            "GE2E: the input is digital silence (every sample is 0, RMS 0); a speaker embedding needs speech, and "
            "no option changes that: check the recording (muted input, wrong channel, empty export)"
        )
    change_db = target_dbfs - 20 * np.log10(rms / INT16_MAX)
    if change_db < 0:
        return None
    return 10 ** (change_db / 20)


def voiced_mask(samples: npt.NDArray[np.float32], config: GE2EConfig) -> npt.NDArray[np.bool_]:
    """Per-sample mask of the audio kept by the silence trimmer.

    Args:
        samples: float32 (num_samples,) at ``config.sample_rate`` Hz.
        config: VAD window, mode, smoothing and dilation settings.

    Returns:
        bool (num_windows * window_samples,): the mask for the samples up to the last whole window;
        empty when the input is shorter than one window.
    """
    webrtcvad = import_optional(
        "webrtcvad", purpose="GE2E silence trimming", install_hint="pip install webrtcvad-wheels"
    )
    rate = config.sample_rate
    window = config.vad_window_ms * rate // 1000
    num_windows = len(samples) // window
    if num_windows == 0:  # np.convolve would swap its operands on the shorter-than-kernel padding
        return np.zeros(0, dtype=bool)
    vad = webrtcvad.Vad(config.vad_mode)
    flags = window_flags(vad, samples[: num_windows * window], config)
    return np.repeat(window_mask(flags, config), window)


def window_flags(vad: Any, samples: npt.NDArray[np.float32], config: GE2EConfig) -> npt.NDArray[np.int64]:
    """WebRTC VAD decision (0/1) of each whole ``config.vad_window_ms`` window of ``samples``.

    Args:
        vad: a ``webrtcvad.Vad`` at ``config.vad_mode``.
        samples: float32 (num_windows * window_samples,) at ``config.sample_rate`` Hz.
        config: the window length and rate.

    Returns:
        int64 (num_windows,).
    """
    rate = config.sample_rate
    window = config.vad_window_ms * rate // 1000
    num_windows = len(samples) // window
    pcm = np.clip(np.round(samples[: num_windows * window] * INT16_MAX), -(2**15), INT16_MAX).astype("<i2")
    data = pcm.tobytes()
    return np.array(
        [vad.is_speech(data[i * window * 2 : (i + 1) * window * 2], rate) for i in range(num_windows)], dtype=np.int64
    )


def window_mask(flags: npt.NDArray[np.int64], config: GE2EConfig) -> npt.NDArray[np.bool_]:
    """Smooth (moving average) and dilate per-window VAD flags into the per-window keep mask.

    Args:
        flags: int64 (num_windows,) from :func:`window_flags`, at least one window.
        config: the smoothing width and the longest silence kept.

    Returns:
        bool (num_windows,).
    """
    width = config.vad_moving_average_width
    padded = np.concatenate([np.zeros((width - 1) // 2, np.int64), flags, np.zeros(width // 2, np.int64)])
    counts = np.convolve(padded, np.ones(width, np.int64), mode="valid")
    smoothed = np.round(counts / width).astype(bool)
    return dilate(smoothed, config.vad_max_silence_windows + 1)


def dilate(mask: npt.NDArray[np.bool_], size: int) -> npt.NDArray[np.bool_]:
    """Binary dilation by ``size`` ones, aligned as ``scipy.ndimage.binary_dilation`` (origin 0).

    ``out[i]`` is true when ``mask`` is true anywhere in ``[i - (size - 1 - size // 2), i + size // 2]``.

    Args:
        mask: bool (num_windows,).
        size: structuring-element length (>= 1).

    Returns:
        bool (num_windows,).
    """
    if mask.size == 0:
        return np.zeros(0, dtype=bool)
    ahead = size // 2
    behind = size - 1 - ahead
    padded = np.concatenate([np.zeros(behind, np.int64), mask.astype(np.int64), np.zeros(ahead, np.int64)])
    return np.asarray(np.convolve(padded, np.ones(size, np.int64), mode="valid") > 0)


def preprocess(samples: npt.NDArray[np.float32], config: GE2EConfig) -> npt.NDArray[np.float32]:
    """Volume-normalise and silence-trim one waveform already at ``config.sample_rate`` Hz.

    Args:
        samples: float32 (num_samples,) in [-1, 1].
        config: the encoder config (``target_dbfs``, ``trim_silence`` and the VAD settings).

    Returns:
        float32 (num_kept_samples,).

    Raises:
        AudioError: for digital silence (no option helps).
        NoSpeechFoundError: (an ``AudioError``) when the VAD finds no speech at all, including audio
            shorter than one VAD window (pass a config with ``trim_silence=False`` to embed such
            audio anyway).
    """
    wav = np.asarray(samples, dtype=np.float32)
    if config.target_dbfs is not None:
        wav = normalize_volume(wav, config.target_dbfs)
    if not config.trim_silence:
        return wav
    mask = voiced_mask(wav, config)
    kept = wav[: mask.shape[0]][mask]
    if kept.size == 0:
        window_s = config.vad_window_ms / 1000
        raise NoSpeechFoundError(
            f"GE2E: the WebRTC VAD found no speech in {len(wav) / config.sample_rate:.3f} s of audio "
            f"(it judges whole {window_s * 1000:g} ms windows); expected speech, at least a second of it; "
            f"fix: pass speech, or switch silence trimming off (trim_silence=False) to embed the audio as it is"
        )
    return np.ascontiguousarray(kept)


__all__ = ["INT16_MAX", "dilate", "normalize_volume", "preprocess", "voiced_mask"]
