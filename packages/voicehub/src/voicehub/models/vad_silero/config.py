"""Model config of the ``vad_silero`` integration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from voicehub.architectures.silero.config import SUPPORTED_SAMPLE_RATES
from voicehub.core.errors import ConfigError
from voicehub.registry.model_config import ModelConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class VADSileroConfig(ModelConfig):
    """How the ``vad_silero`` wrapper treats its input.

    Attributes:
        sample_rate: the rate (Hz) audio at other rates is resampled to: 16000 (default) or 8000.
        use_8khz_branch: run 8 kHz audio on the 8 kHz branch instead of resampling it to 16 kHz
            (when the checkpoint has that branch).
        resample: resample audio at rates without a branch; when false such audio raises
            :class:`~voicehub.core.errors.SampleRateError` instead.
    """

    config_type: ClassVar[str] = "vad_silero"
    schema_version: ClassVar[int] = 1

    sample_rate: int = 16000
    use_8khz_branch: bool = True
    resample: bool = True

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: for a sample rate other than 16000 or 8000.
        """
        ModelConfig.validate(self)
        if self.sample_rate not in SUPPORTED_SAMPLE_RATES:
            raise ConfigError(
                f"vad_silero.sample_rate: expected one of {list(SUPPORTED_SAMPLE_RATES)} Hz, got {self.sample_rate!r}",
                config_type=self.config_type,
                key="sample_rate",
            )


__all__ = ["VADSileroConfig"]
