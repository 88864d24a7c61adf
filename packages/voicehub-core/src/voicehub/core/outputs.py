"""Normalized task outputs: every model returns one of these, never a provider's own type.

Times are in seconds (``*_s``), sample positions are absolute counts at the output's
``sample_rate``. Each record validates its invariants when created and raises
:class:`~voicehub.core.errors.OutputValidationError` naming the broken one.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from voicehub.core import strict_json
from voicehub.core.errors import OutputValidationError, StrictJSONError


def _finite_time(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise OutputValidationError(f"{name} must be a finite time >= 0 s, got {value!r}")


def _probability(name: str, value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0.0 <= float(value) <= 1.0):
        raise OutputValidationError(f"{name} must be in [0, 1], got {value!r}")


def _finite(name: str, value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise OutputValidationError(f"{name} must be a finite number or None, got {value!r}")


def _metadata(metadata: Mapping[str, Any]) -> None:
    try:
        strict_json.dumps(dict(metadata))
    except StrictJSONError as err:
        raise OutputValidationError(f"metadata must be strict JSON: {err}") from err


def _json_array(array: npt.NDArray[Any] | None) -> Any:
    return None if array is None else np.asarray(array).tolist()


# --------------------------------------------------------------------------- VAD
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpeechSegment:
    """One stretch of speech.

    Attributes:
        start_s: start time in seconds.
        end_s: end time in seconds, > ``start_s``.
        start_sample: first sample index at the output's sample rate.
        end_sample: one past the last sample index.
        score: mean speech probability over the segment in [0, 1], if the model has one.
    """

    start_s: float
    end_s: float
    start_sample: int
    end_sample: int
    score: float | None = None

    def __post_init__(self) -> None:
        _finite_time("start_s", self.start_s)
        _finite_time("end_s", self.end_s)
        if self.end_s <= self.start_s:
            raise OutputValidationError(f"segment end_s {self.end_s} must be after start_s {self.start_s}")
        if not (0 <= self.start_sample < self.end_sample):
            raise OutputValidationError(
                f"segment sample bounds must satisfy 0 <= start < end, got [{self.start_sample}, {self.end_sample})"
            )
        _probability("score", self.score)

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return self.end_s - self.start_s

    @classmethod
    def from_samples(
        cls, start_sample: int, end_sample: int, sample_rate: int, score: float | None = None
    ) -> SpeechSegment:
        """Build a segment from sample bounds ``[start_sample, end_sample)`` at ``sample_rate`` Hz."""
        return cls(
            start_s=start_sample / sample_rate,
            end_s=end_sample / sample_rate,
            start_sample=int(start_sample),
            end_sample=int(end_sample),
            score=score,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class VADOutput:
    """Voice activity of one input.

    Attributes:
        segments: ordered, non-overlapping speech segments within ``duration_s``.
        duration_s: length of the analysed audio in seconds.
        sample_rate: rate in Hz that the sample bounds refer to.
        probabilities: optional float32 (num_frames,) speech probability per frame.
        frame_duration_s: length of one probability frame in seconds (when probabilities are given).
        source: the input's file path or ``"array"``.
        metadata: strict-JSON model details (model type, threshold...).
    """

    segments: tuple[SpeechSegment, ...]
    duration_s: float
    sample_rate: int
    probabilities: npt.NDArray[np.float32] | None = None
    frame_duration_s: float | None = None
    source: str = "array"
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        _finite_time("duration_s", self.duration_s)
        if not isinstance(self.sample_rate, int) or self.sample_rate <= 0:
            raise OutputValidationError(f"sample_rate must be a positive int in Hz, got {self.sample_rate!r}")
        tolerance = 0.5 / self.sample_rate
        previous_end = -1.0
        for index, segment in enumerate(self.segments):
            if not isinstance(segment, SpeechSegment):
                raise OutputValidationError(f"segments[{index}] is {type(segment).__name__}, not SpeechSegment")
            if segment.start_s < previous_end:
                raise OutputValidationError(
                    f"segments must be ordered and non-overlapping: segments[{index}] starts at "
                    f"{segment.start_s} s before the previous end {previous_end} s"
                )
            if segment.end_s > self.duration_s + tolerance:
                raise OutputValidationError(
                    f"segments[{index}] ends at {segment.end_s} s, after the audio's duration {self.duration_s} s"
                )
            previous_end = segment.end_s
        if self.probabilities is not None:
            probs = self.probabilities
            if not isinstance(probs, np.ndarray) or probs.ndim != 1:
                raise OutputValidationError("probabilities must be a 1-D array (num_frames,)")
            if probs.size and (not np.isfinite(probs).all() or probs.min() < 0 or probs.max() > 1):
                raise OutputValidationError("probabilities must be finite and in [0, 1]")
            if self.frame_duration_s is None or self.frame_duration_s <= 0:
                raise OutputValidationError("frame_duration_s (> 0) is required with probabilities")
        _metadata(self.metadata)

    @property
    def speech_duration_s(self) -> float:
        """Total speech time in seconds."""
        return float(sum(s.duration_s for s in self.segments))

    def contains(self, time_s: float) -> bool:
        """Whether ``time_s`` falls inside a speech segment."""
        return any(s.start_s <= time_s < s.end_s for s in self.segments)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (probabilities as a list when present)."""
        return {
            "source": self.source,
            "duration_s": self.duration_s,
            "sample_rate": self.sample_rate,
            "segments": [s.to_dict() for s in self.segments],
            "frame_duration_s": self.frame_duration_s,
            "probabilities": _json_array(self.probabilities),
            "metadata": dict(self.metadata),
        }

    def to_rttm(self, file_id: str | None = None) -> str:
        """Render the segments as RTTM ``SPEAKER`` lines (NIST RT-09 evaluation plan, appendix A).

        Args:
            file_id: the recording id; defaults to the source file's stem.

        Returns:
            One line per segment: ``SPEAKER <file> 1 <onset> <duration> <NA> <NA> speech <NA> <NA>``.
        """
        name = file_id or (Path(self.source).stem if self.source != "array" else "array")
        name = name.replace(" ", "_")
        return "".join(
            f"SPEAKER {name} 1 {s.start_s:.3f} {s.duration_s:.3f} <NA> <NA> speech <NA> <NA>\n" for s in self.segments
        )


