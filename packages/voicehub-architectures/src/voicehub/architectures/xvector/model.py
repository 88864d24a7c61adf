"""ECAPA-TDNN-style x-vector speaker encoder (Desplanques et al., "ECAPA-TDNN: Emphasized Channel
Attention, Propagation and Aggregation in TDNN Based Speaker Verification", Interspeech 2020),
trainable with an additive angular margin softmax head (Deng et al., "ArcFace", CVPR 2019).

This is the graph Hyperion builds as ``ResNet1dXVector`` with ``resb_type: seres2bn``,
multi-layer aggregation and channel-wise attentive pooling, in VoiceHub's own layout:

    waveform (batch, num_samples) at 16 kHz
      -> log-mel (batch, num_frames, num_mel_bins), mean-normalised per utterance
      -> TDNN k=5 -> SE-Res2Net blocks (k=3, dilations 2, 3, 4) -> concat -> TDNN 1x1
      -> attentive statistics pooling -> BatchNorm -> linear -> x-vector (batch, embedding_dim)

No pretrained weights are shipped: this is a trainable target (see ``docs/speaker.md``).
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import nn

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.xvector.config import XVectorConfig
from voicehub.components.filterbank import MelSpectrogram
from voicehub.components.pooling import AttentiveStatisticsPooling, frame_mask
from voicehub.components.res2net import SERes2NetBlock, TDNNBlock
from voicehub.core import AudioError, ConfigError
from voicehub.hyperion.torch import HyperTorchModel, StateMigration

_STORED_FRONTEND_BUFFERS = ("frontend.window", "frontend.filters")


def _drop_stored_frontend(config: object, state: dict[str, torch.Tensor], source: str) -> dict[str, torch.Tensor]:
    """Version 1 -> 2: the front end's window and filters became computed, non-persistent buffers.

    The stored tensors are compared with the ones the config computes; a difference means the
    checkpoint was trained with another front end, which is refused rather than silently replaced.
    """
    if not isinstance(config, XVectorConfig):
        raise ConfigError(f"x-vector state migration needs an XVectorConfig, got {type(config).__name__}")
    frontend = MelSpectrogram(config.frontend)
    computed = {"frontend.window": frontend.window, "frontend.filters": frontend.filters}
    for key in _STORED_FRONTEND_BUFFERS:
        stored = state.pop(key, None)
        if stored is None:
            continue
        reference = computed[key]
        if stored.shape != reference.shape or not torch.allclose(stored.float(), reference, rtol=1e-5, atol=1e-7):
            raise CheckpointMismatchError(
                f"{source}: stored {key} {tuple(stored.shape)} differs from the one computed from the config's "
                f"frontend {tuple(reference.shape)}; this checkpoint used another front end",
                path=source,
                mismatched=[(key, tuple(reference.shape), tuple(stored.shape))],
            )
    return state


class XVector(HyperTorchModel):
    """ECAPA-style x-vector :class:`~voicehub.hyperion.torch.HyperTorchModel`.

    Training modes: ``"full"``, ``"frozen"`` and ``"ft-embed-affine"`` (only the embedding
    layer and the classification head train, as in Hyperion's ``XVector``).
    """

    config_class: ClassVar[type[XVectorConfig]] = XVectorConfig
    state_migrations: ClassVar[dict[int, StateMigration]] = {1: _drop_stored_frontend}
    config: XVectorConfig

    def __init__(self, config: XVectorConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.frontend = MelSpectrogram(cfg.frontend)
        self.stem = TDNNBlock(cfg.frontend.num_mel_bins, cfg.channels, 5)
        self.blocks = nn.ModuleList(
            SERes2NetBlock(
                cfg.channels, kernel_size=3, dilation=d, scale=cfg.res2net_scale, se_bottleneck=cfg.se_bottleneck
            )
            for d in cfg.dilations
        )
        self.aggregate = TDNNBlock(cfg.channels * len(cfg.dilations), cfg.aggregation_channels, 1)
        self.pooling = AttentiveStatisticsPooling(cfg.aggregation_channels, cfg.attention_channels)
        self.pool_norm = nn.BatchNorm1d(cfg.aggregation_channels * 2)
        self.embedding = nn.Linear(cfg.aggregation_channels * 2, cfg.embedding_dim)
        self.head_weight: nn.Parameter | None
        if cfg.num_classes:
            self.head_weight = nn.Parameter(torch.empty(cfg.num_classes, cfg.embedding_dim))
            nn.init.xavier_uniform_(self.head_weight)
        else:
            self.register_parameter("head_weight", None)

    @property
    def sample_rate(self) -> int:
        """Input rate in Hz."""
        return self.config.sample_rate

    @classmethod
    def valid_train_modes(cls) -> tuple[str, ...]:
        """``"full"``, ``"frozen"`` and ``"ft-embed-affine"``."""
        return (*super().valid_train_modes(), "ft-embed-affine")

    def _apply_train_mode(self, mode: str) -> None:
        if mode != "ft-embed-affine":
            super()._apply_train_mode(mode)
            return
        self.freeze()
        for param in self.embedding.parameters():
            param.requires_grad_(True)
        if self.head_weight is not None:
            self.head_weight.requires_grad_(True)

    def features(
        self, waveform: torch.Tensor, lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Log-mel features with the utterance mean removed.

        Args:
            waveform: float (batch, num_samples) at ``sample_rate`` Hz, zero-padded.
            lengths: int (batch,) valid samples per row, or ``None`` when no row is padded.

        Returns:
            ``(features, frame_lengths)``: float (batch, num_frames, num_mel_bins) and int
            (batch,) valid frames (``None`` when ``lengths`` is ``None``).

        Raises:
            AudioError: for a waveform that is not (batch, num_samples) or lengths of the wrong shape.
        """
        if waveform.ndim != 2 or waveform.shape[1] == 0:
            raise AudioError(f"XVector expects waveform (batch, num_samples), got {tuple(waveform.shape)}")
        feats = self.frontend(waveform)
        frame_lengths = None
        if lengths is not None:
            if lengths.shape != (waveform.shape[0],):
                raise AudioError(f"lengths must be (batch={waveform.shape[0]},), got {tuple(lengths.shape)}")
            frame_lengths = torch.clamp(lengths // self.config.frontend.hop_length + 1, max=feats.shape[1])
        mask = frame_mask(frame_lengths, feats.shape[1], like=feats).transpose(1, 2)
        mean = (feats * mask).sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True)
        return (feats - mean) * mask, frame_lengths

    def forward(self, waveform: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Compute x-vectors.

        Args:
            waveform: float (batch, num_samples) at ``sample_rate`` Hz, zero-padded after each row's end.
            lengths: int (batch,) valid samples per row; ``None`` when no row is padded.

        Returns:
            float (batch, embedding_dim), not normalised.

        Raises:
            AudioError: for inputs of the wrong shape.
        """
        feats, frame_lengths = self.features(waveform, lengths)
        mask = frame_mask(frame_lengths, feats.shape[1], like=feats)
        x = self.stem(feats.transpose(1, 2)) * mask
        outputs = []
        for block in self.blocks:
            x = block(x, mask) * mask
            outputs.append(x)
        x = self.aggregate(torch.cat(outputs, dim=1))
        pooled = self.pool_norm(self.pooling(x, frame_lengths))
        out: torch.Tensor = self.embedding(pooled)
        return out

    def logits(self, embeddings: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        """Additive-angular-margin softmax logits.

        Args:
            embeddings: float (batch, embedding_dim).
            labels: int (batch,) speaker indices; when given, the margin is added to each row's
                target angle (training); ``None`` gives plain scaled cosines (inference).

        Returns:
            float (batch, num_classes): ``cos_scale * cos(theta + margin * onehot)``.

        Raises:
            ConfigError: when the model was built with ``num_classes=0``.
        """
        if self.head_weight is None:
            raise ConfigError("XVector has no classification head: build it with num_classes > 0 to train it")
        cosine = nn.functional.normalize(embeddings, dim=1) @ nn.functional.normalize(self.head_weight, dim=1).T
        if labels is not None:
            cosine = cosine.clamp(-1.0 + 1e-7, 1.0 - 1e-7)
            target = torch.cos(torch.acos(cosine) + self.config.margin)
            # Keep the logit monotonic where theta + margin would pass pi (ArcFace's easy-margin fallback).
            threshold = math.cos(math.pi - self.config.margin)
            target = torch.where(
                cosine > threshold, target, cosine - math.sin(math.pi - self.config.margin) * self.config.margin
            )
            onehot = nn.functional.one_hot(labels, cosine.shape[1]).to(cosine.dtype)
            cosine = cosine * (1 - onehot) + target * onehot
        return cosine * self.config.cos_scale

    def loss(self, waveform: torch.Tensor, labels: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """AAM-softmax cross entropy of a labelled batch (scalar)."""
        return nn.functional.cross_entropy(self.logits(self(waveform, lengths), labels), labels)


__all__ = ["XVector"]
