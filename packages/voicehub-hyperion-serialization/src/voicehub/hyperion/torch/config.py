"""``HyperTorchConfig``: the fields every ``HyperTorchModel`` config has (no torch imported).

Kept apart from :mod:`voicehub.hyperion.torch.model` so that architecture configs built on it
(and the model configs that nest them) can be imported without torch.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from voicehub.core import Config, ConfigError


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HyperTorchConfig(Config):
    """Fields every :class:`HyperTorchModel` config has.

    Attributes:
        bias_weight_decay: weight decay for biases and other 1-D parameters (norm scales);
            ``None`` puts every parameter in one optimizer group with the optimizer's decay.
    """

    config_type: ClassVar[str] = "hyper-torch-model"

    bias_weight_decay: float | None = None

    def validate(self) -> None:
        """Check types, then that ``bias_weight_decay`` is ``None`` or >= 0.

        Raises:
            ConfigError: naming the field and the value.
        """
        Config.validate(self)
        if self.bias_weight_decay is not None and self.bias_weight_decay < 0:
            raise ConfigError(
                f"{self.config_type}.bias_weight_decay must be >= 0 or None, got {self.bias_weight_decay}",
                config_type=self.config_type,
                key="bias_weight_decay",
            )


__all__ = ["HyperTorchConfig"]
