"""Model config and inference options of the ``sv_xvector`` integration (no torch imported).

Schema history of :class:`SVXVectorConfig`:

* version 1: the sizes of a new encoder were copied into the wrapper config as ``channels``,
  ``embedding_dim`` and ``num_classes`` (next to ``sample_rate``).
* version 2: the wrapper config nests the graph's own config, ``encoder``
  (:class:`~voicehub.architectures.xvector.XVectorConfig`); :func:`_nest_encoder_config` migrates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from voicehub.architectures.xvector.config import XVectorConfig
from voicehub.core.config import Migration
from voicehub.core.errors import ConfigError
from voicehub.registry.model_config import ModelConfig
from voicehub.speaker_verification import SpeakerScoringOptions

SAMPLE_RATE = 16000
"""Rate (Hz) of the x-vector front end; other rates are resampled to it."""


def _nest_encoder_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: ``channels``, ``embedding_dim``, ``num_classes`` move into ``encoder``; ``sample_rate`` goes."""
    rate = cfg.pop("sample_rate", SAMPLE_RATE)
    if rate != SAMPLE_RATE:
        raise ConfigError(f"sv_xvector version 1: sample_rate must be {SAMPLE_RATE}, got {rate!r}", key="sample_rate")
    encoder = {key: cfg.pop(key) for key in ("channels", "embedding_dim", "num_classes") if key in cfg}
    if encoder:
        cfg["encoder"] = encoder
    return cfg


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SVXVectorConfig(ModelConfig):
    """The ``sv_xvector`` wrapper's settings.

    A checkpoint carries its own encoder configuration (Hyperion ``model_cfg``); ``encoder``
    shapes only a *new* encoder built for training when no checkpoint is given.

    Attributes:
        encoder: the graph config of a new encoder (SE-Res2Net width, x-vector size, AAM-softmax
            training speakers, front end...); its front end must run at 16000 Hz.
    """

    config_type: ClassVar[str] = "sv_xvector"
    schema_version: ClassVar[int] = 2
    migrations: ClassVar[Mapping[int, Migration]] = {1: _nest_encoder_config}

    encoder: XVectorConfig = dataclasses.field(default_factory=XVectorConfig)

    def validate(self) -> None:
        """Check types, and that the encoder's front end runs at 16000 Hz.

        Raises:
            ConfigError: naming the field.
        """
        ModelConfig.validate(self)
        if self.encoder.sample_rate != SAMPLE_RATE:
            raise ConfigError(
                f"sv_xvector.encoder.frontend.sample_rate: the wrapper runs at {SAMPLE_RATE} Hz, "
                f"got {self.encoder.sample_rate}",
                config_type=self.config_type,
                key="encoder",
            )

    @property
    def sample_rate(self) -> int:
        """The encoder's input rate in Hz (16000); input at other rates is resampled."""
        return self.encoder.sample_rate


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SVXVectorOptions(SpeakerScoringOptions):
    """Inference options (see :class:`~voicehub.speaker_verification.SpeakerScoringOptions`).

    Attributes:
        threshold: decision threshold on the cosine similarity in [-1, 1]. There is no pretrained
            model to tune it on: set it from your own trials.
    """

    config_type: ClassVar[str] = "sv_xvector-options"
    schema_version: ClassVar[int] = 1

    threshold: float = 0.5


__all__ = ["SAMPLE_RATE", "SVXVectorConfig", "SVXVectorOptions"]
