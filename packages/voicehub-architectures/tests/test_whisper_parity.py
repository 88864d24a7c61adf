"""Layer-by-layer parity with openai-whisper (pure PyTorch, MIT) on tiny.en and real speech.

The oracle runs the OpenAI ``.pt`` that the CTranslate2 adapter's own export writes. Stated bounds
(float32, CPU), measured here at about 1e-7 for the log-mel and 0 for the encoder and logits (the
same kernels run in the same order):

* log-mel (80 bins, 30 s windows): max abs difference <= 1e-5 (values in [-1.5, 1.5]);
* mel filters, 80 and 128 bins, against upstream ``mel_filters.npz``: <= 1e-7;
* encoder output: <= 1e-4 (values up to ~13);
* first-step and teacher-forced logits: <= 1e-3 (values up to ~25).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub.architectures.whisper import export_openai_checkpoint, log_mel_spectrogram, window_log_mel
from voicehub.architectures.whisper.audio import mel_filters
from voicehub.core import load_audio

ROOT = Path(__file__).resolve().parents[3]
LIBRIVOX = sorted((ROOT / "tests" / "data" / "librivox").glob("*.wav"))

MEL_BOUND = 1e-5
FILTER_BOUND = 1e-7
ENCODER_BOUND = 1e-4
LOGITS_BOUND = 1e-3


@pytest.fixture(scope="module")
def oracle(whisper_tiny, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    whisper = pytest.importorskip("whisper")
    path = export_openai_checkpoint(whisper_tiny.model, tmp_path_factory.mktemp("oracle") / "tiny.en.pt")
    yield whisper.load_model(str(path), device="cpu")


@pytest.fixture(scope="module")
def clips() -> list[torch.Tensor]:
    return [torch.from_numpy(load_audio(p, target_sample_rate=16000).samples) for p in LIBRIVOX]


def test_mel_filters_equal_upstream_slaney_filters() -> None:
    import whisper

    with np.load(os.path.join(os.path.dirname(whisper.__file__), "assets", "mel_filters.npz")) as stored:
        for bins in (80, 128):
            assert np.abs(stored[f"mel_{bins}"] - mel_filters(bins).numpy()).max() <= FILTER_BOUND


def test_log_mel_matches_openai_whisper(clips: list[torch.Tensor]) -> None:
    import whisper

    for samples in clips:
        reference = whisper.log_mel_spectrogram(samples, 80, padding=480000)
        mine = log_mel_spectrogram(samples, 80, padding_num_samples=480000)[0]
        assert mine.shape == reference.shape
        assert (mine - reference).abs().max() <= MEL_BOUND
    long = torch.cat(clips + clips)  # > 30 s: framed in blocks, one peak for the whole file
    reference = whisper.log_mel_spectrogram(long, 128)
    assert (log_mel_spectrogram(long, 128)[0] - reference).abs().max() <= MEL_BOUND


def test_window_log_mel_is_what_openai_whisper_transcribe_feeds_the_encoder(clips: list[torch.Tensor]) -> None:
    import whisper

    windows = window_log_mel(clips, 80)
    for samples, window in zip(clips, windows, strict=True):
        mel = whisper.log_mel_spectrogram(samples, 80, padding=480000)
        content = samples.shape[0] // 160
        reference = whisper.pad_or_trim(mel[:, :content], 3000)  # upstream transcribe(): content frames + zeros
        assert (window - reference).abs().max() <= MEL_BOUND


@torch.inference_mode()
def test_encoder_and_first_step_logits_match_openai_whisper(whisper_tiny, oracle, clips) -> None:
    mel = window_log_mel(clips[:2], 80)  # two windows: batched through both graphs
    reference = oracle.encoder(mel)
    features = whisper_tiny.model.embed_audio(mel)
    assert (features - reference).abs().max() <= ENCODER_BOUND
    sot = torch.full((2, 1), whisper_tiny.tokenizer.special.sot)
    expected = oracle.logits(sot, reference)[:, 0]
    hidden, _ = whisper_tiny.model.decoder(sot, whisper_tiny.model.decoder.init_state(features))
    logits = whisper_tiny.model.decoder.logits(hidden[:, 0])
    assert (logits - expected).abs().max() <= LOGITS_BOUND
    assert torch.equal(logits.argmax(-1), expected.argmax(-1))


@torch.inference_mode()
def test_teacher_forced_logits_match_openai_whisper(whisper_tiny, oracle, clips) -> None:
    tokenizer = whisper_tiny.tokenizer
    text = " And Mr. John Dashwood had then leisure to consider how much there might be prudently"
    tokens = torch.tensor([[tokenizer.special.sot, tokenizer.special.timestamp_begin, *tokenizer.encode(text)]])
    mel = window_log_mel(clips[:1], 80)
    expected = oracle(mel, tokens)
    logits = whisper_tiny.model(mel, tokens)
    assert (logits - expected).abs().max() <= LOGITS_BOUND