# --------------------------------------------------------------------------- ASR
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ASRWord:
    """One recognised word with its time span in seconds and optional confidence in [0, 1]."""

    text: str
    start_s: float
    end_s: float
    confidence: float | None = None

    def __post_init__(self) -> None:
        _finite_time("word start_s", self.start_s)
        _finite_time("word end_s", self.end_s)
        if self.end_s < self.start_s:
            raise OutputValidationError(f"word {self.text!r}: end_s {self.end_s} < start_s {self.start_s}")
        _probability("word confidence", self.confidence)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ASRSegment:
    """A stretch of recognised text with its time span in seconds.

    The decoding details (``tokens`` to ``temperature``) are those openai-whisper writes per
    segment (``whisper/transcribe.py``, ``new_segment``); ``None`` when the model has no such value
    (Moonshine has no confidences, for example).

    Attributes:
        text: the segment's text, stripped.
        start_s, end_s: its span in seconds from the start of the input.
        words: its timed words (empty unless word timestamps were asked for and the model has them).
        confidence: a score in [0, 1] (Whisper: ``exp(avg_logprob)``), if the model has one.
        language: the language code it was decoded in, if known.
        tokens: the token ids it was decoded from (Whisper: timestamp tokens included).
        avg_logprob: mean log-probability of the tokens of the decoding it came from (<= 0).
        no_speech_prob: probability in [0, 1] that its window holds no speech.
        compression_ratio: gzip compression ratio of its window's text (> 0).
        temperature: the sampling temperature it was decoded at (0 is greedy or beam search).
    """

    text: str
    start_s: float
    end_s: float
    words: tuple[ASRWord, ...] = ()
    confidence: float | None = None
    language: str | None = None
    tokens: tuple[int, ...] | None = None
    avg_logprob: float | None = None
    no_speech_prob: float | None = None
    compression_ratio: float | None = None
    temperature: float | None = None

    def __post_init__(self) -> None:
        _finite_time("segment start_s", self.start_s)
        _finite_time("segment end_s", self.end_s)
        if self.end_s < self.start_s:
            raise OutputValidationError(f"segment end_s {self.end_s} < start_s {self.start_s}")
        _probability("segment confidence", self.confidence)
        for word in self.words:
            if word.start_s < self.start_s - 1e-6 or word.end_s > self.end_s + 1e-6:
                raise OutputValidationError(
                    f"word {word.text!r} [{word.start_s}, {word.end_s}] lies outside its segment "
                    f"[{self.start_s}, {self.end_s}]"
                )
        if self.tokens is not None:
            if isinstance(self.tokens, list):
                object.__setattr__(self, "tokens", tuple(self.tokens))
            if not isinstance(self.tokens, tuple) or any(
                isinstance(t, bool) or not isinstance(t, int) or t < 0 for t in self.tokens
            ):
                raise OutputValidationError(
                    f"segment tokens must be a tuple of token ids (ints >= 0) or None, got {self.tokens!r}"
                )
        _finite("segment avg_logprob", self.avg_logprob)
        if self.avg_logprob is not None and self.avg_logprob > 1e-6:
            raise OutputValidationError(f"segment avg_logprob must be <= 0 (a log-probability), got {self.avg_logprob}")
        _probability("segment no_speech_prob", self.no_speech_prob)
        _finite("segment compression_ratio", self.compression_ratio)
        if self.compression_ratio is not None and self.compression_ratio < 0:
            raise OutputValidationError(f"segment compression_ratio must be >= 0, got {self.compression_ratio}")
        _finite("segment temperature", self.temperature)
        if self.temperature is not None and self.temperature < 0:
            raise OutputValidationError(f"segment temperature must be >= 0, got {self.temperature}")

    def spelled_words(self) -> tuple[str, ...]:
        """Each word as written in ``" " + text``: with the whitespace before it (a space if not found there).

        openai-whisper's words carry their leading space (``" He"``, ``"-hearted"``); joined, the
        words of a segment give its text back, which subtitle writers rely on.
        """
        text = " " + self.text
        cursor = 0
        spelled = []
        for word in self.words:
            found = text.find(word.text, cursor) if word.text else -1
            if found < 0 or text[cursor:found].strip():
                spelled.append(" " + word.text)  # not where expected: a space, as whisper's words start
                continue
            spelled.append(text[cursor:found] + word.text)
            cursor = found + len(word.text)
        return tuple(spelled)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ASROutput:
    """Transcript of one input.

    Attributes:
        text: the whole transcript, stripped.
        segments: time-stamped segments in order.
        language: detected or forced language code (ISO 639-1), if known.
        language_probability: the probability in [0, 1] of ``language``: 1.0 when it was given or
            the model knows one language only, the detected probability otherwise (over several
            VAD chunks: the chosen language's mean over the chunks decoded in it); ``None`` when
            there is no language.
        duration_s: length of the input in seconds.
        source: the input's file path or ``"array"``.
        metadata: strict-JSON model details.
    """

    text: str
    segments: tuple[ASRSegment, ...] = ()
    language: str | None = None
    language_probability: float | None = None
    duration_s: float | None = None
    source: str = "array"
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.text != self.text.strip():
            object.__setattr__(self, "text", self.text.strip())
        if self.duration_s is not None:
            _finite_time("duration_s", self.duration_s)
        _probability("language_probability", self.language_probability)
        previous = 0.0
        for index, segment in enumerate(self.segments):
            if segment.start_s < previous - 1e-6:
                raise OutputValidationError(f"segments[{index}] starts before the previous segment ends")
            if self.duration_s is not None and segment.end_s > self.duration_s + 1e-3:
                raise OutputValidationError(f"segments[{index}] ends after the input's duration")
            previous = segment.end_s
        _metadata(self.metadata)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: every field under its own name (``start_s``, words' ``text`` and ``confidence``).

        This is VoiceHub's own schema (``voicehub transcribe --jsonl``); :meth:`to_whisper_dict` is
        openai-whisper's (``voicehub transcribe -f json``).
        """
        return dataclasses.asdict(self) | {"metadata": dict(self.metadata)}

    def to_whisper_dict(self) -> dict[str, Any]:
        """The result dict of openai-whisper's ``transcribe`` (``whisper/transcribe.py``, v20250625), strict JSON.

        Keys: ``text``, ``segments`` and ``language`` as openai-whisper returns them, each segment
        with ``id`` (its index), ``seek``, ``start``, ``end`` (seconds), ``text``, ``tokens``,
        ``temperature``, ``avg_logprob``, ``compression_ratio``, ``no_speech_prob``, and ``words``
        (``{word, start, end, probability}``) only when the output has timed words, so that
        whisper's own writers (``whisper.utils.WriteSRT``...) read it as they read their own.
        Added, not substituted: ``language_probability``, ``duration`` (seconds), ``source``,
        ``metadata``.

        Differences from openai-whisper's values, for the same meaning:

        * ``seek`` is the segment's start in 10 ms mel frames (openai-whisper gives the start of
          the 30 s window that decoded it; no writer reads it);
        * a segment's ``text`` starts with one space, as openai-whisper writes it for languages
          written with spaces (VoiceHub joins segments with a space for every language), and
          each word's ``word`` carries the whitespace before it in that text (so the words of a
          segment join back into its text);
        * a value the model does not have (Moonshine's ``tokens``, ``avg_logprob``...; a word's
          ``probability``) is ``null``.
        """
        has_words = any(segment.words for segment in self.segments)
        segments = []
        for index, segment in enumerate(self.segments):
            record: dict[str, Any] = {
                "id": index,
                "seek": round(segment.start_s * 100),
                "start": segment.start_s,
                "end": segment.end_s,
                "text": " " + segment.text,
                "tokens": None if segment.tokens is None else list(segment.tokens),
                "temperature": segment.temperature,
                "avg_logprob": segment.avg_logprob,
                "compression_ratio": segment.compression_ratio,
                "no_speech_prob": segment.no_speech_prob,
            }
            if has_words:
                record["words"] = [
                    {"word": spelled, "start": word.start_s, "end": word.end_s, "probability": word.confidence}
                    for word, spelled in zip(segment.words, segment.spelled_words(), strict=True)
                ]
            segments.append(record)
        return {
            "text": self.text,
            "segments": segments,
            "language": self.language,
            "language_probability": self.language_probability,
            "duration": self.duration_s,
            "source": self.source,
            "metadata": dict(self.metadata),
        }


# --------------------------------------------------------------------------- TTS
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TTSOutput:
    """Synthesised speech.

    Attributes:
        audio: float32 (num_samples,) mono waveform in [-1, 1].
        sample_rate: rate in Hz.
        text: the input text.
        metadata: strict-JSON model details (voice, phonemes...).
        path: the file the audio was written to, when the caller asked for one; ``None`` otherwise.
    """

    audio: npt.NDArray[np.float32]
    sample_rate: int
    text: str = ""
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    path: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.audio, np.ndarray) or self.audio.ndim != 1 or self.audio.dtype != np.float32:
            raise OutputValidationError("TTSOutput.audio must be a float32 array (num_samples,)")
        if not np.isfinite(self.audio).all():
            raise OutputValidationError("TTSOutput.audio holds non-finite samples")
        if not isinstance(self.sample_rate, int) or self.sample_rate <= 0:
            raise OutputValidationError(f"sample_rate must be a positive int in Hz, got {self.sample_rate!r}")
        if self.path is not None and (not isinstance(self.path, str) or not self.path):
            raise OutputValidationError(f"TTSOutput.path must be a non-empty string or None, got {self.path!r}")
        _metadata(self.metadata)

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return float(self.audio.shape[0] / self.sample_rate)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the audio (format from the suffix: .wav, .flac, .ogg), atomically."""
        from voicehub.core.audio import save_audio

        return save_audio(path, self.audio, self.sample_rate)


