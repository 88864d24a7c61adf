"""Model config and inference options of the ``asr_moonshine`` integration (no torch imported).

The model config nests the graph's own config (:class:`~voicehub.architectures.moonshine.MoonshineConfig`,
base-en by default, the only size with weights here). The options are the shared
:class:`~voicehub.speech_recognition.ASROptions`, narrowed to what Moonshine does: English speech,
transcription, greedy decoding (one beam, temperature 0), no word times.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from voicehub.architectures.moonshine.config import SAMPLE_RATE, MoonshineConfig
from voicehub.core.errors import ConfigError
from voicehub.registry.model_config import ModelConfig
from voicehub.speech_recognition import ASROptions

LANGUAGE = "en"
"""The one language of Moonshine base-en."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ASRMoonshineConfig(ModelConfig):
    """How the ``asr_moonshine`` wrapper builds its graph.

    Attributes:
        graph: the sizes of the encoder-decoder the checkpoint is loaded into (base-en).
    """

    config_type: ClassVar[str] = "asr_moonshine"
    schema_version: ClassVar[int] = 1

    graph: MoonshineConfig = dataclasses.field(default_factory=MoonshineConfig)

    @property
    def sample_rate(self) -> int:
        """Moonshine's input rate, 16000 Hz; input at other rates is resampled (soxr)."""
        return SAMPLE_RATE


@dataclass(frozen=True, slots=True, kw_only=True)
class ASRMoonshineOptions(ASROptions):
    """Moonshine's inference options: the shared ASR options with the values the model supports.

    Attributes:
        temperature: ``(0.0,)``: greedy decoding; Moonshine has no sampling or temperature fallback here.
        word_timestamps: accepted for a uniform command line, but Moonshine emits neither timestamp
            tokens nor alignment heads: segments carry no words, and every output's metadata says
            so (``"word_timestamps": "unavailable"``). Segment times are those of the windows
            (the whole input, or each voice-activity chunk of a long one).
    """

    config_type: ClassVar[str] = "asr-moonshine-options"
    schema_version: ClassVar[int] = 1

    temperature: tuple[float, ...] = (0.0,)

    def validate(self) -> None:
        """Check the shared ranges, then what Moonshine supports.

        Raises:
            ConfigError: naming the option, what Moonshine supports and the value given.
        """
        ASROptions.validate(self)

        def fail(key: str, expected: str) -> None:
            raise ConfigError(
                f"asr option {key}: Moonshine base-en supports {expected}, got {getattr(self, key)!r}",
                config_type=self.config_type,
                key=key,
            )

        if self.language not in (None, LANGUAGE):
            fail("language", f"English only ({LANGUAGE!r} or None); use a multilingual model such as whisper-base")
        if self.task != "transcribe":
            fail("task", "'transcribe' only (it cannot translate)")
        if self.beam_size != 1:
            fail("beam_size", "greedy decoding only (beam_size=1)")
        if any(t != 0.0 for t in self.temperature):
            fail("temperature", "greedy decoding only (temperature 0.0, no fallback)")


__all__ = ["LANGUAGE", "ASRMoonshineConfig", "ASRMoonshineOptions"]
