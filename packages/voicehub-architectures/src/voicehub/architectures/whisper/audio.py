"""Whisper's log-mel front end (upstream: openai/whisper ``audio.py``, ``log_mel_spectrogram``).

    waveform (16 kHz) -> STFT: periodic Hann window of 400 samples, hop 160, centred frames with
    reflect padding -> drop the last frame -> power |X|^2 -> Slaney mel filters (80 or 128 bins,
    0-8 kHz, equal-area) -> log10(max(., 1e-10)) -> max(., peak - 8) -> (. + 4) / 4

The peak is taken over the whole input of one call per row (one file, or one window): the values
sit in about [-1.5, 1.5]. The mel filters are computed (:func:`voicehub.components.filterbank.mel_filter_bank`,
the librosa/Slaney construction upstream saved to ``mel_filters.npz``); nothing is downloaded.

Long inputs are framed in blocks of 30 s, so the complex STFT never needs more than one block of
memory; the result equals one ``torch.stft`` call over the whole signal.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from voicehub.architectures.whisper.config import HOP_LENGTH, N_FFT, SAMPLE_RATE, WINDOW_NUM_FRAMES, WINDOW_NUM_SAMPLES
from voicehub.components.filterbank import mel_filter_bank
from voicehub.core.errors import AudioError

LOG_FLOOR = 1e-10
"""Mel power below this is clamped before the logarithm."""

DYNAMIC_RANGE = 8.0
"""Log10 units kept below the peak (80 dB)."""

BLOCK_NUM_FRAMES = WINDOW_NUM_FRAMES
"""Frames computed per STFT block (30 s)."""


@functools.lru_cache(maxsize=4)
def mel_filters(num_mel_bins: int) -> Tensor:
    """Slaney mel filters over the 201 bins of a 400-point FFT at 16 kHz: float32 (num_mel_bins, 201)."""
    bank = mel_filter_bank(sample_rate=SAMPLE_RATE, n_fft=N_FFT, num_mel_bins=num_mel_bins, scale="slaney")
    return torch.from_numpy(np.ascontiguousarray(bank))


@functools.lru_cache(maxsize=1)
def _hann_window() -> Tensor:
    return torch.hann_window(N_FFT, periodic=True, dtype=torch.float32)


def as_waveform_batch(waveform: Tensor | np.ndarray) -> Tensor:
    """Return a float32 CPU tensor (batch, num_samples) from a 1-D or 2-D array, refusing anything else.

    Raises:
        AudioError: for another rank, a non-floating dtype, or non-finite samples.
    """
    tensor = torch.as_tensor(waveform)
    if tensor.ndim == 1:
        tensor = tensor[None]
    if tensor.ndim != 2 or not tensor.is_floating_point():
        raise AudioError(
            f"expected a float waveform (num_samples,) or (batch, num_samples) at {SAMPLE_RATE} Hz, "
            f"got {tuple(tensor.shape)} {tensor.dtype}"
        )
    tensor = tensor.to(torch.float32)
    if not bool(torch.isfinite(tensor).all()):
        raise AudioError("waveform contains NaN or infinite samples")
    return tensor


def log_mel_spectrogram(
    waveform: Tensor | np.ndarray, num_mel_bins: int = 80, *, padding_num_samples: int = 0
) -> Tensor:
    """The reference normalised log-mel spectrogram.

    Args:
        waveform: float (num_samples,) or (batch, num_samples), mono, in [-1, 1], at 16000 Hz.
        num_mel_bins: 80, or 128 for large-v3 (any positive count works; the filters are computed).
        padding_num_samples: zeros appended on the right before the STFT (the long-form
            algorithm appends 30 s so that its last window is full).

    Returns:
        float32 (batch, num_mel_bins, num_frames) with ``num_frames = (num_samples + padding) // 160``
        (one frame per 10 ms), on the CPU.

    Raises:
        AudioError: for a waveform of another rank or dtype, non-finite samples, or no samples at all.
    """
    audio = as_waveform_batch(waveform)
    if padding_num_samples > 0:
        audio = F.pad(audio, (0, padding_num_samples))
    num_samples = audio.shape[1]
    if num_samples <= N_FFT // 2:
        raise AudioError(f"log-mel needs more than {N_FFT // 2} samples, got {num_samples}")
    num_frames = num_samples // HOP_LENGTH
    padded = F.pad(audio[:, None], (N_FFT // 2, N_FFT // 2), mode="reflect")[:, 0]
    filters = mel_filters(num_mel_bins)
    window = _hann_window()
    blocks = []
    for first in range(0, num_frames, BLOCK_NUM_FRAMES):
        count = min(BLOCK_NUM_FRAMES, num_frames - first)
        segment = padded[:, first * HOP_LENGTH : (first + count - 1) * HOP_LENGTH + N_FFT]
        spectrum = torch.stft(segment, N_FFT, HOP_LENGTH, window=window, center=False, return_complex=True)
        power = spectrum.real.square() + spectrum.imag.square()
        blocks.append(torch.clamp(filters @ power, min=LOG_FLOOR).log10())
    log_spec = torch.cat(blocks, dim=2) if len(blocks) > 1 else blocks[0]
    peak = log_spec.amax(dim=(1, 2), keepdim=True)
    log_spec = torch.maximum(log_spec, peak - DYNAMIC_RANGE)
    return (log_spec + 4.0) / 4.0


def pad_or_trim_frames(mel: Tensor, num_frames: int = WINDOW_NUM_FRAMES) -> Tensor:
    """Cut or zero-pad the last axis of a log-mel to ``num_frames`` frames (upstream ``pad_or_trim``)."""
    if mel.shape[-1] > num_frames:
        return mel[..., :num_frames]
    if mel.shape[-1] < num_frames:
        return F.pad(mel, (0, num_frames - mel.shape[-1]))
    return mel


def window_log_mel(waveforms: list[Tensor], num_mel_bins: int) -> Tensor:
    """Log-mel windows of up to 30 s of audio each, as the reference prepares a file of at most 30 s.

    Each window is normalised on its own (its own peak); its ``num_samples // 160`` frames of audio
    are kept and the rest of the 3000 frames is zero in the normalised domain (openai/whisper's
    ``transcribe`` and faster-whisper both cut the content frames and pad them with zeros).

    Args:
        waveforms: float32 (num_samples,) tensors, each at most 480000 samples (30 s at 16 kHz).
        num_mel_bins: mel bins of the checkpoint.

    Returns:
        float32 (windows, num_mel_bins, 3000).

    Raises:
        AudioError: for a waveform longer than 30 s.
    """
    batch = torch.zeros(len(waveforms), WINDOW_NUM_SAMPLES + N_FFT)
    content = torch.zeros(len(waveforms), 1, WINDOW_NUM_FRAMES, dtype=torch.bool)
    for row, samples in enumerate(waveforms):
        if samples.shape[-1] > WINDOW_NUM_SAMPLES:
            raise AudioError(
                f"window {row} holds {samples.shape[-1]} samples, more than 30 s ({WINDOW_NUM_SAMPLES} at "
                f"{SAMPLE_RATE} Hz); cut long audio into windows first or use the long-form transcriber"
            )
        batch[row, : samples.shape[-1]] = samples
        content[row, :, : samples.shape[-1] // HOP_LENGTH] = True
    mel = log_mel_spectrogram(batch, num_mel_bins)[..., :WINDOW_NUM_FRAMES]
    return mel.masked_fill_(~content, 0.0)


__all__ = [
    "BLOCK_NUM_FRAMES",
    "DYNAMIC_RANGE",
    "LOG_FLOOR",
    "as_waveform_batch",
    "log_mel_spectrogram",
    "mel_filters",
    "pad_or_trim_frames",
    "window_log_mel",
]