# --------------------------------------------------------------------------- speakers
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SpeakerOutput:
    """A speaker embedding of one input.

    Attributes:
        embedding: float32 (embedding_dim,), finite.
        duration_s: length of the input in seconds.
        source: the input's file path or ``"array"``.
        metadata: strict-JSON model details.
    """

    embedding: npt.NDArray[np.float32]
    duration_s: float
    source: str = "array"
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        emb = self.embedding
        if not isinstance(emb, np.ndarray) or emb.ndim != 1 or emb.dtype != np.float32 or emb.size == 0:
            raise OutputValidationError("SpeakerOutput.embedding must be a non-empty float32 array (embedding_dim,)")
        if not np.isfinite(emb).all():
            raise OutputValidationError("SpeakerOutput.embedding holds non-finite values")
        _finite_time("duration_s", self.duration_s)
        _metadata(self.metadata)

    @property
    def embedding_dim(self) -> int:
        """Embedding size."""
        return int(self.embedding.shape[0])


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class VerificationOutput:
    """Result of comparing an enrolment and a test input.

    Attributes:
        score: similarity or log-likelihood ratio; higher means more likely the same speaker.
        threshold: decision threshold on ``score``.
        is_same_speaker: ``score >= threshold``.
        scoring: how the score was computed (``"cosine"``, ``"plda"``, ``"plda+calibration"``...).
    """

    score: float
    threshold: float
    is_same_speaker: bool
    scoring: str

    def __post_init__(self) -> None:
        if not math.isfinite(self.score) or not math.isfinite(self.threshold):
            raise OutputValidationError(f"score and threshold must be finite, got {self.score}, {self.threshold}")
        if self.is_same_speaker != (self.score >= self.threshold):
            raise OutputValidationError("is_same_speaker must equal score >= threshold")


def check_output(value: object, expected: type | tuple[type, ...], *, producer: str) -> None:
    """Raise :class:`OutputValidationError` unless ``value`` is of the ``expected`` output type."""
    if not isinstance(value, expected):
        names = expected.__name__ if isinstance(expected, type) else " or ".join(t.__name__ for t in expected)
        raise OutputValidationError(f"{producer} returned {type(value).__name__}; expected {names}")


def check_outputs(values: Sequence[object], expected: type, *, producer: str) -> None:
    """:func:`check_output` for every item of a batch."""
    for value in values:
        check_output(value, expected, producer=producer)


__all__ = [
    "ASROutput",
    "ASRSegment",
    "ASRWord",
    "SpeakerOutput",
    "SpeechSegment",
    "TTSOutput",
    "VADOutput",
    "VerificationOutput",
    "check_output",
    "check_outputs",
]
