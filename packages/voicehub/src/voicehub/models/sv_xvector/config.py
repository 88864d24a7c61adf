"""Model config and inference options of the ``sv_xvector`` integration (no torch imported)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from voicehub.core.config import Config
from voicehub.core.errors import ConfigError
from voicehub.registry.model_config import ModelConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class SVXVectorConfig(ModelConfig):
    """The ``sv_xvector`` wrapper's settings.

    A checkpoint carries its own encoder configuration (Hyperion ``model_cfg``); the size fields
    below only shape a *new* encoder built for training when no checkpoint is given.

    Attributes:
        sample_rate: the encoder's rate in Hz (16000); input at other rates is resampled.
        channels: SE-Res2Net width of a new encoder.
        embedding_dim: x-vector size of a new encoder.
        num_classes: training speakers of a new encoder's AAM-softmax head (0: no head).
    """

    config_type: ClassVar[str] = "sv_xvector"
    schema_version: ClassVar[int] = 1

    sample_rate: int = 16000
    channels: int = 512
    embedding_dim: int = 192
    num_classes: int = 0

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: naming the field.
        """
        ModelConfig.validate(self)
        if self.sample_rate != 16000:
            raise ConfigError(f"sv_xvector.sample_rate: the front end runs at 16000 Hz, got {self.sample_rate}")
        if self.channels <= 0 or self.channels % 8 or self.embedding_dim <= 0 or self.num_classes < 0:
            raise ConfigError(
                f"sv_xvector: channels must be a positive multiple of 8 (Res2Net groups), embedding_dim > 0 and "
                f"num_classes >= 0, got "
                f"{self.channels}, {self.embedding_dim}, {self.num_classes}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class SVXVectorOptions(Config):
    """Inference options.

    Attributes:
        threshold: decision threshold on the cosine similarity in [-1, 1]. There is no pretrained
            model to tune it on: set it from your own trials.
    """

    config_type: ClassVar[str] = "sv_xvector-options"
    schema_version: ClassVar[int] = 1

    threshold: float = 0.5

    def validate(self) -> None:
        """Check the threshold range.

        Raises:
            ConfigError: for a threshold outside [-1, 1].
        """
        Config.validate(self)
        if not -1.0 <= self.threshold <= 1.0:
            raise ConfigError(f"threshold is a cosine similarity in [-1, 1], got {self.threshold}", key="threshold")


__all__ = ["SVXVectorConfig", "SVXVectorOptions"]
