"""Voice-activity segmentation: frame probabilities -> speech segments, offline and incrementally.

Every VAD integration turns audio into one speech probability per frame (Silero: 32 ms chunks;
WebRTC: 10/20/30 ms frames, probability 0 or 1) and hands them to :class:`SpeechSegmenter`, which
implements the segmentation rules of Silero VAD's ``get_speech_timestamps`` (silero-vad 6.2.3,
``utils_vad.py``, MIT), re-derived here so that the same rules serve every model and can run
incrementally:

1. Speech starts at the first frame with probability >= ``threshold``.
2. While in speech, a frame below ``neg_threshold`` (default ``max(threshold - 0.15, 0.01)``)
   starts a candidate silence at that frame; a frame >= ``threshold`` cancels it. Once the silence
   has lasted ``min_silence_duration_ms`` the segment ends where the silence began, and it is kept
   only if it is longer than ``min_speech_duration_ms``.
3. A segment longer than ``max_speech_duration_s`` (minus one frame and two pads) is cut: at the
   longest candidate silence longer than ``min_silence_at_max_speech_ms`` inside it (or, with
   ``use_max_possible_silence_at_max_speech=False``, at the last one), else at the current frame.
4. Audio that ends in speech closes the segment at the last sample (if long enough).
5. Each segment is widened by ``speech_pad_ms`` on both sides, within the audio; when two
   segments are closer than two pads, the gap between them is split in half instead.

All positions are integer sample counts at the model's sample rate, frame ``i`` starting at
``i * frame_num_samples``. :class:`SpeechSegmenter` emits a ``start`` event as soon as a segment is
certain to be kept (its final, padded start is then known) and an ``end`` event as soon as no
later segment can start close enough to move the padded end; the whole-file result is exactly
the segments those events describe, so streaming and offline segmentation agree by construction.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from voicehub.core.config import Config
from voicehub.core.errors import ConfigError, LifecycleError
from voicehub.core.outputs import SpeechSegment, VADOutput

FloatArray = npt.NDArray[np.float32]


# --------------------------------------------------------------------------- options
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class VADOptions(Config):
    """Segmentation options shared by every VAD integration (the ``get_speech_timestamps`` parameters).

    Attributes:
        threshold: a frame with speech probability >= this is speech, in [0, 1].
        neg_threshold: while in speech, a frame below this is silence; ``None`` means
            ``max(threshold - 0.15, 0.01)``. Must not exceed ``threshold``.
        min_speech_duration_ms: segments not longer than this are dropped (ms, >= 0).
        min_silence_duration_ms: silence that ends a segment must last this long (ms, >= 0).
        speech_pad_ms: padding added on each side of a segment (ms, >= 0).
        max_speech_duration_s: longer segments are cut (s, > 0); ``None`` means no limit.
        min_silence_at_max_speech_ms: shortest silence (ms) considered as a cut point for long segments.
        use_max_possible_silence_at_max_speech: cut long segments at their longest silence (True)
            or at their last one (False).
        return_probabilities: include the frame probabilities in the output.
    """

    config_type: ClassVar[str] = "vad-options"
    schema_version: ClassVar[int] = 1

    threshold: float = 0.5
    neg_threshold: float | None = None
    min_speech_duration_ms: float = 250.0
    min_silence_duration_ms: float = 100.0
    speech_pad_ms: float = 30.0
    max_speech_duration_s: float | None = None
    min_silence_at_max_speech_ms: float = 98.0
    use_max_possible_silence_at_max_speech: bool = True
    return_probabilities: bool = False

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: naming the option, the allowed range and the value given.
        """
        Config.validate(self)

        def fail(key: str, expected: str) -> None:
            raise ConfigError(
                f"vad option {key}: expected {expected}, got {getattr(self, key)!r}",
                config_type=self.config_type,
                key=key,
            )

        if not (math.isfinite(self.threshold) and 0.0 <= self.threshold <= 1.0):
            fail("threshold", "a probability in [0, 1]")
        if self.neg_threshold is not None and not (
            math.isfinite(self.neg_threshold) and 0.0 <= self.neg_threshold <= self.threshold
        ):
            fail("neg_threshold", f"a probability in [0, threshold={self.threshold}] or None")
        for key in (
            "min_speech_duration_ms",
            "min_silence_duration_ms",
            "speech_pad_ms",
            "min_silence_at_max_speech_ms",
        ):
            value = getattr(self, key)
            if not (math.isfinite(value) and value >= 0):
                fail(key, "a finite duration >= 0 ms")
        if self.max_speech_duration_s is not None and not (
            math.isfinite(self.max_speech_duration_s) and self.max_speech_duration_s > 0
        ):
            fail("max_speech_duration_s", "a finite duration > 0 s, or None for no limit")

    @property
    def effective_neg_threshold(self) -> float:
        """The silence threshold actually used."""
        return self.neg_threshold if self.neg_threshold is not None else max(self.threshold - 0.15, 0.01)


