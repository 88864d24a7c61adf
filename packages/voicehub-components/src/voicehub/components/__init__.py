"""voicehub.components: reusable PyTorch blocks shared by several architectures.

* :mod:`.filterbank`: mel filter banks and the STFT mel-spectrogram front end;
* :mod:`.res2net`: TDNN, Res2Net, squeeze-excitation and SE-Res2Net blocks (x-vectors, ECAPA);
* :mod:`.pooling`: statistics and attentive statistics pooling.
"""

from __future__ import annotations

from voicehub.components.filterbank import MelSpectrogram, MelSpectrogramConfig, hz_to_mel, mel_filter_bank, mel_to_hz
from voicehub.components.pooling import AttentiveStatisticsPooling, StatisticsPooling, frame_mask
from voicehub.components.res2net import Res2NetBlock1d, SERes2NetBlock, SqueezeExcitation1d, TDNNBlock

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
