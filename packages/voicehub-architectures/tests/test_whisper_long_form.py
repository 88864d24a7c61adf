"""Sequential long-form transcription (the reference 30 s seek) on 60 s of real speech, with word timestamps.

Reference: openai-whisper's ``transcribe`` (word timestamps on, the same alignment heads) on the
tiny.en checkpoint exported by the adapter. The file (``tests/data/silero/test.wav``) is 60 s of
English speech: three 30 s windows whose borders fall inside sentences.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from voicehub.architectures.whisper import (
    DecodingOptions,
    WhisperTranscriber,
    WhisperTranscript,
    export_openai_checkpoint,
)
from voicehub.core import load_audio

SPEECH_60S = Path(__file__).resolve().parents[3] / "tests" / "data" / "silero" / "test.wav"


@pytest.fixture(scope="module")
def runs(whisper_tiny, tmp_path_factory: pytest.TempPathFactory) -> tuple[WhisperTranscript, dict[str, object]]:
    whisper = pytest.importorskip("whisper")
    samples = load_audio(SPEECH_60S, target_sample_rate=16000).samples
    transcriber = WhisperTranscriber(whisper_tiny.model, whisper_tiny.tokenizer, whisper_tiny.generation)
    mine = transcriber.transcribe(samples, DecodingOptions(word_timestamps=True))
    path = export_openai_checkpoint(whisper_tiny.model, tmp_path_factory.mktemp("oracle") / "tiny.en.pt")
    oracle = whisper.load_model(str(path), device="cpu")
    heads = torch.zeros(4, 6, dtype=torch.bool)
    for layer, head in whisper_tiny.generation.alignment_heads:
        heads[layer, head] = True
    oracle.register_buffer("alignment_heads", heads.to_sparse(), persistent=False)
    reference = oracle.transcribe(samples, fp16=False, language="en", word_timestamps=True)
    return mine, reference


@pytest.mark.slow
def test_long_form_segments_and_words_equal_openai_whisper(runs) -> None:
    mine, reference = runs
    expected_segments = [s for s in reference["segments"] if s["text"].strip()]
    assert [s.text for s in mine.segments] == [s["text"] for s in expected_segments]
    for segment, expected in zip(mine.segments, expected_segments, strict=True):
        assert segment.start_s == pytest.approx(expected["start"], abs=1e-6)
        assert segment.end_s == pytest.approx(expected["end"], abs=1e-6)
    expected_words = [w for s in expected_segments for w in s["words"]]
    assert [w.text for w in mine.words] == [w["word"] for w in expected_words]  # nothing lost or doubled
    shifts = [
        max(abs(w.start_s - e["start"]), abs(w.end_s - e["end"]))
        for w, e in zip(mine.words, expected_words, strict=True)
    ]
    assert max(shifts) <= 0.02 + 1e-9  # a zero-length reference word borrows one 20 ms step
    assert mine.duration_s == 60.0 and mine.segments[-1].end_s <= 60.0
    assert len(mine.words) > 100


@pytest.mark.slow
def test_long_form_timestamps_are_strictly_increasing(runs) -> None:
    mine, _ = runs
    segments = mine.segments
    assert all(s.start_s < s.end_s for s in segments)
    assert all(a.start_s < b.start_s and a.end_s <= b.start_s for a, b in itertools.pairwise(segments))
    words = mine.words
    assert all(w.start_s < w.end_s for w in words)
    assert all(a.start_s < b.start_s and a.end_s <= b.start_s for a, b in itertools.pairwise(words))
    for segment in segments:
        assert all(segment.start_s <= w.start_s and w.end_s <= segment.end_s for w in segment.words)
