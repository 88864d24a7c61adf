"""The base class of model configs: a closed :class:`~voicehub.core.Config` tagged with its model type."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, Self

from voicehub.core.config import Config
from voicehub.core.errors import ConfigError


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelConfig(Config):
    """Config of one model integration; its ``config_type`` is the registered model type.

    The serialized form (``config.json``) carries ``"model_type"`` next to ``"type"`` so that
    ``AutoConfig.from_pretrained`` can pick the registered class from the file alone. Like
    every config it is closed: unknown keys are refused with the list of known ones.

    Example::

        @dataclass(frozen=True, slots=True, kw_only=True)
        class AuroraConfig(ModelConfig):
            config_type: ClassVar[str] = "aurora"
            sample_rate: int = 24000
    """

    config_type: ClassVar[str] = "model"

    @property
    def model_type(self) -> str:
        """The registered model type (equal to ``config_type``)."""
        return self.config_type

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form: ``type``, ``model_type``, ``schema_version`` and every field."""
        data = super().to_dict()
        return {"type": data.pop("type"), "model_type": self.config_type, **data}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Build the config from its serialized form (see :meth:`Config.from_dict`).

        Raises:
            ConfigError: when ``model_type`` is present and names another model.
            UnknownConfigKeyError: for unknown keys, listing the known ones.
        """
        if isinstance(data, Mapping) and "model_type" in data:
            payload = dict(data)
            model_type = payload.pop("model_type")
            if model_type != cls.config_type:
                raise ConfigError(
                    f"config for model_type {model_type!r} cannot be loaded as {cls.__name__} "
                    f"(model_type {cls.config_type!r}); use AutoConfig.from_pretrained to pick the class",
                    config_type=cls.config_type,
                    key="model_type",
                )
            data = payload
        return super().from_dict(data)


__all__ = ["ModelConfig"]
