"""The speech-recognition task: :class:`PreTrainedASRModel`.

An ASR integration subclasses it, sets ``config_class`` and ``options_class``, returns its runtime
bundle from ``_load_runtime`` (for an encoder-decoder: the graph as ``module``, the log-mel front
end as ``front_end``, the tokenizer as ``tokenizer`` and the decoding loop or its options as
``decoder``) and implements ``_transcribe``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, overload

from voicehub.audio_input import PreTrainedAudioModel
from voicehub.core.audio import AudioLike, Waveform
from voicehub.core.outputs import ASROutput
from voicehub.core.tasks import SpeechTask
from voicehub.modeling import ConfigT, OptionsT, RuntimeT


class PreTrainedASRModel(PreTrainedAudioModel[ConfigT, OptionsT, RuntimeT]):
    """Base of speech-recognition wrappers; implement ``_transcribe``."""

    task: ClassVar[SpeechTask] = SpeechTask.AUTOMATIC_SPEECH_RECOGNITION
    output_type: ClassVar[type] = ASROutput
    _task_method: ClassVar[str] = "transcribe"

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
            audio: see :class:`PreTrainedAudioModel`.
            sample_rate: rate in Hz of array inputs.
            options: inference options replacing the defaults.
            **overrides: individual options (validated before loading).

        Returns:
            An :class:`~voicehub.core.ASROutput`, or a list of them for a list input.

        Raises:
            UnknownInferenceOptionError: for an unknown option (a ``TypeError``).
            InferenceOptionError, AudioError, SampleRateError: for invalid options or audio.
        """
        resolved = self.resolve_options(options, **overrides)
        waveforms, is_batch = self.prepare_audio(audio, sample_rate=sample_rate)
        outputs = self._run(self._transcribe, waveforms, resolved, ASROutput)
        return outputs if is_batch else outputs[0]

    def _transcribe(self, runtime: RuntimeT, waveforms: Sequence[Waveform], options: OptionsT) -> Sequence[ASROutput]:
        """Return one :class:`ASROutput` per waveform."""
        raise NotImplementedError(f"{type(self).__name__} must implement _transcribe()")


__all__ = ["PreTrainedASRModel"]
