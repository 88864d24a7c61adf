"""Configuration of the ECAPA-style x-vector speaker encoder.

Schema history (see :data:`XVectorConfig.migrations` and ``XVector.state_migrations``):

* version 1: the additive-angular-margin scale was the key ``s`` (Hyperion's pre-2022 name),
  and the front end's Hann ``window`` and mel ``filters`` were stored as tensors
  (``frontend.window``, ``frontend.filters``) in the state dict.
* version 2: ``s`` is ``cos_scale`` (Hyperion's current name); the window and filters are
  computed from ``frontend`` and are not stored (non-persistent buffers).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from voicehub.components.mel_scale import MelSpectrogramConfig
from voicehub.core import ConfigError, Migration
from voicehub.hyperion.torch.config import HyperTorchConfig


def _fbank() -> MelSpectrogramConfig:
    # 80 log-mel bands, 25 ms Hann window in a 512-point FFT, 10 ms hop, 20-7600 Hz (Kaldi-style fbank).
    return MelSpectrogramConfig(
        sample_rate=16000, n_fft=512, win_length=400, hop_length=160, num_mel_bins=80, f_min=20.0, f_max=7600.0,
        mel_scale="htk", mel_norm=None, log=True,
    )  # fmt: skip


def _rename_s_to_cos_scale(cfg: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: ``s`` became ``cos_scale`` (as in Hyperion's ``XVector``)."""
    if "s" in cfg:
        if "cos_scale" in cfg:
            raise ConfigError("x-vector config version 1 holds both 's' and 'cos_scale'; keep one", key="s")
        cfg["cos_scale"] = cfg.pop("s")
    return cfg


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class XVectorConfig(HyperTorchConfig):
    """ECAPA-TDNN-style x-vector settings.

    Attributes:
        frontend: log-mel front end; features are mean-normalised over each utterance.
        channels: width of the SE-Res2Net blocks.
        dilations: one SE-Res2Net block per entry, with that dilation (kernel 3).
        res2net_scale: Res2Net groups per block (``channels`` must be divisible by it).
        se_bottleneck: squeeze-excitation bottleneck width.
        aggregation_channels: width of the 1x1 layer joining the blocks' outputs.
        attention_channels: hidden width of attentive statistics pooling.
        embedding_dim: x-vector size.
        num_classes: training speakers for the AAM-softmax head; 0 builds no head.
        cos_scale: AAM-softmax scale ``s`` (was the key ``s`` in version 1).
        margin: AAM-softmax additive angular margin in radians.
    """

    config_type: ClassVar[str] = "xvector"
    schema_version: ClassVar[int] = 2
    migrations: ClassVar[Mapping[int, Migration]] = {1: _rename_s_to_cos_scale}

    frontend: MelSpectrogramConfig = dataclasses.field(default_factory=_fbank)
    channels: int = 512
    dilations: tuple[int, ...] = (2, 3, 4)
    res2net_scale: int = 8
    se_bottleneck: int = 128
    aggregation_channels: int = 1536
    attention_channels: int = 128
    embedding_dim: int = 192
    num_classes: int = 0
    cos_scale: float = 30.0
    margin: float = 0.2

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: naming the field, the allowed range and the value.
        """
        HyperTorchConfig.validate(self)
        for name in ("channels", "res2net_scale", "se_bottleneck", "aggregation_channels", "attention_channels"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"xvector.{name} must be > 0, got {getattr(self, name)}", key=name)
        if self.embedding_dim <= 0 or self.num_classes < 0:
            raise ConfigError(
                f"xvector: embedding_dim must be > 0 and num_classes >= 0, got {self.embedding_dim}, {self.num_classes}"
            )
        if self.channels % self.res2net_scale:
            raise ConfigError(
                f"xvector.channels ({self.channels}) must be divisible by res2net_scale ({self.res2net_scale})",
                key="channels",
            )
        if not self.dilations or any(d < 1 for d in self.dilations):
            raise ConfigError(f"xvector.dilations must be a non-empty tuple of ints >= 1, got {self.dilations}")
        if self.cos_scale <= 0 or not 0 <= self.margin < 1.5:
            raise ConfigError(
                f"xvector: cos_scale must be > 0 and margin in [0, 1.5) rad, got {self.cos_scale}, {self.margin}"
            )
        if not self.frontend.log:
            raise ConfigError("xvector.frontend.log must be true: the encoder reads log-mel features", key="frontend")

    @property
    def sample_rate(self) -> int:
        """Input rate in Hz."""
        return self.frontend.sample_rate


__all__ = ["XVectorConfig"]
