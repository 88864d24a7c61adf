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
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, overload, runtime_checkable

import numpy as np

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

        if self.beam_size < 1:
            fail("beam_size", "an integer >= 1 (1 is greedy decoding)")
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


def join_segments(segments: Sequence[ASRSegment]) -> str:
    """The transcript of consecutive segments: their texts joined by single spaces."""
    return " ".join(text for segment in segments if (text := segment.text.strip()))


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
        self, runtime: RuntimeT, windows: Sequence[Waveform], offsets_s: Sequence[float], options: OptionsT
    ) -> Sequence[ASROutput]:
        """Transcribe independent windows of at most :attr:`max_window_s` as one batch.

        Args:
            runtime: the loaded bundle.
            windows: mono float32 waveforms at a supported rate, each at most one window long.
            offsets_s: where each window starts in its source, in seconds; every time in the
                result is offset by it.
            options: the resolved options.

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

    def _transcribe(self, runtime: RuntimeT, waveforms: Sequence[Waveform], options: OptionsT) -> list[ASROutput]:
        """Plan windows for every input, transcribe them in batches, and put each input back together."""
        vad = getattr(options, "vad", None)
        batch_size = int(getattr(options, "batch_size", 1))
        windows: list[tuple[int, Waveform, float, float]] = []  # input index, audio, start_s, end_s
        long_outputs: dict[int, ASROutput] = {}
        for index, waveform in enumerate(waveforms):
            is_long = waveform.duration_s > self.max_window_s
            if vad is False and is_long:
                long_outputs[index] = self._transcribe_long(runtime, waveform, options)
            elif vad is True or is_long:
                for chunk in self.speech_chunks(waveform, chunk_length_s=getattr(options, "chunk_length_s", None)):
                    audio = Waveform(
                        samples=np.ascontiguousarray(waveform.samples[chunk.start_sample : chunk.end_sample]),
                        sample_rate=waveform.sample_rate,
                        source=waveform.source,
                    )
                    windows.append((index, audio, chunk.start_s, chunk.end_s))
            else:
                windows.append((index, waveform, 0.0, waveform.duration_s))
        results: list[ASROutput] = []
        for first in range(0, len(windows), batch_size):
            batch = windows[first : first + batch_size]
            results.extend(self._transcribe_windows(runtime, [w[1] for w in batch], [w[2] for w in batch], options))
        outputs: list[ASROutput] = []
        for index, waveform in enumerate(waveforms):
            if index in long_outputs:
                outputs.append(dataclasses.replace(long_outputs[index], source=waveform.source))
                continue
            segments: list[ASRSegment] = []
            languages: list[str] = []
            for (owner, _, start_s, end_s), result in zip(windows, results, strict=True):
                if owner == index:
                    segments.extend(clip_to_chunk(result, start_s, end_s))
                    if result.language:
                        languages.append(result.language)
            language = max(set(languages), key=languages.count) if languages else getattr(options, "language", None)
            outputs.append(
                ASROutput(
                    text=join_segments(segments),
                    segments=tuple(segments),
                    language=language,
                    duration_s=waveform.duration_s,
                    source=waveform.source,
                    metadata=self._output_metadata(options, vad_chunks=sum(1 for w in windows if w[0] == index)),
                )
            )
        return outputs

    def _output_metadata(self, options: OptionsT, *, vad_chunks: int) -> dict[str, Any]:
        """Strict-JSON details recorded in every output."""
        return {"model_type": self.model_type, "windows": vad_chunks}


def words_of(output: ASROutput) -> tuple[ASRWord, ...]:
    """All words of an output in order (empty unless word timestamps were asked for)."""
    return tuple(word for segment in output.segments for word in segment.words)


__all__ = [
    "DEFAULT_TEMPERATURES",
    "ASROptions",
    "PreTrainedASRModel",
    "SpeechChunk",
    "SpeechDetector",
    "clip_to_chunk",
    "join_segments",
    "merge_speech_segments",
    "words_of",
]
