"""The STFT mel-spectrogram front end as a torch module (:class:`MelSpectrogram`).

The mel scales, the filter-bank math and :class:`MelSpectrogramConfig` live in
:mod:`voicehub.components.mel_scale`, which imports no torch (configs that nest this front end's
config stay light).
"""

from __future__ import annotations

import torch
from torch import nn

from voicehub.components.mel_scale import MelSpectrogramConfig, hz_to_mel, mel_filter_bank, mel_to_hz
from voicehub.core import AudioError


class MelSpectrogram(nn.Module):
    """STFT (periodic Hann window) -> power or magnitude -> mel filters -> optional log.

    The window and the filter bank are non-persistent buffers: they are computed from the
    config and never stored in a checkpoint.
    """

    window: torch.Tensor
    filters: torch.Tensor

    def __init__(self, config: MelSpectrogramConfig | None = None) -> None:
        super().__init__()
        self.config = config or MelSpectrogramConfig()
        cfg = self.config
        window = torch.hann_window(cfg.win_length, periodic=True, dtype=torch.float32)
        left = (cfg.n_fft - cfg.win_length) // 2
        window = nn.functional.pad(window, (left, cfg.n_fft - cfg.win_length - left))
        self.register_buffer("window", window, persistent=False)
        bank = mel_filter_bank(
            sample_rate=cfg.sample_rate,
            n_fft=cfg.n_fft,
            num_mel_bins=cfg.num_mel_bins,
            f_min=cfg.f_min,
            f_max=cfg.f_max,
            scale=cfg.mel_scale,
            norm=cfg.mel_norm,
        )
        self.register_buffer("filters", torch.from_numpy(bank), persistent=False)

    def forward(self, waveform: torch.Tensor) -> torch.Tensor:
        """Compute mel features.

        Args:
            waveform: float tensor (batch, num_samples) at ``config.sample_rate`` Hz.

        Returns:
            float tensor (batch, num_frames, num_mel_bins); ``num_frames`` is
            :meth:`MelSpectrogramConfig.num_frames` of ``num_samples``.

        Raises:
            AudioError: for an input that is not 2-D or is shorter than one frame.
        """
        cfg = self.config
        if waveform.ndim != 2:
            raise AudioError(f"MelSpectrogram expects waveform (batch, num_samples), got {tuple(waveform.shape)}")
        if not cfg.center and waveform.shape[1] < cfg.n_fft:
            raise AudioError(
                f"MelSpectrogram needs at least n_fft={cfg.n_fft} samples without centring, got {waveform.shape[1]}"
            )
        spec = torch.stft(
            waveform,
            n_fft=cfg.n_fft,
            hop_length=cfg.hop_length,
            window=self.window.to(waveform.dtype),
            center=cfg.center,
            pad_mode="constant",
            return_complex=True,
        ).abs()
        if cfg.power != 1.0:
            spec = spec.pow(cfg.power)
        mel = torch.matmul(self.filters.to(spec.dtype), spec).transpose(1, 2)
        if cfg.log:
            mel = torch.log(mel + cfg.log_floor)
        return mel


__all__ = ["MelSpectrogram", "MelSpectrogramConfig", "hz_to_mel", "mel_filter_bank", "mel_to_hz"]
