"""voicehub.components: reusable PyTorch blocks shared by several architectures.

* :mod:`.mel_scale`: mel scales, mel filter banks and :class:`MelSpectrogramConfig` (no torch);
* :mod:`.filterbank`: the STFT mel-spectrogram front end (:class:`MelSpectrogram`);
* :mod:`.res2net`: TDNN, Res2Net, squeeze-excitation and SE-Res2Net blocks (x-vectors, ECAPA);
* :mod:`.pooling`: statistics and attentive statistics pooling.

Importing this package imports no torch: each name loads its module on first access, so a
config that nests :class:`MelSpectrogramConfig` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicehub.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from voicehub.components.filterbank import MelSpectrogram
    from voicehub.components.mel_scale import MelSpectrogramConfig, hz_to_mel, mel_filter_bank, mel_to_hz
    from voicehub.components.pooling import AttentiveStatisticsPooling, StatisticsPooling, frame_mask
    from voicehub.components.res2net import Res2NetBlock1d, SERes2NetBlock, SqueezeExcitation1d, TDNNBlock

_LAZY = {
    "AttentiveStatisticsPooling": "pooling",
    "MelSpectrogram": "filterbank",
    "MelSpectrogramConfig": "mel_scale",
    "Res2NetBlock1d": "res2net",
    "SERes2NetBlock": "res2net",
    "SqueezeExcitation1d": "res2net",
    "StatisticsPooling": "pooling",
    "TDNNBlock": "res2net",
    "frame_mask": "pooling",
    "hz_to_mel": "mel_scale",
    "mel_filter_bank": "mel_scale",
    "mel_to_hz": "mel_scale",
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    "AttentiveStatisticsPooling",
    "MelSpectrogram",
    "MelSpectrogramConfig",
    "Res2NetBlock1d",
    "SERes2NetBlock",
    "SqueezeExcitation1d",
    "StatisticsPooling",
    "TDNNBlock",
    "frame_mask",
    "hz_to_mel",
    "mel_filter_bank",
    "mel_to_hz",
]