# --------------------------------------------------------------------------- events
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class VADEvent:
    """A speech boundary that has become certain.

    Attributes:
        kind: ``"start"`` or ``"end"`` of a speech segment.
        sample: the boundary as a sample index at ``sample_rate`` (an end is exclusive).
        sample_rate: the rate in Hz the sample index refers to (the model's rate).
    """

    kind: Literal["start", "end"]
    sample: int
    sample_rate: int

    @property
    def time_s(self) -> float:
        """The boundary in seconds."""
        return self.sample / self.sample_rate

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": self.kind, "sample": self.sample, "sample_rate": self.sample_rate, "time_s": self.time_s}


# --------------------------------------------------------------------------- segmentation
class SpeechSegmenter:
    """Incremental segmentation of frame probabilities (see the module docstring for the rules).

    Args:
        options: thresholds and durations.
        sample_rate: the rate in Hz frames are counted at.
        frame_num_samples: samples per frame (512 for Silero at 16 kHz, 480 for 30 ms WebRTC at 16 kHz).

    Feed probabilities in order with :meth:`push`, then call :meth:`finish` once with the audio
    length; both return the :class:`VADEvent` objects that became certain. :attr:`bounds` holds
    the finished ``(start, end)`` sample pairs.
    """

    def __init__(self, options: VADOptions, *, sample_rate: int, frame_num_samples: int) -> None:
        if frame_num_samples <= 0 or sample_rate <= 0:
            raise ConfigError(
                "SpeechSegmenter needs a positive sample_rate and frame_num_samples, "
                f"got {sample_rate} and {frame_num_samples}"
            )
        self.options = options
        self.sample_rate = sample_rate
        self.frame_num_samples = frame_num_samples
        rate = float(sample_rate)
        self._threshold = options.threshold
        self._neg_threshold = options.effective_neg_threshold
        self._min_speech = rate * options.min_speech_duration_ms / 1000
        self._min_silence = rate * options.min_silence_duration_ms / 1000
        self._pad = rate * options.speech_pad_ms / 1000
        self._min_silence_at_max = rate * options.min_silence_at_max_speech_ms / 1000
        self._use_longest = options.use_max_possible_silence_at_max_speech
        limit = options.max_speech_duration_s
        self._max_speech = math.inf if limit is None else rate * limit - frame_num_samples - 2 * self._pad
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new stream)."""
        self._frame_index = 0
        self._samples_seen = 0
        self._finished = False
        self._triggered = False
        self._start: int | None = None  # start of the segment in progress
        self._silence_start = 0  # candidate end (0 = none), as upstream
        self._cut_end = 0  # last usable silence for a max-length cut (0 = none)
        self._next_start = 0
        self._silences: list[tuple[int, int]] = []  # (start, length) of silences inside the segment
        self._raw: list[tuple[int, int]] = []  # kept segments before padding
        self._starts: list[int] = []  # padded starts emitted
        self._ends: list[int] = []  # padded ends emitted

    @property
    def bounds(self) -> tuple[tuple[int, int], ...]:
        """The finished segments as padded ``(start_sample, end_sample)`` pairs."""
        return tuple(zip(self._starts, self._ends, strict=False))

    @property
    def is_finished(self) -> bool:
        """Whether :meth:`finish` has been called since the last reset."""
        return self._finished

    def push(self, probabilities: Iterable[float], *, samples_seen: int | None = None) -> list[VADEvent]:
        """Consume frame probabilities in order.

        Args:
            probabilities: one speech probability per frame, continuing where the last call stopped.
            samples_seen: real (not zero-padded) samples received so far; defaults to the frames' extent.

        Returns:
            The events that became certain, in order.

        Raises:
            LifecycleError: after :meth:`finish` (call :meth:`reset` first).
        """
        if self._finished:
            raise LifecycleError("SpeechSegmenter.push() after finish(); call reset() to start a new stream")
        for probability in probabilities:
            self._step(float(probability))
        extent = self._frame_index * self.frame_num_samples
        self._samples_seen = max(self._samples_seen, extent if samples_seen is None else int(samples_seen))
        return self._emit(final=False)

    def finish(self, num_samples: int) -> list[VADEvent]:
        """End the stream: close a segment still in progress and emit every remaining event.

        Args:
            num_samples: the audio's length in samples (the last frame may have been zero-padded).

        Returns:
            The remaining events.
        """
        if self._finished:
            raise LifecycleError("SpeechSegmenter.finish() called twice; call reset() to start a new stream")
        self._finished = True
        self._samples_seen = int(num_samples)
        if self._start is not None and num_samples - self._start > self._min_speech:
            self._raw.append((self._start, int(num_samples)))
        self._start = None
        return self._emit(final=True)

    # ------------------------------------------------------------------ the rules
    def _close(self, start: int, end: int) -> None:
        self._raw.append((start, end))
        self._start = None

    def _reset_candidates(self) -> None:
        self._cut_end = self._next_start = self._silence_start = 0
        self._silences = []

    def _step(self, probability: float) -> None:
        position = self._frame_index * self.frame_num_samples
        self._frame_index += 1
        is_speech = probability >= self._threshold
        if is_speech and self._silence_start:
            length = position - self._silence_start
            if length > self._min_silence_at_max:
                self._silences.append((self._silence_start, length))
            self._silence_start = 0
            if self._next_start < self._cut_end:
                self._next_start = position
        if is_speech and not self._triggered:
            self._triggered = True
            self._start = position
            return
        if self._triggered and self._start is not None and position - self._start > self._max_speech:
            start = self._start
            if self._use_longest and self._silences:
                cut, length = max(self._silences, key=lambda item: item[1])  # first longest on ties
                self._close(start, cut)
                resume = cut + length
                if resume < cut + position:
                    self._start = resume
                else:
                    self._triggered = False
                self._reset_candidates()
            elif self._cut_end:
                cut = self._cut_end
                self._close(start, cut)
                if self._next_start < cut:
                    self._triggered = False
                else:
                    self._start = self._next_start
                self._reset_candidates()
            else:
                self._close(start, position)
                self._triggered = False
                self._reset_candidates()
                return
        if probability < self._neg_threshold and self._triggered:
            if not self._silence_start:
                self._silence_start = position
            silence = position - self._silence_start
            if not self._use_longest and silence > self._min_silence_at_max:
                self._cut_end = self._silence_start
            if silence < self._min_silence:
                return
            current, end = self._start, self._silence_start
            self._start = None
            if current is not None and end - current > self._min_speech:
                self._raw.append((current, end))
            self._reset_candidates()
            self._triggered = False

    # ------------------------------------------------------------------ padding and events
    def _confirmed_pending_start(self) -> int | None:
        """Start of the segment in progress if it is certain to be kept."""
        if self._start is None:
            return None
        frontier = min(self._frame_index * self.frame_num_samples, self._samples_seen)
        earliest_end = self._silence_start if self._silence_start else frontier
        return self._start if earliest_end - self._start > self._min_speech else None

    def _emit(self, *, final: bool) -> list[VADEvent]:
        events: list[VADEvent] = []
        rate = self.sample_rate
        while True:
            index = len(self._starts)
            if index < len(self._raw):
                start = self._raw[index][0]
            elif index == len(self._raw) and not final and (pending := self._confirmed_pending_start()) is not None:
                start = pending
            else:
                break
            if index > 0:
                gap = start - self._raw[index - 1][1]
                if len(self._ends) < index:
                    previous_end = self._raw[index - 1][1]
                    padded_end = previous_end + int(gap // 2) if gap < 2 * self._pad else int(previous_end + self._pad)
                    self._ends.append(padded_end)
                    events.append(VADEvent(kind="end", sample=padded_end, sample_rate=rate))
                padded_start = int(max(0, start - gap // 2)) if gap < 2 * self._pad else int(max(0, start - self._pad))
            else:
                padded_start = int(max(0, start - self._pad))
            self._starts.append(padded_start)
            events.append(VADEvent(kind="start", sample=padded_start, sample_rate=rate))
        # The last kept segment's end is final once no later segment can start within two pads of it.
        index = len(self._ends)
        if index < len(self._raw) and index == len(self._starts) - 1:
            end = self._raw[index][1]
            if final:
                padded_end = int(min(self._samples_seen, end + self._pad))
            else:
                earliest_start = self._start if self._start is not None else self._frame_index * self.frame_num_samples
                ready = earliest_start - end >= 2 * self._pad and self._samples_seen >= end + self._pad
                padded_end = int(end + self._pad) if ready else -1
            if padded_end >= 0:
                self._ends.append(padded_end)
                events.append(VADEvent(kind="end", sample=padded_end, sample_rate=rate))
        return events


def speech_bounds(
    probabilities: Sequence[float] | FloatArray,
    *,
    num_samples: int,
    sample_rate: int,
    frame_num_samples: int,
    options: VADOptions,
) -> tuple[tuple[int, int], ...]:
    """Whole-file segmentation: padded ``(start_sample, end_sample)`` pairs.

    Args:
        probabilities: one speech probability per frame, float (num_frames,).
        num_samples: the audio's length in samples at ``sample_rate``.
        sample_rate: rate in Hz.
        frame_num_samples: samples per frame.
        options: thresholds and durations.
    """
    segmenter = SpeechSegmenter(options, sample_rate=sample_rate, frame_num_samples=frame_num_samples)
    segmenter.push(np.asarray(probabilities, dtype=np.float64).tolist(), samples_seen=num_samples)
    segmenter.finish(num_samples)
    return segmenter.bounds


def segment_score(probabilities: FloatArray, start: int, end: int, frame_num_samples: int) -> float | None:
    """Mean probability of the frames overlapping samples ``[start, end)``, or ``None`` without frames."""
    first = start // frame_num_samples
    last = min(-(-end // frame_num_samples), probabilities.shape[0])
    if last <= first:
        return None
    return float(np.clip(np.mean(probabilities[first:last], dtype=np.float64), 0.0, 1.0))


def build_vad_output(
    probabilities: FloatArray,
    *,
    num_samples: int,
    sample_rate: int,
    frame_num_samples: int,
    options: VADOptions,
    source: str = "array",
    metadata: dict[str, Any] | None = None,
    bounds: Sequence[tuple[int, int]] | None = None,
) -> VADOutput:
    """Segment frame probabilities and wrap the result as a :class:`VADOutput`.

    Args:
        probabilities: float (num_frames,) speech probability per frame.
        num_samples: analysed length in samples at ``sample_rate`` Hz.
        sample_rate: the rate the sample bounds refer to.
        frame_num_samples: samples per frame.
        options: segmentation options (``return_probabilities`` keeps the frames in the output).
        source: the input's file path or ``"array"``.
        metadata: strict-JSON details for the output (model type, threshold...).
        bounds: precomputed padded bounds (a finished stream's); segmented here when ``None``.

    Audio shorter than one frame (``num_samples < frame_num_samples``, e.g. 1 sample, or a few
    samples that resample to none) is too short to judge: the output has no segments and no
    probabilities, whatever the rate and model.
    """
    probs = np.ascontiguousarray(probabilities, dtype=np.float32)
    if num_samples < frame_num_samples:
        # Shorter than one frame: too short to judge at any rate, so nothing is scored or segmented.
        probs, bounds = np.zeros(0, dtype=np.float32), ()
    if bounds is None:
        bounds = speech_bounds(
            probs,
            num_samples=num_samples,
            sample_rate=sample_rate,
            frame_num_samples=frame_num_samples,
            options=options,
        )
    segments = tuple(
        SpeechSegment.from_samples(start, end, sample_rate, segment_score(probs, start, end, frame_num_samples))
        for start, end in bounds
    )
    details = {
        "threshold": options.threshold,
        "neg_threshold": options.effective_neg_threshold,
        "min_speech_duration_ms": options.min_speech_duration_ms,
        "min_silence_duration_ms": options.min_silence_duration_ms,
        "speech_pad_ms": options.speech_pad_ms,
        "max_speech_duration_s": options.max_speech_duration_s,
        **(metadata or {}),
    }
    return VADOutput(
        segments=segments,
        duration_s=num_samples / sample_rate,
        sample_rate=sample_rate,
        probabilities=probs if options.return_probabilities else None,
        frame_duration_s=frame_num_samples / sample_rate if options.return_probabilities else None,
        source=source,
        metadata=details,
    )


__all__ = [
    "FloatArray",
    "SpeechSegmenter",
    "VADEvent",
    "VADOptions",
    "build_vad_output",
    "segment_score",
    "speech_bounds",
]
