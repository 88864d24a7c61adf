"""The decoding features faster-whisper users reach for, against faster-whisper 1.2.1 on the same weights.

``prefix``, ``hotwords``, ``repetition_penalty``, ``no_repeat_ngram_size`` and ``suppress_tokens`` on
the five LibriVox clips; ``clip_timestamps`` and ``hallucination_silence_threshold`` in the sequential
seek over the 60 s file. Each option must change what tiny.en writes somewhere (so the comparison
can tell an option applied from one ignored) and give faster-whisper's text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub.architectures.errors import DecodingOptionError
from voicehub.architectures.whisper import DecodingOptions, WhisperTranscriber
from voicehub.architectures.whisper.decoding import forbid_repeated_ngrams, penalise_repetitions
from voicehub.core import load_audio

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
LIBRIVOX = sorted((DATA / "librivox").glob("*.wav"))
LONG_FILE = DATA / "silero" / "test.wav"


@pytest.fixture(scope="module")
def tiny(whisper_tiny) -> WhisperTranscriber:  # type: ignore[no-untyped-def]
    return WhisperTranscriber(whisper_tiny.model, whisper_tiny.tokenizer, whisper_tiny.generation)


@pytest.fixture(scope="module")
def oracle(whisper_tiny_dir: Path):  # type: ignore[no-untyped-def]
    from faster_whisper import WhisperModel

    return WhisperModel(str(whisper_tiny_dir), device="cpu", compute_type="float32", cpu_threads=1)


@pytest.fixture(scope="module")
def clips() -> list[np.ndarray]:
    return [load_audio(path, target_sample_rate=16000).samples for path in LIBRIVOX]


def _ours(tiny: WhisperTranscriber, clip: np.ndarray, **options: object) -> list[str]:
    """The segments' texts (a banned n-gram can move a word into a new segment and leave the text as it was)."""
    return [s.text.strip() for s in tiny.transcribe(clip, DecodingOptions(language="en", **options)).segments]  # type: ignore[arg-type]


def _theirs(oracle, clip: np.ndarray, **options: object) -> list[str]:  # type: ignore[no-untyped-def]
    segments, _ = oracle.transcribe(clip, language="en", **options)
    return [segment.text.strip() for segment in segments]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "beam_size"),
    [
        ({"prefix": "And Mr. John"}, 5),  # greedy: 0880 differs after the prefix ("John Mann" / "John's name")
        ({"hotwords": "Dashwood prudently"}, 1),
        ({"repetition_penalty": 1.5}, 1),
        ({"repetition_penalty": 1.5}, 5),
        ({"no_repeat_ngram_size": 2}, 1),
        ({"suppress_tokens": ()}, 1),
    ],
    ids=["prefix", "hotwords", "repetition-penalty", "repetition-penalty-beam", "no-repeat-ngram", "no-suppress"],
)
def test_option_changes_the_transcripts_as_faster_whisper_does(
    tiny: WhisperTranscriber,
    oracle,
    clips: list[np.ndarray],
    options: dict[str, object],
    beam_size: int,  # type: ignore[no-untyped-def]
) -> None:
    theirs_options = {k: list(v) if isinstance(v, tuple) else v for k, v in options.items()}
    ours = [_ours(tiny, clip, beam_size=beam_size, **options) for clip in clips]
    theirs = [_theirs(oracle, clip, beam_size=beam_size, **theirs_options) for clip in clips]
    plain = [_theirs(oracle, clip, beam_size=beam_size) for clip in clips]
    assert ours == theirs
    if "suppress_tokens" not in options:  # tiny.en writes no non-speech symbol on these clips either way
        assert ours != plain, "the option changed nothing on these clips: the comparison cannot tell"


@pytest.mark.slow
def test_clip_timestamps_transcribe_only_the_stretches_asked_for(tiny: WhisperTranscriber, oracle) -> None:  # type: ignore[no-untyped-def]
    audio = load_audio(LONG_FILE, target_sample_rate=16000).samples
    ours = tiny.transcribe(audio, DecodingOptions(language="en", clip_timestamps=(10.0, 25.0, 40.0)))
    segments, _ = oracle.transcribe(audio, language="en", beam_size=1, clip_timestamps=[10.0, 25.0, 40.0])
    theirs = list(segments)
    assert [s.text for s in ours.segments] == [s.text for s in theirs]
    assert [s.start_s for s in ours.segments] == pytest.approx([s.start for s in theirs], abs=0.02)
    assert ours.segments[0].start_s == 10.0 and all(not 25.0 <= s.start_s < 40.0 for s in ours.segments)


@pytest.mark.slow
def test_hallucination_silence_threshold_keeps_the_words_before_a_window_end(tiny: WhisperTranscriber, oracle) -> None:  # type: ignore[no-untyped-def]
    """openai-whisper's rule, as faster-whisper applies it: "And this spills" (29.3-30.0 s) is kept."""
    audio = load_audio(LONG_FILE, target_sample_rate=16000).samples
    options = {"word_timestamps": True, "hallucination_silence_threshold": 1.0}
    ours = tiny.transcribe(audio, DecodingOptions(language="en", **options))  # type: ignore[arg-type]
    segments, _ = oracle.transcribe(audio, language="en", beam_size=1, **options)
    assert [s.text.strip() for s in ours.segments] == [s.text.strip() for s in segments]
    assert "And this spills over into normative arguments" in ours.text


def test_repetition_penalty_divides_positive_and_multiplies_negative_logits_of_earlier_tokens() -> None:
    logits = torch.tensor([[2.0, -2.0, 4.0, 1.0], [2.0, -2.0, 4.0, 1.0]])
    penalise_repetitions(logits, [[0, 1, 0], []], 2.0)
    assert logits.tolist() == [[1.0, -4.0, 4.0, 1.0], [2.0, -2.0, 4.0, 1.0]]


def test_no_repeat_ngram_forbids_the_token_that_would_complete_an_earlier_ngram() -> None:
    logits = torch.zeros(2, 6)
    forbid_repeated_ngrams(logits, [[1, 2, 3, 1, 2], [1, 2, 3]], 3)  # 1 2 -> 3 seen: 3 is forbidden
    assert torch.isinf(logits[0]).nonzero().flatten().tolist() == [3]
    assert not torch.isinf(logits[1]).any()  # "3" is not followed by anything yet


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"repetition_penalty": 0.0}, "repetition_penalty"),
        ({"no_repeat_ngram_size": -1}, "no_repeat_ngram_size"),
        ({"suppress_tokens": (-2,)}, "suppress_tokens"),
        ({"suppress_tokens": [1, 2]}, "suppress_tokens"),
        ({"clip_timestamps": (5.0, 2.0)}, "clip_timestamps"),
        ({"hallucination_silence_threshold": 2.0}, "hallucination_silence_threshold"),
        ({"prefix": 3}, "prefix"),
    ],
)
def test_bad_feature_options_are_refused_naming_the_option(options: dict[str, object], field: str) -> None:
    with pytest.raises(DecodingOptionError, match=field):
        DecodingOptions(**options)  # type: ignore[arg-type]


def test_suppress_tokens_beyond_the_vocabulary_are_refused(tiny: WhisperTranscriber) -> None:
    with pytest.raises(DecodingOptionError, match="vocabulary size 51864"):
        tiny.decoder.suppressed(DecodingOptions(suppress_tokens=(60000,)))
