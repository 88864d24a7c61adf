"""Mel front end against librosa (the reference GE2E's resemblyzer uses), pooling and SE-Res2Net masking."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub.components import (
    AttentiveStatisticsPooling,
    MelSpectrogram,
    MelSpectrogramConfig,
    SERes2NetBlock,
    StatisticsPooling,
    hz_to_mel,
    mel_filter_bank,
    mel_to_hz,
)
from voicehub.core import AudioError, ConfigError, load_audio

ROOT = Path(__file__).resolve().parents[3]
WAV = ROOT / "tests" / "data" / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav"


def test_slaney_mel_scale_break_points() -> None:
    assert float(hz_to_mel(1000.0)) == pytest.approx(15.0)
    assert float(hz_to_mel(6400.0)) == pytest.approx(42.0)  # 15 + 27 mels per factor 6.4
    assert float(hz_to_mel(1000.0, scale="htk")) == pytest.approx(999.9855, abs=1e-3)
    grid = np.array([0.0, 440.0, 1000.0, 7999.0])
    np.testing.assert_allclose(mel_to_hz(hz_to_mel(grid)), grid, rtol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "librosa_kwargs"),
    [
        ({"sample_rate": 16000, "n_fft": 400, "num_mel_bins": 40}, {"sr": 16000, "n_fft": 400, "n_mels": 40}),
        (
            {
                "sample_rate": 16000,
                "n_fft": 512,
                "num_mel_bins": 80,
                "f_min": 20.0,
                "f_max": 7600.0,
                "scale": "htk",
                "norm": None,
            },
            {"sr": 16000, "n_fft": 512, "n_mels": 80, "fmin": 20.0, "fmax": 7600.0, "htk": True, "norm": None},
        ),
    ],
)
def test_filter_bank_matches_librosa(kwargs: dict[str, object], librosa_kwargs: dict[str, object]) -> None:
    librosa = pytest.importorskip("librosa")
    ours = mel_filter_bank(**kwargs)  # type: ignore[arg-type]
    np.testing.assert_allclose(ours, librosa.filters.mel(**librosa_kwargs), rtol=0, atol=1e-8)


def test_power_mel_spectrogram_matches_librosa_on_real_speech() -> None:
    librosa = pytest.importorskip("librosa")
    wav = load_audio(WAV).samples
    reference = librosa.feature.melspectrogram(y=wav, sr=16000, n_fft=400, hop_length=160, n_mels=40).T
    ours = MelSpectrogram(MelSpectrogramConfig(num_mel_bins=40))(torch.from_numpy(wav)[None])[0].numpy()
    assert ours.shape == reference.shape == (MelSpectrogramConfig().num_frames(len(wav)), 40)
    np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-6 * float(reference.max()))


def test_front_end_buffers_are_not_saved_and_bad_input_raises() -> None:
    module = MelSpectrogram()
    assert module.state_dict() == {}
    with pytest.raises(AudioError, match=r"\(batch, num_samples\), got \(16000,\)"):
        module(torch.zeros(16000))
    with pytest.raises(ConfigError, match="win_length"):
        MelSpectrogramConfig(win_length=600, n_fft=512)


def test_statistics_pooling_ignores_padded_frames() -> None:
    x = torch.randn(1, 4, 10)
    padded = torch.cat([x, 100 * torch.ones(1, 4, 5)], dim=2)
    pool = StatisticsPooling()
    expected = torch.cat([x.mean(dim=2), x.std(dim=2, unbiased=False)], dim=1)
    assert torch.allclose(pool(padded, torch.tensor([10])), expected, atol=1e-6)
    attentive = AttentiveStatisticsPooling(4, 8).eval()
    assert torch.allclose(attentive(padded, torch.tensor([10])), attentive(x), atol=1e-6)
    with pytest.raises(AudioError, match="lengths"):
        pool(padded, torch.tensor([16]))


def test_se_res2net_block_with_mask_equals_unpadded_run() -> None:
    torch.manual_seed(0)
    block = SERes2NetBlock(16, kernel_size=3, dilation=2, scale=4, se_bottleneck=4).eval()
    x = torch.randn(1, 16, 30)
    padded = torch.cat([x, torch.randn(1, 16, 7)], dim=2)
    mask = torch.cat([torch.ones(1, 1, 30), torch.zeros(1, 1, 7)], dim=2)
    out = block(padded * mask, mask)
    assert torch.allclose(out[:, :, :30], block(x), atol=1e-5)
    assert out[:, :, 30:].abs().max() == 0
