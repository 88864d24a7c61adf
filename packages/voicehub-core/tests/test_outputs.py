"""Normalized outputs enforce their invariants."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from voicehub.core import (
    ASROutput,
    ASRSegment,
    ASRWord,
    OutputValidationError,
    SpeakerOutput,
    SpeechSegment,
    TTSOutput,
    VADOutput,
    VerificationOutput,
    check_output,
    load_audio,
)


def _segment(start: int, end: int) -> SpeechSegment:
    return SpeechSegment.from_samples(start, end, 16000, score=0.9)


def test_vad_segments_carry_seconds_and_sample_bounds() -> None:
    segment = _segment(1600, 48000)
    assert (segment.start_s, segment.end_s, segment.duration_s) == (0.1, 3.0, pytest.approx(2.9))
    output = VADOutput(segments=(segment,), duration_s=3.0, sample_rate=16000)
    assert output.speech_duration_s == pytest.approx(2.9)
    assert output.contains(1.0) and not output.contains(0.05)


def test_vad_output_rejects_unordered_overlapping_or_late_segments() -> None:
    with pytest.raises(OutputValidationError, match="ordered and non-overlapping"):
        VADOutput(segments=(_segment(16000, 32000), _segment(8000, 12000)), duration_s=3, sample_rate=16000)
    with pytest.raises(OutputValidationError, match="ordered and non-overlapping"):
        VADOutput(segments=(_segment(0, 16000), _segment(15000, 20000)), duration_s=3, sample_rate=16000)
    with pytest.raises(OutputValidationError, match="after the audio's duration"):
        VADOutput(segments=(_segment(0, 64000),), duration_s=3.0, sample_rate=16000)
    with pytest.raises(OutputValidationError, match="must be after start_s"):
        SpeechSegment(start_s=1.0, end_s=1.0, start_sample=16000, end_sample=16001)
    with pytest.raises(OutputValidationError, match=r"score must be in \[0, 1\]"):
        SpeechSegment.from_samples(0, 10, 16000, score=1.5)


def test_vad_probabilities_need_a_frame_duration_and_valid_range() -> None:
    with pytest.raises(OutputValidationError, match="frame_duration_s"):
        VADOutput(segments=(), duration_s=1.0, sample_rate=16000, probabilities=np.zeros(3, dtype=np.float32))
    with pytest.raises(OutputValidationError, match=r"in \[0, 1\]"):
        VADOutput(
            segments=(),
            duration_s=1.0,
            sample_rate=16000,
            probabilities=np.array([0.2, 1.2], dtype=np.float32),
            frame_duration_s=0.032,
        )


def test_rttm_lines_follow_the_nist_layout() -> None:
    output = VADOutput(
        segments=(_segment(1600, 48000), _segment(56000, 64000)),
        duration_s=4.0,
        sample_rate=16000,
        source="/data/my clip.wav",
    )
    assert output.to_rttm() == (
        "SPEAKER my_clip 1 0.100 2.900 <NA> <NA> speech <NA> <NA>\n"
        "SPEAKER my_clip 1 3.500 0.500 <NA> <NA> speech <NA> <NA>\n"
    )


def test_metadata_must_be_strict_json() -> None:
    with pytest.raises(OutputValidationError, match="metadata must be strict JSON"):
        VADOutput(segments=(), duration_s=1.0, sample_rate=16000, metadata={"x": math.nan})


def test_asr_output_validates_times_and_confidences() -> None:
    word = ASRWord(text="go", start_s=0.1, end_s=0.3, confidence=0.9)
    segment = ASRSegment(text="go forward", start_s=0.0, end_s=1.0, words=(word,))
    output = ASROutput(text="  go forward ", segments=(segment,), duration_s=2.8)
    assert output.text == "go forward"
    with pytest.raises(OutputValidationError, match="outside its segment"):
        ASRSegment(text="x", start_s=0.5, end_s=1.0, words=(word,))
    with pytest.raises(OutputValidationError, match="confidence"):
        ASRWord(text="x", start_s=0, end_s=1, confidence=-0.1)
    with pytest.raises(OutputValidationError, match="ends after the input's duration"):
        ASROutput(text="x", segments=(segment,), duration_s=0.5)


def test_asr_segment_validates_its_decoding_details() -> None:
    segment = ASRSegment(
        text="go", start_s=0.0, end_s=1.0, tokens=[50363, 467, 50413], avg_logprob=-0.25,
        no_speech_prob=0.02, compression_ratio=0.8, temperature=0.0,
    )  # fmt: skip
    assert segment.tokens == (50363, 467, 50413)  # a list is kept as a tuple (frozen record)
    for field, value, message in (
        ("avg_logprob", math.nan, "finite"),
        ("avg_logprob", 0.5, "<= 0"),
        ("no_speech_prob", 1.5, r"in \[0, 1\]"),
        ("compression_ratio", math.inf, "finite"),
        ("temperature", -0.2, ">= 0"),
        ("tokens", (1, -2), "token ids"),
        ("tokens", (1, True), "token ids"),
    ):
        with pytest.raises(OutputValidationError, match=message):
            ASRSegment(text="x", start_s=0, end_s=1, **{field: value})  # type: ignore[arg-type]
    for value in (-0.1, 1.01, math.nan, True):
        with pytest.raises(OutputValidationError, match="language_probability"):
            ASROutput(text="x", language="en", language_probability=value)


def test_asr_output_to_dict_is_strict_json_with_the_new_fields() -> None:
    from voicehub.core import strict_json

    segment = ASRSegment(text="go", start_s=0.0, end_s=1.0, tokens=(1, 2), avg_logprob=-0.1, temperature=0.2)
    output = ASROutput(text="go", segments=(segment,), language="en", language_probability=0.75)
    document = strict_json.loads(strict_json.dumps(output.to_dict()))
    assert document["language_probability"] == 0.75  # type: ignore[index]
    assert document["segments"][0]["tokens"] == [1, 2]  # type: ignore[index]
    assert document["segments"][0]["no_speech_prob"] is None  # type: ignore[index]


def test_whisper_dict_has_openai_whispers_keys_and_word_spacing() -> None:
    words = (
        ASRWord(text="Cold", start_s=0.0, end_s=0.4, confidence=0.9),
        ASRWord(text="-hearted,", start_s=0.4, end_s=0.9),
        ASRWord(text="yes.", start_s=1.0, end_s=1.4, confidence=0.5),
    )
    first = ASRSegment(text="Cold-hearted, yes.", start_s=0.0, end_s=1.5, words=words, tokens=(1,), temperature=0.0)
    second = ASRSegment(text="No", start_s=2.5, end_s=3.0)  # a segment without words among timed ones
    output = ASROutput(text="Cold-hearted, yes. No", segments=(first, second), language="en", duration_s=3.0)
    result = output.to_whisper_dict()
    assert list(result) == ["text", "segments", "language", "language_probability", "duration", "source", "metadata"]
    segment = result["segments"][0]
    assert list(segment) == [
        "id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob", "compression_ratio",
        "no_speech_prob", "words",
    ]  # fmt: skip
    assert [s["id"] for s in result["segments"]] == [0, 1] and result["segments"][1]["seek"] == 250
    assert segment["text"] == " Cold-hearted, yes."
    assert [w["word"] for w in segment["words"]] == [" Cold", "-hearted,", " yes."]
    assert "".join(w["word"] for w in segment["words"]) == segment["text"]
    assert segment["words"][1] == {"word": "-hearted,", "start": 0.4, "end": 0.9, "probability": None}
    assert result["segments"][1]["words"] == [] and result["segments"][1]["tokens"] is None
    untimed = ASROutput(text="No", segments=(second,)).to_whisper_dict()
    assert "words" not in untimed["segments"][0]  # whisper writes words only with word timestamps


def test_tts_output_saves_a_readable_file(tmp_path: Path) -> None:
    audio = (0.1 * np.sin(2 * np.pi * 220 * np.arange(22050) / 22050)).astype(np.float32)
    output = TTSOutput(audio=audio, sample_rate=22050, text="tone")
    assert output.duration_s == 1.0
    saved = load_audio(output.save(tmp_path / "tone.wav"))
    assert saved.sample_rate == 22050
    np.testing.assert_allclose(saved.samples, audio, atol=1 / 32768)
    with pytest.raises(OutputValidationError, match="float32"):
        TTSOutput(audio=audio.astype(np.float64), sample_rate=22050)  # type: ignore[arg-type]


def test_speaker_and_verification_outputs_validate() -> None:
    output = SpeakerOutput(embedding=np.ones(256, dtype=np.float32) / 16, duration_s=2.0)
    assert output.embedding_dim == 256
    with pytest.raises(OutputValidationError, match="non-finite"):
        SpeakerOutput(embedding=np.array([np.nan], dtype=np.float32), duration_s=1.0)
    assert VerificationOutput(score=0.8, threshold=0.7, is_same_speaker=True, scoring="cosine").is_same_speaker
    with pytest.raises(OutputValidationError, match="score >= threshold"):
        VerificationOutput(score=0.6, threshold=0.7, is_same_speaker=True, scoring="cosine")


def test_check_output_names_the_producer() -> None:
    with pytest.raises(OutputValidationError, match=r"MyWrapper\._detect returned dict; expected VADOutput"):
        check_output({}, VADOutput, producer="MyWrapper._detect")
