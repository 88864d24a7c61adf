"""The speech-recognition task: :class:`PreTrainedASRModel`, :class:`ASROptions` and long-form chunking.

An ASR integration subclasses :class:`PreTrainedASRModel`, sets ``config_class`` and
``options_class`` (:class:`ASROptions` or a subclass), returns its runtime bundle from
``_load_runtime`` (for an encoder-decoder: the graph as ``module``, the log-mel front end as
``front_end``, the tokenizer as ``tokenizer`` and the decoding loop as ``decoder``) and implements
one hook, ``_transcribe_windows``: transcribe a batch of windows of at most :attr:`max_window_s`
seconds, each with its offset in its source. Everything else is shared here, for every model:

* an input no longer than one window is transcribed as one window;
* a longer input is cut by the default voice-activity detector into speech chunks of at most one
  window (rule below), all chunks of all inputs are transcribed in batches of ``batch_size``, and
  their times are offset back into the source (``vad=None``, the default, or ``vad=True``);
* ``vad=False`` hands a long input to the model's own long-form algorithm, ``_transcribe_long``
  (Whisper: the reference sequential 30 s seek); a model without one raises.

Chunking rule (the merge of whisperX's ``merge_chunks`` and faster-whisper's batched pipeline,
both BSD-2/MIT): the detector runs with ``max_speech_duration_s`` = the window length, so no speech
segment is longer than a window; consecutive segments are then merged while the merged span, from
the first segment's start to the last one's end, fits in one window. A chunk holds the audio of
that span (the pauses inside it included), so no word is cut except where one speech segment
had to be split at the window length. Times of a chunk's segments and words are clipped to the
chunk, which keeps them increasing across chunks.

Segment times of a chunk come from its words: a chunk is decoded without the text before it, and
then Whisper's timestamp tokens fall on whole seconds after the chunk's start (tiny.en on
``tests/data/silero/test.wav``: 6.00, 9.00, 15.00 s into the second chunk; faster-whisper's
``WhisperModel.transcribe`` gives the same tokens on the same chunk). So chunks are always transcribed
with word timestamps, each segment then spans its first word's start to its last word's end (as
openai-whisper's ``add_word_timestamps`` sets them), and the words are dropped again unless they
were asked for. A model that gives no word times keeps its own segment times.

Streaming: :meth:`PreTrainedASRModel.transcribe_stream` yields the segments of one input in time
order as each window is decoded: the chunks in batches of ``batch_size``, the first batch of
:data:`STREAM_FIRST_BATCH` chunk(s) so the first segment comes early; the model's own long-form
algorithm (``vad=False``) yields window by window where it can (``_stream_long``). ``transcribe``
gives the same segments (it decodes the chunks in full batches).
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, overload, runtime_checkable

import numpy as np

from voicehub._model_files import _inference_context
from voicehub.audio_input import PreTrainedAudioModel
from voicehub.core.audio import AudioLike, Waveform
from voicehub.core.config import Config
from voicehub.core.errors import ConfigError, InferenceOptionError
from voicehub.core.outputs import ASROutput, ASRSegment, ASRWord, VADOutput
from voicehub.core.tasks import SpeechTask
from voicehub.modeling import ConfigT, OptionsT, RuntimeT
from voicehub.registry import MODEL_CATALOG
from voicehub.speech_segmentation import VADOptions

DEFAULT_TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
"""Temperatures tried in order until a decoding passes the model's fallback checks (openai-whisper's)."""

STREAM_FIRST_BATCH = 1
"""Chunks in the first batch :meth:`PreTrainedASRModel.transcribe_stream` decodes (then ``batch_size``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ASROptions(Config):
    """Inference options shared by every ASR integration (``transcribe(audio, **options)``).

    Attributes:
        language: language code of the speech (``"en"``...); ``None`` detects it where the model
            can, and means the model's only language otherwise.
        task: ``"transcribe"`` (text in the spoken language) or ``"translate"`` (English text;
            multilingual models only).
        beam_size: beams of the search at temperature 0; 1 is greedy decoding.
        temperature: the temperatures tried in order (fallback); a single ``0.0`` disables fallback.
        word_timestamps: add each word's time span to the segments.
        batch_size: windows (inputs or long-form chunks) decoded together, >= 1.
        vad: ``None`` cuts inputs longer than one window with the default voice-activity
            detector; ``True`` cuts every input (silence is skipped); ``False`` uses the model's
            own long-form algorithm for long inputs.
        chunk_length_s: the longest chunk the detector's cuts are merged into, in seconds (at most
            the model's window). 20 s by default: on ``tests/data/silero/test.wav`` Whisper tiny.en
            skipped 11 s of speech inside a full 30 s chunk (WER 14.5 % against the sequential
            transcript), and kept every word with 15 s and 20 s chunks (2.6 %).
    """

    config_type: ClassVar[str] = "asr-options"
    schema_version: ClassVar[int] = 1

    language: str | None = None
    task: Literal["transcribe", "translate"] = "transcribe"
    beam_size: int = 1
    temperature: tuple[float, ...] = DEFAULT_TEMPERATURES
    word_timestamps: bool = False
    batch_size: int = 8
    vad: bool | None = None
    chunk_length_s: float = 20.0

    def __post_init__(self) -> None:
        if isinstance(self.temperature, (int, float)) and not isinstance(self.temperature, bool):
            object.__setattr__(self, "temperature", (float(self.temperature),))
        elif isinstance(self.temperature, list):
            object.__setattr__(self, "temperature", tuple(float(t) for t in self.temperature))
        Config.__post_init__(self)

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: naming the option, the allowed range and the value given.
        """
        Config.validate(self)

        def fail(key: str, expected: str) -> None:
            raise ConfigError(
                f"asr option {key}: expected {expected}, got {getattr(self, key)!r}",
                config_type=self.config_type,
                key=key,
            )

        if not 1 <= self.beam_size <= MAX_BEAM_SIZE:
            fail("beam_size", f"an integer from 1 (greedy decoding) to {MAX_BEAM_SIZE}")
        if self.batch_size < 1:
            fail("batch_size", "an integer >= 1")
        if not (math.isfinite(self.chunk_length_s) and self.chunk_length_s >= 1.0):
            fail("chunk_length_s", "a duration >= 1 s (it is capped at the model's window)")
        if not self.temperature or any(not math.isfinite(t) or t < 0 for t in self.temperature):
            fail("temperature", "a number >= 0 or a non-empty tuple of them")
        if self.language is not None and (not self.language.strip() or self.language != self.language.strip()):
            fail("language", "a language code such as 'en', or None to detect it")


@runtime_checkable
class SpeechDetector(Protocol):
    """What the chunker needs of a voice-activity model (every ``PreTrainedVADModel`` fits)."""

    def detect(self, audio: Any, *, sample_rate: int | None = None, options: Any = None) -> Any:
        """Speech segments of one input: a :class:`~voicehub.core.VADOutput`."""


MAX_BEAM_SIZE = 128
"""The widest beam accepted (a beam of 10**6 asked the allocator for 345 GB before any error)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpeechChunk:
    """A stretch of one input transcribed as one window.

    Attributes:
        start_sample, end_sample: its bounds in the input, at the input's rate (end exclusive).
        sample_rate: that rate, in Hz.
    """

    start_sample: int
    end_sample: int
    sample_rate: int

    @property
    def start_s(self) -> float:
        """Start in seconds from the start of the input."""
        return self.start_sample / self.sample_rate

    @property
    def end_s(self) -> float:
        """End in seconds from the start of the input."""
        return self.end_sample / self.sample_rate


def merge_speech_segments(vad: VADOutput, *, max_chunk_s: float) -> list[SpeechChunk]:
    """Merge consecutive speech segments into chunks of at most ``max_chunk_s`` (the module's rule).

    Args:
        vad: the detector's output; its segments must each be at most ``max_chunk_s`` long.
        max_chunk_s: the longest chunk, in seconds (the model's window).

    Returns:
        Chunks in order, non-overlapping, with sample bounds at ``vad.sample_rate``.
    """
    chunks: list[SpeechChunk] = []
    max_samples = int(max_chunk_s * vad.sample_rate)
    start: int | None = None
    end = 0
    for segment in vad.segments:
        if start is not None and segment.end_sample - start <= max_samples:
            end = segment.end_sample
            continue
        if start is not None:
            chunks.append(SpeechChunk(start_sample=start, end_sample=end, sample_rate=vad.sample_rate))
        start, end = segment.start_sample, min(segment.end_sample, segment.start_sample + max_samples)
    if start is not None:
        chunks.append(SpeechChunk(start_sample=start, end_sample=end, sample_rate=vad.sample_rate))
    return chunks


def clip_to_chunk(output: ASROutput, start_s: float, end_s: float) -> tuple[ASRSegment, ...]:
    """The segments of one window's output with times (already offset) clipped to ``[start_s, end_s]``."""

    def clip(value: float) -> float:
        return min(max(value, start_s), end_s)

    segments = []
    for segment in output.segments:
        words = tuple(dataclasses.replace(w, start_s=clip(w.start_s), end_s=clip(w.end_s)) for w in segment.words)
        segments.append(
            dataclasses.replace(segment, start_s=clip(segment.start_s), end_s=clip(segment.end_s), words=words)
        )
    return tuple(segments)


def snap_to_words(segments: Sequence[ASRSegment]) -> tuple[ASRSegment, ...]:
    """Segments spanning their first word's start to their last word's end (those without words unchanged)."""
    return tuple(
        dataclasses.replace(s, start_s=s.words[0].start_s, end_s=max(s.words[-1].end_s, s.words[0].start_s))
        if s.words
        else s
        for s in segments
    )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Window:
    """One window to decode: the input it belongs to, its audio, its span there, and whether a detector cut it."""

    owner: int
    audio: Waveform
    start_s: float
    end_s: float
    is_chunk: bool


def _batches(windows: Sequence[_Window], batch_size: int, *, first: int | None = None) -> Iterator[list[_Window]]:
    """Consecutive batches of windows of one kind (chunks or whole inputs): ``first`` windows, then ``batch_size``."""
    start = 0
    size = min(first or batch_size, batch_size)
    while start < len(windows):
        batch = [windows[start]]
        for window in windows[start + 1 : start + size]:
            if window.is_chunk != batch[0].is_chunk:
                break
            batch.append(window)
        yield batch
        start += len(batch)
        size = batch_size


def join_segments(segments: Sequence[ASRSegment]) -> str:
    """The transcript of consecutive segments: their texts joined by single spaces."""
    return " ".join(text for segment in segments if (text := segment.text.strip()))


_Piece = tuple[ASROutput, tuple[ASRSegment, ...]]
"""One decoded window: the model's output for it and its segments on the input's time line."""


class TranscriptionStream(Iterator[ASRSegment]):
    """The segments of one input as they are decoded (what :meth:`PreTrainedASRModel.transcribe_stream` returns).

    Iterate it for :class:`~voicehub.core.ASRSegment` records in time order; :attr:`output` is the whole
    :class:`~voicehub.core.ASROutput` (reading it decodes whatever is left).
    """

    def __init__(self, pieces: Iterator[_Piece], assemble: Callable[[Sequence[_Piece]], ASROutput]) -> None:
        self._pieces = pieces
        self._assemble = assemble
        self._decoded: list[_Piece] = []
        self._pending: collections.deque[ASRSegment] = collections.deque()
        self._output: ASROutput | None = None

    def __iter__(self) -> TranscriptionStream:
        return self

    def __next__(self) -> ASRSegment:
        while not self._pending:
            if self._output is not None:
                raise StopIteration
            piece = next(self._pieces, None)
            if piece is None:
                self._output = self._assemble(self._decoded)
                raise StopIteration
            self._decoded.append(piece)
            self._pending.extend(piece[1])
        return self._pending.popleft()

    @property
    def output(self) -> ASROutput:
        """The whole transcript (equal to ``transcribe``'s), once every window is decoded."""
        while self._output is None:
            for _ in self:
                pass
        return self._output


class PreTrainedASRModel(PreTrainedAudioModel[ConfigT, OptionsT, RuntimeT]):
    """Base of speech-recognition wrappers; implement ``_transcribe_windows`` (see the module docstring).

    Attributes:
        max_window_s: the longest audio (seconds) the model transcribes in one window.
        vad_model: the detector that cuts long inputs; ``None`` loads the registered default VAD
            on first use (on the CPU). Set it to share one detector between models.
        vad_options: the detector's options; its ``max_speech_duration_s`` is set to the window.
    """

    task: ClassVar[SpeechTask] = SpeechTask.AUTOMATIC_SPEECH_RECOGNITION
    output_type: ClassVar[type] = ASROutput
    _task_method: ClassVar[str] = "transcribe"
    max_window_s: ClassVar[float] = 30.0

    vad_model: SpeechDetector | None = None
    vad_options: VADOptions = VADOptions(min_silence_duration_ms=160.0, speech_pad_ms=200.0)

    @overload
    def transcribe(
        self,
        audio: list[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> list[ASROutput]: ...

    @overload
    def transcribe(
        self,
        audio: AudioLike,
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> ASROutput: ...

    def transcribe(
        self,
        audio: AudioLike | list[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> ASROutput | list[ASROutput]:
        """Transcribe one input or a batch.

        Args:
            audio: see :class:`PreTrainedAudioModel` (paths, arrays with ``sample_rate``, waveforms).
            sample_rate: rate in Hz of array inputs.
            options: inference options replacing the defaults.
            **overrides: individual options (``language="en"``, ``beam_size=5``,
                ``word_timestamps=True``, ``batch_size=``, ``vad=``...), validated before loading.

        Returns:
            An :class:`~voicehub.core.ASROutput` (segments with times in seconds from the start of
            the input, and words when asked for), or a list of them for a list input.

        Raises:
            UnknownInferenceOptionError: for an unknown option (a ``TypeError``).
            InferenceOptionError: for invalid options (``beam_size=0``, an unsupported language...).
            AudioError, AudioDecodeError, SampleRateError: for unusable audio.
        """
        resolved = self.resolve_options(options, **overrides)
        waveforms, is_batch = self.prepare_audio(audio, sample_rate=sample_rate)
        outputs = self._run(self._transcribe, waveforms, resolved, ASROutput)
        return outputs if is_batch else outputs[0]

    # ------------------------------------------------------------------ hooks
    def _transcribe_windows(
        self,
        runtime: RuntimeT,
        windows: Sequence[Waveform],
        offsets_s: Sequence[float],
        options: OptionsT,
        *,
        word_confidence: bool = True,
    ) -> Sequence[ASROutput]:
        """Transcribe independent windows of at most :attr:`max_window_s` as one batch.

        Args:
            runtime: the loaded bundle.
            windows: mono float32 waveforms at a supported rate, each at most one window long.
            offsets_s: where each window starts in its source, in seconds; every time in the
                result is offset by it.
            options: the resolved options.
            word_confidence: ``False`` when the caller keeps only the words' times (chunk segment
                times without ``word_timestamps``): a model may then skip the words' confidence
                (``None``) where computing it costs time.

        Returns:
            One output per window (``duration_s`` may be ``None``).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement _transcribe_windows()")

    def _transcribe_long(self, runtime: RuntimeT, waveform: Waveform, options: OptionsT) -> ASROutput:
        """The model's own long-form algorithm for an input over one window (``vad=False``).

        Raises:
            InferenceOptionError: by default: the model has none.
        """
        raise InferenceOptionError(
            f"{type(self).__name__}.transcribe(vad=False): the model has no long-form algorithm of its own and "
            f"the input is {waveform.duration_s:.1f} s (its window is {self.max_window_s:g} s); "
            "use vad=None or vad=True to cut it with the voice-activity detector (on the command line: drop --no-vad)"
        )

    def check_options(self, options: OptionsT | None = None, **overrides: object) -> OptionsT:
        """Resolve the options and check those only the loaded checkpoint can judge (loads a lazy model).

        :meth:`resolve_options` checks types and ranges without the weights; some options depend
        on the checkpoint (Whisper: the language against the vocabulary, ``"en"`` only on an
        English-only one). A batch calls this once before its first input, so a bad option is one
        error up front rather than one per file.

        Returns:
            The resolved options.

        Raises:
            InferenceOptionError: (or a subclass, e.g. ``UnsupportedLanguageError``) naming the option.
            UnknownInferenceOptionError: for an unknown option.
        """
        resolved = self.resolve_options(options, **overrides)
        with self._calls.call():
            self._check_checkpoint_options(self._inference_runtime(), resolved)
        return resolved

    def _check_checkpoint_options(self, runtime: RuntimeT, options: OptionsT) -> None:
        """Hook for :meth:`check_options`: refuse options this checkpoint cannot serve (default: none)."""

    # ------------------------------------------------------------------ shared long-form
    def speech_chunks(self, waveform: Waveform, *, chunk_length_s: float | None = None) -> list[SpeechChunk]:
        """Cut one input into speech chunks with :attr:`vad_model` (the module's rule).

        Args:
            waveform: the input.
            chunk_length_s: the longest chunk in seconds; ``None`` or more than :attr:`max_window_s`
                means one window.

        Returns:
            Chunks in order, with sample bounds at the waveform's rate.
        """
        if self.vad_model is None:
            spec = MODEL_CATALOG.get_default(SpeechTask.VOICE_ACTIVITY_DETECTION)
            self.vad_model = spec.load_wrapper_class().from_pretrained(device="cpu")
        max_chunk_s = min(chunk_length_s or self.max_window_s, self.max_window_s)
        pad_s = self.vad_options.speech_pad_ms / 1000.0
        options = self.vad_options.replace(max_speech_duration_s=max(max_chunk_s - 2 * pad_s, 0.5))
        vad: VADOutput = self.vad_model.detect(waveform, options=options)
        rate = vad.sample_rate
        chunks = merge_speech_segments(vad, max_chunk_s=max_chunk_s)
        if rate == waveform.sample_rate:
            return chunks
        scale = waveform.sample_rate / rate
        return [
            SpeechChunk(
                start_sample=round(c.start_sample * scale),
                end_sample=min(round(c.end_sample * scale), waveform.num_samples),
                sample_rate=waveform.sample_rate,
            )
            for c in chunks
        ]

    def _windows(self, waveform: Waveform, owner: int, options: OptionsT) -> list[_Window] | None:
        """The windows of one input (``None``: the model's own long-form algorithm takes it)."""
        if self._windows_are_long_form(waveform, options):
            return None
        if not (getattr(options, "vad", None) is True or waveform.duration_s > self.max_window_s):
            return [_Window(owner=owner, audio=waveform, start_s=0.0, end_s=waveform.duration_s, is_chunk=False)]
        windows = []
        for chunk in self.speech_chunks(waveform, chunk_length_s=getattr(options, "chunk_length_s", None)):
            audio = Waveform(
                samples=np.ascontiguousarray(waveform.samples[chunk.start_sample : chunk.end_sample]),
                sample_rate=waveform.sample_rate,
                source=waveform.source,
            )
            windows.append(_Window(owner=owner, audio=audio, start_s=chunk.start_s, end_s=chunk.end_s, is_chunk=True))
        return windows

    def _decode(
        self, runtime: RuntimeT, batch: Sequence[_Window], options: OptionsT
    ) -> list[tuple[ASROutput, tuple[ASRSegment, ...]]]:
        """Decode a batch of windows of one kind: each one's output and its segments on the input's time line.

        Chunks are decoded with word timestamps and their segments snapped to their words (the
        module's rule); the words are dropped again unless ``options`` asked for them.
        """
        wants_words = bool(getattr(options, "word_timestamps", False))
        decoding = options
        if batch[0].is_chunk and not wants_words and isinstance(options, ASROptions):
            decoding = options.replace(word_timestamps=True)
        results = self._transcribe_windows(
            runtime, [w.audio for w in batch], [w.start_s for w in batch], decoding, word_confidence=wants_words
        )
        decoded = []
        for window, result in zip(batch, results, strict=True):
            segments = clip_to_chunk(result, window.start_s, window.end_s)
            if window.is_chunk:
                segments = snap_to_words(segments)
            if not wants_words:
                segments = tuple(dataclasses.replace(s, words=()) for s in segments)
            decoded.append((result, segments))
        return decoded

    def _stream_long(self, runtime: RuntimeT, waveform: Waveform, options: OptionsT) -> Iterator[ASROutput]:
        """The model's own long-form algorithm, one output per decoded window (times on the input's time line).

        By default the whole of :meth:`_transcribe_long` at once; override it to yield window by window.
        """
        yield self._transcribe_long(runtime, waveform, options)

    def _assemble(
        self, waveform: Waveform, decoded: Sequence[tuple[ASROutput, tuple[ASRSegment, ...]]], options: OptionsT
    ) -> ASROutput:
        """One input's output from its decoded windows (each: the model's output and its segments).

        The language is the one most windows were decoded in (the first of them on a tie); its
        probability is the mean of those windows' probabilities of it (1.0 when it was given).
        """
        segments = tuple(s for _, window_segments in decoded for s in window_segments)
        language, probability = _chosen_language([result for result, _ in decoded])
        if language is None:
            language = getattr(options, "language", None)
            probability = None if language is None else 1.0
        return ASROutput(
            text=join_segments(segments),
            segments=segments,
            language=language,
            language_probability=probability,
            duration_s=waveform.duration_s,
            source=waveform.source,
            metadata=self._output_metadata(options, vad_chunks=len(decoded)),
        )

    def _long_output(self, waveform: Waveform, pieces: Sequence[ASROutput], options: OptionsT) -> ASROutput:
        """One input's output from the pieces :meth:`_stream_long` yielded."""
        segments = tuple(s for piece in pieces for s in piece.segments)
        first = next((p for p in pieces if p.language), None)
        language, probability = (first.language, first.language_probability) if first is not None else (None, None)
        if language is None:
            language = getattr(options, "language", None)
            probability = None if language is None else 1.0
        return ASROutput(
            text=join_segments(segments),
            segments=segments,
            language=language,
            language_probability=probability,
            duration_s=waveform.duration_s,
            source=waveform.source,
            metadata=dict(pieces[0].metadata) if pieces else self._output_metadata(options, vad_chunks=0),
        )

    def _transcribe(self, runtime: RuntimeT, waveforms: Sequence[Waveform], options: OptionsT) -> list[ASROutput]:
        """Plan windows for every input, transcribe them in batches, and put each input back together."""
        batch_size = int(getattr(options, "batch_size", 1))
        windows: list[_Window] = []
        long_outputs: dict[int, ASROutput] = {}
        for index, waveform in enumerate(waveforms):
            planned = self._windows(waveform, index, options)
            if planned is None:
                long_outputs[index] = self._long_output(
                    waveform, list(self._stream_long(runtime, waveform, options)), options
                )
            else:
                windows.extend(planned)
        # Whole inputs, then chunks, so each batch is of one kind; an input's windows keep their order.
        windows = [w for w in windows if not w.is_chunk] + [w for w in windows if w.is_chunk]
        decoded: list[tuple[ASROutput, tuple[ASRSegment, ...]]] = []
        for batch in _batches(windows, batch_size):
            decoded.extend(self._decode(runtime, batch, options))
        return [
            long_outputs[index]
            if index in long_outputs
            else self._assemble(
                waveform, [d for w, d in zip(windows, decoded, strict=True) if w.owner == index], options
            )
            for index, waveform in enumerate(waveforms)
        ]

    # ------------------------------------------------------------------ streaming
    def transcribe_stream(
        self,
        audio: AudioLike,
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> TranscriptionStream:
        """Transcribe one input, yielding its segments in time order as each window is decoded.

        The chunks of a long input (or of any input with ``vad=True``) are decoded in batches of
        ``batch_size``, the first one of :data:`STREAM_FIRST_BATCH` chunk(s); ``vad=False`` yields
        the model's own long-form algorithm window by window where the model supports it (Whisper's
        30 s seek does). The options and the audio are checked when this is called; the model
        loads and decodes as the stream is consumed, one window batch per step, each step a task
        call of its own (an optimization plan or ``unload()`` between steps waits for no stream).

        Args:
            audio: one input (a path, an array with ``sample_rate``, a waveform), not a list.
            sample_rate: rate in Hz of an array input.
            options: inference options replacing the defaults.
            **overrides: individual options, as for :meth:`transcribe`.

        Returns:
            A :class:`TranscriptionStream`: iterate it for :class:`~voicehub.core.ASRSegment` records (times
            in seconds from the start of the input); its ``output`` is then what :meth:`transcribe`
            returns (the same segments and text; confidences equal to float rounding).

        Raises:
            InferenceOptionError: for a list of inputs, or invalid options (those the checkpoint
                judges too, see :meth:`check_options`; this loads a lazy model).
            UnknownInferenceOptionError: for an unknown option.
            AudioError, AudioDecodeError, SampleRateError: for unusable audio.
        """
        resolved = self.check_options(options, **overrides)
        if isinstance(audio, list):
            raise InferenceOptionError(
                f"{type(self).__name__}.transcribe_stream() takes one input, got a list of {len(audio)}; "
                "stream them one by one, or call transcribe() with the list"
            )
        waveform = self.prepare_audio(audio, sample_rate=sample_rate)[0][0]
        is_long = self._windows_are_long_form(waveform, resolved)

        def assemble(decoded: Sequence[tuple[ASROutput, tuple[ASRSegment, ...]]]) -> ASROutput:
            if is_long:
                return self._long_output(waveform, [result for result, _ in decoded], resolved)
            return self._assemble(waveform, decoded, resolved)

        return TranscriptionStream(
            self._steps(lambda runtime: self._stream_pieces(runtime, waveform, resolved)), assemble
        )

    def _windows_are_long_form(self, waveform: Waveform, options: OptionsT) -> bool:
        """Whether the model's own long-form algorithm takes this input (``vad=False`` and over one window)."""
        return getattr(options, "vad", None) is False and waveform.duration_s > self.max_window_s

    def _steps(self, start: Callable[[RuntimeT], Iterator[_Piece]]) -> Iterator[_Piece]:
        """Run a stream of decoded windows one step per task call (no call or inference mode held across ``yield``)."""
        pieces: Iterator[_Piece] | None = None
        while True:
            with self._calls.call():
                runtime = self._inference_runtime()
                with _inference_context():
                    if pieces is None:
                        pieces = start(runtime)
                    piece = next(pieces, None)
            if piece is None:
                return
            yield piece

    def _stream_pieces(self, runtime: RuntimeT, waveform: Waveform, options: OptionsT) -> Iterator[_Piece]:
        """The decoded windows of one input in order: each one's output and its segments."""
        windows = self._windows(waveform, 0, options)
        if windows is None:
            for piece in self._stream_long(runtime, waveform, options):
                yield piece, piece.segments
            return
        for batch in _batches(windows, int(getattr(options, "batch_size", 1)), first=STREAM_FIRST_BATCH):
            yield from self._decode(runtime, batch, options)

    def _output_metadata(self, options: OptionsT, *, vad_chunks: int) -> dict[str, Any]:
        """Strict-JSON details recorded in every output."""
        return {"model_type": self.model_type, "windows": vad_chunks}


def _chosen_language(results: Sequence[ASROutput]) -> tuple[str | None, float | None]:
    """The language most ``results`` were decoded in (the first one on a tie) and its mean probability over them.

    A result without a probability counts as 1.0 (a model that states its language without
    detecting it). ``(None, None)`` when no result names a language.
    """
    languages = [result.language for result in results if result.language]
    if not languages:
        return None, None
    language = max(dict.fromkeys(languages), key=languages.count)
    probabilities = [
        1.0 if result.language_probability is None else result.language_probability
        for result in results
        if result.language == language
    ]
    return language, min(max(sum(probabilities) / len(probabilities), 0.0), 1.0)


def words_of(output: ASROutput) -> tuple[ASRWord, ...]:
    """All words of an output in order (empty unless word timestamps were asked for)."""
    return tuple(word for segment in output.segments for word in segment.words)


__all__ = [
    "DEFAULT_TEMPERATURES",
    "STREAM_FIRST_BATCH",
    "ASROptions",
    "PreTrainedASRModel",
    "SpeechChunk",
    "SpeechDetector",
    "TranscriptionStream",
    "clip_to_chunk",
    "join_segments",
    "merge_speech_segments",
    "snap_to_words",
    "words_of",
]
