"""The voice-activity-detection task: :class:`PreTrainedVADModel` and incremental detection.

Every VAD integration turns audio into one speech probability per frame and hands them to the
shared segmentation (:mod:`voicehub.speech_segmentation`, the rules of Silero VAD's
``get_speech_timestamps``), offline through :func:`~voicehub.speech_segmentation.build_vad_output`
and incrementally through :class:`VADStreamSession`, whose model-specific half is a
:class:`FrameScorer`. Streaming and offline segmentation agree by construction.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, overload, runtime_checkable

import numpy as np

from voicehub.audio_input import STREAM_BLOCK_S, STREAM_FILE_MIN_DURATION_S, PreTrainedAudioModel
from voicehub.core.audio import (
    AudioLike,
    Waveform,
    check_sample_rate,
    is_raw_pcm,
    load_audio,
    load_audio_batch,
)
from voicehub.core.audio_stream import audio_file_info, iter_audio_blocks
from voicehub.core.errors import AudioError, LifecycleError
from voicehub.core.outputs import SpeechSegment, VADOutput
from voicehub.core.tasks import SpeechTask
from voicehub.modeling import ConfigT, OptionsT, RuntimeT
from voicehub.speech_segmentation import (
    FloatArray,
    SpeechSegmenter,
    VADEvent,
    VADOptions,
    build_vad_output,
    segment_score,
    speech_bounds,
)


@runtime_checkable
class ResamplingConfig(Protocol):
    """A model config with a ``resample`` switch (``False``: refuse audio at unsupported rates)."""

    @property
    def resample(self) -> bool:
        """Whether audio at an unsupported rate is resampled."""
        ...


class PreTrainedVADModel(PreTrainedAudioModel[ConfigT, OptionsT, RuntimeT]):
    """Base of voice-activity-detection wrappers; implement ``_detect`` (and ``stream`` for streaming).

    Inputs at a rate outside :attr:`supported_sample_rates` are resampled to the first supported
    rate, or, with ``resamples_in_detect = True``, left for the wrapper's ``_detect`` to resample
    (so each output can record the rate of its input). A config with ``resample = False`` makes
    such inputs an error instead.
    """

    task: ClassVar[SpeechTask] = SpeechTask.VOICE_ACTIVITY_DETECTION
    output_type: ClassVar[type] = VADOutput
    _task_method: ClassVar[str] = "detect"
    resamples_in_detect: ClassVar[bool] = False
    """Whether ``_detect`` resamples itself (``prepare_audio`` then only decodes and downmixes)."""

    @property
    def resamples(self) -> bool:
        """Whether audio at an unsupported rate is resampled (``config.resample``; true for a config without one)."""
        return self.config.resample if isinstance(self.config, ResamplingConfig) else True

    def prepare_audio(
        self, audio: AudioLike | list[AudioLike], *, sample_rate: int | None = None
    ) -> tuple[list[Waveform], bool]:
        """Decode, downmix, and resample unless ``resamples_in_detect``.

        Raises:
            SampleRateError: for audio at an unsupported rate when ``config.resample`` is false.
            AudioError: for unusable audio.
        """
        waveforms, is_batch = load_audio_batch(audio, sample_rate=sample_rate)
        if not self.resamples:
            for waveform in waveforms:
                self.check_input_rate(waveform.sample_rate, waveform.source)
        return (waveforms if self.resamples_in_detect else self._to_supported_rate(waveforms)), is_batch

    def check_stream_rate(self, sample_rate: object) -> int:
        """Validate the ``sample_rate`` given to ``stream()``.

        Returns:
            The rate in Hz.

        Raises:
            SampleRateError: for a non-positive or non-integer rate, or an unsupported one when
                resampling is off.
        """
        if not self.resamples:
            return self.check_input_rate(sample_rate, "stream")
        return check_sample_rate(sample_rate, source="stream")

    @overload
    def detect(
        self,
        audio: list[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> list[VADOutput]: ...

    @overload
    def detect(
        self,
        audio: AudioLike,
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> VADOutput: ...

    def detect(
        self,
        audio: AudioLike | list[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> VADOutput | list[VADOutput]:
        """Find the speech segments of one input or a batch.

        Args:
            audio: see :class:`~voicehub.audio_input.PreTrainedAudioModel`.
            sample_rate: rate in Hz of array inputs.
            options: inference options replacing the defaults.
            **overrides: individual options (validated against ``options_class`` before loading).

        Returns:
            A :class:`~voicehub.core.VADOutput`, or a list of them for a list input.

        Raises:
            UnknownInferenceOptionError: for an unknown option (a ``TypeError``).
            InferenceOptionError, AudioError, SampleRateError: for invalid options or audio.
        """
        resolved = self.resolve_options(options, **overrides)
        if self._streams_files and isinstance(audio, (str, os.PathLike)) and not is_raw_pcm(audio):
            info = audio_file_info(audio)
            if info.duration_s > STREAM_FILE_MIN_DURATION_S:
                return self.detect_file(audio, sample_rate=sample_rate, options=resolved)
        waveforms, is_batch = self.prepare_audio(audio, sample_rate=sample_rate)
        outputs = self._run(self._detect, waveforms, resolved, VADOutput)
        return outputs if is_batch else outputs[0]

    @property
    def _streams_files(self) -> bool:
        return callable(getattr(self, "stream", None))

    def detect_file(
        self,
        path: str | os.PathLike[str],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        block_s: float = STREAM_BLOCK_S,
        **overrides: object,
    ) -> VADOutput:
        """Find the speech segments of an audio file of any length with memory bounded by the block.

        The file is decoded, downmixed and resampled ``block_s`` seconds at a time and pushed
        through :meth:`stream` (the model's frame scorer carries its state across blocks), so
        peak memory does not grow with the file's duration: it holds one block, the model and
        one float32 probability per frame (about 125 kB per hour at 32 ms frames). ``detect``
        takes this path for files longer than :data:`STREAM_FILE_MIN_DURATION_S`. The output
        equals ``detect`` on the whole decoded file (same segments; probabilities within float32
        rounding, < 1e-6).

        Args:
            path: an audio file.
            sample_rate: if given, must equal the file's rate.
            options: inference options replacing the defaults.
            block_s: seconds decoded at once (> 0).
            **overrides: individual options.

        Raises:
            LifecycleError: for a model without ``stream()``.
            AudioDecodeError, AudioError, SampleRateError: for an unusable file.
        """
        stream = getattr(self, "stream", None)
        if not callable(stream):
            raise LifecycleError(f"{type(self).__name__} has no stream(); use detect() on the whole file")
        resolved = self.resolve_options(options, **overrides)
        source = os.fspath(path)
        if is_raw_pcm(path):
            raise AudioError(
                f"{source}: headerless PCM has no sample rate; use load_raw_pcm then detect", source=source
            )
        info = audio_file_info(path)
        if sample_rate is not None and check_sample_rate(sample_rate, source=source) != info.sample_rate:
            load_audio(path, sample_rate=sample_rate)  # raises the SampleRateError load_audio gives
        if not self.resamples:
            self.check_input_rate(info.sample_rate, source)
        if isinstance(block_s, bool) or not isinstance(block_s, (int, float)) or not block_s > 0:
            raise AudioError(f"block_s: expected a positive number of seconds, got {block_s!r}", source=source)
        session: VADStreamSession = stream(info.sample_rate, options=resolved)
        block_samples = max(1, round(block_s * info.sample_rate))
        for block in iter_audio_blocks(path, block_samples=block_samples):
            session.push(block)
        session.flush()
        return session.output(source=source)

    def _detect(self, runtime: RuntimeT, waveforms: Sequence[Waveform], options: OptionsT) -> Sequence[VADOutput]:
        """Return one :class:`VADOutput` per waveform (run under ``torch.inference_mode``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _detect()")


# --------------------------------------------------------------------------- streaming
class FrameScorer(Protocol):
    """A stateful per-frame speech scorer, the model-specific half of a stream.

    Attributes:
        sample_rate: the rate in Hz frames must be at.
        frame_num_samples: samples per frame.
    """

    sample_rate: int
    frame_num_samples: int

    def score(self, frames: FloatArray) -> FloatArray:
        """Speech probabilities of consecutive frames, float32 (num_frames, frame_num_samples) -> (num_frames,)."""
        ...

    def reset(self) -> None:
        """Forget the carried state (a new stream)."""
        ...


class VADStreamSession:
    """Incremental voice activity detection over pushed audio chunks of any size.

    Args:
        scorer: the model's frame scorer.
        options: segmentation options.
        sample_rate: rate in Hz of the pushed audio; when it differs from the scorer's rate the
            stream is resampled on the fly (libsoxr, HQ).
        metadata: strict-JSON details copied into :meth:`output`.

    :meth:`push` and :meth:`flush` return :class:`VADEvent` objects as soon as they are certain;
    sample positions refer to the scorer's rate. After :meth:`flush` the session holds the
    finished stream (:attr:`segments`, :meth:`output`) until :meth:`reset`.
    """

    def __init__(
        self,
        scorer: FrameScorer,
        options: VADOptions,
        *,
        sample_rate: int,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.scorer = scorer
        self.options = options
        self.sample_rate = check_sample_rate(sample_rate, source="stream")
        self.metadata = dict(metadata or {})
        self._segmenter = SpeechSegmenter(
            options, sample_rate=scorer.sample_rate, frame_num_samples=scorer.frame_num_samples
        )
        self.reset()

    def reset(self) -> None:
        """Start a new stream: drop buffered audio, model state and segments."""
        self.scorer.reset()
        self._segmenter.reset()
        self._buffer = np.zeros(0, dtype=np.float32)
        self._probabilities: list[FloatArray] = []
        self._num_samples = 0  # at the scorer's rate
        self._resampler: Any = None
        if self.sample_rate != self.scorer.sample_rate:
            import soxr

            self._resampler = soxr.ResampleStream(
                self.sample_rate, self.scorer.sample_rate, 1, dtype="float32", quality="HQ"
            )

    @property
    def probabilities(self) -> FloatArray:
        """float32 (num_frames,): the frame probabilities computed so far."""
        if not self._probabilities:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(self._probabilities)

    @property
    def segments(self) -> tuple[SpeechSegment, ...]:
        """The segments whose start and end are both final, at the scorer's rate."""
        return tuple(
            SpeechSegment.from_samples(start, end, self.scorer.sample_rate) for start, end in self._segmenter.bounds
        )

    def push(self, chunk: Any) -> list[VADEvent]:
        """Add audio; return the boundaries that became certain.

        Args:
            chunk: float or integer PCM samples (num_samples,) (or (num_channels, num_samples),
                downmixed) at the session's ``sample_rate``; a NumPy array, a tensor or a list.
                Any length, including zero.

        Raises:
            AudioError: for non-finite samples or a bad shape or dtype.
            LifecycleError: after :meth:`flush` (call :meth:`reset` first).
        """
        if self._segmenter.is_finished:
            raise LifecycleError("VADStreamSession.push() after flush(); call reset() to start a new stream")
        if isinstance(chunk, (str, bytes, os.PathLike)):
            raise AudioError(
                f"VADStreamSession.push() takes samples (a NumPy array, tensor or list of float or int16 PCM at "
                f"{self.sample_rate} Hz), not a {type(chunk).__name__} such as a file path; decode the file first, "
                f"or run model.detect(path) on a whole file",
                source="stream",
            )
        if np.ndim(chunk) == 0:
            raise AudioError(
                "VADStreamSession.push() takes a 1-D chunk of samples (num_samples,), got a scalar; "
                "wrap a single sample as np.array([value])",
                source="stream",
            )
        if np.size(chunk) == 0:
            return []
        samples = load_audio((chunk, self.sample_rate)).samples
        if self._resampler is not None:
            samples = np.asarray(self._resampler.resample_chunk(samples), dtype=np.float32)
        return self._consume(samples, last=False)

    def flush(self) -> list[VADEvent]:
        """End the stream: score the zero-padded remainder and return the remaining boundaries.

        Raises:
            LifecycleError: when called twice without :meth:`reset`.
        """
        if self._segmenter.is_finished:
            raise LifecycleError("VADStreamSession.flush() called twice; call reset() to start a new stream")
        tail = np.zeros(0, dtype=np.float32)
        if self._resampler is not None:
            tail = np.asarray(self._resampler.resample_chunk(tail, last=True), dtype=np.float32)
        return self._consume(tail, last=True)

    def output(self, *, source: str = "stream") -> VADOutput:
        """The finished stream as a :class:`VADOutput` (probabilities included when the options ask).

        Raises:
            LifecycleError: before :meth:`flush`.
        """
        if not self._segmenter.is_finished:
            raise LifecycleError("VADStreamSession.output() needs a finished stream; call flush() first")
        return build_vad_output(
            self.probabilities,
            num_samples=self._num_samples,
            sample_rate=self.scorer.sample_rate,
            frame_num_samples=self.scorer.frame_num_samples,
            options=self.options,
            source=source,
            metadata=self.metadata,
            bounds=self._segmenter.bounds,
        )

    def _consume(self, samples: FloatArray, *, last: bool) -> list[VADEvent]:
        frame = self.scorer.frame_num_samples
        self._num_samples += int(samples.shape[0])
        buffer = np.concatenate([self._buffer, samples]) if self._buffer.size else samples
        if last and buffer.shape[0] % frame:
            buffer = np.concatenate([buffer, np.zeros(frame - buffer.shape[0] % frame, dtype=np.float32)])
        usable = buffer.shape[0] - buffer.shape[0] % frame
        events: list[VADEvent] = []
        if last and self._num_samples < frame:
            usable = 0  # a stream shorter than one frame is not scored (as in build_vad_output)
        if usable:
            probabilities = np.asarray(self.scorer.score(buffer[:usable].reshape(-1, frame)), dtype=np.float32)
            self._probabilities.append(probabilities)
            events += self._segmenter.push(probabilities.tolist(), samples_seen=self._num_samples)
        self._buffer = np.ascontiguousarray(buffer[usable:])
        if last:
            if self._num_samples == 0:
                self._segmenter.finish(0)
                return events
            events += self._segmenter.finish(self._num_samples)
        return events


__all__ = [
    "STREAM_BLOCK_S",
    "STREAM_FILE_MIN_DURATION_S",
    "FloatArray",
    "FrameScorer",
    "PreTrainedVADModel",
    "ResamplingConfig",
    "SpeechSegmenter",
    "VADEvent",
    "VADOptions",
    "VADStreamSession",
    "build_vad_output",
    "segment_score",
    "speech_bounds",
]
