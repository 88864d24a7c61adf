"""The base of every wrapper whose input is audio (ASR, VAD, SV): decoding, downmixing, resampling.

:class:`PreTrainedAudioModel` accepts a path (wav, flac, ogg, mp3), a NumPy array or tensor with
``sample_rate=``, a ``(array, sample_rate)`` tuple, a :class:`~voicehub.core.Waveform`, or a
``list`` of these (a batch, answered with a list). Audio at a rate the model does not support is
resampled to its first supported rate on purpose (STYLE rule 8), or refused with both rates in
the message by :meth:`PreTrainedAudioModel.check_input_rate`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from voicehub.core.audio import AudioLike, Waveform, check_sample_rate, load_audio_batch
from voicehub.modeling import ConfigT, OptionsT, PreTrainedSpeechModel, RuntimeT


@runtime_checkable
class SampleRateConfig(Protocol):
    """A model config that states the one rate (Hz) its model runs at."""

    @property
    def sample_rate(self) -> int:
        """The rate in Hz."""
        ...


STREAM_FILE_MIN_DURATION_S = 120.0
"""Files longer than this (seconds) are processed block by block by models that can (``detect_file``,
``embed_file``) instead of being decoded whole, so memory does not grow with their duration."""

STREAM_BLOCK_S = 30.0
"""Seconds of a file decoded at once on the block-by-block path (1.9 MB of float32 at 16 kHz)."""


class PreTrainedAudioModel(PreTrainedSpeechModel[ConfigT, OptionsT, RuntimeT]):
    """Base of wrappers whose input is audio; see the module docstring for the accepted inputs."""

    @property
    def supported_sample_rates(self) -> tuple[int, ...]:
        """Sample rates in Hz the runtime accepts, preferred first (default: ``config.sample_rate``).

        An empty tuple means any rate.
        """
        return (self.config.sample_rate,) if isinstance(self.config, SampleRateConfig) else ()

    def prepare_audio(
        self, audio: AudioLike | list[AudioLike], *, sample_rate: int | None = None
    ) -> tuple[list[Waveform], bool]:
        """Decode, downmix and (if needed) resample the inputs.

        Returns:
            ``(waveforms, is_batch)``.

        Raises:
            AudioError: for unusable audio (see :func:`voicehub.core.load_audio`).
            SampleRateError: for an array without ``sample_rate``.
        """
        waveforms, is_batch = load_audio_batch(audio, sample_rate=sample_rate)
        return self._to_supported_rate(waveforms), is_batch

    def _to_supported_rate(self, waveforms: list[Waveform]) -> list[Waveform]:
        """Resample each waveform at an unsupported rate to the first supported rate."""
        rates = self.supported_sample_rates
        if not rates:
            return waveforms
        return [w if w.sample_rate in rates else w.with_sample_rate(rates[0]) for w in waveforms]

    def check_input_rate(self, sample_rate: object, source: str) -> int:
        """Refuse a rate outside :attr:`supported_sample_rates` (used when resampling is off).

        Returns:
            The rate in Hz.

        Raises:
            SampleRateError: naming both the rate given and the supported ones.
        """
        return check_sample_rate(
            sample_rate,
            source=source,
            supported=self.supported_sample_rates,
            runs=type(self).__name__,
            why=f"resampling is off ({type(self.config).__name__}(resample=False))",
            fix="resample the audio or enable resample",
        )


__all__ = ["STREAM_BLOCK_S", "STREAM_FILE_MIN_DURATION_S", "PreTrainedAudioModel", "SampleRateConfig"]
