"""Temporal pooling layers that turn frame features into one vector per utterance.

* :class:`StatisticsPooling`: mean and standard deviation over valid frames (the x-vector
  statistics pooling, Snyder et al., ICASSP 2018).
* :class:`AttentiveStatisticsPooling`: channel-wise attention weights over time, then the
  weighted mean and standard deviation; with ``global_context`` the attention also sees the
  utterance's mean and standard deviation (Okabe et al., Interspeech 2018; Desplanques et al.,
  Interspeech 2020).

Inputs are float tensors (batch, channels, num_frames) with an optional ``lengths`` tensor
(batch,) of valid frame counts, so that padded frames of a batch never enter the statistics.
"""

from __future__ import annotations

import torch
from torch import nn

from voicehub.core import AudioError

_VARIANCE_FLOOR = 1e-6


def frame_mask(lengths: torch.Tensor | None, num_frames: int, *, like: torch.Tensor) -> torch.Tensor:
    """Float mask (batch, 1, num_frames): 1 on valid frames, 0 on padding.

    Args:
        lengths: int tensor (batch,) of valid frame counts, or ``None`` for all frames valid.
        num_frames: padded length.
        like: tensor whose batch size, dtype and device the mask takes.

    Raises:
        AudioError: for lengths outside [1, num_frames] or of the wrong batch size.
    """
    batch = like.shape[0]
    if lengths is None:
        return torch.ones(batch, 1, num_frames, dtype=like.dtype, device=like.device)
    if lengths.shape != (batch,) or int(lengths.min()) < 1 or int(lengths.max()) > num_frames:
        raise AudioError(f"lengths must be (batch={batch},) with values in [1, {num_frames}], got {lengths.tolist()}")
    steps = torch.arange(num_frames, device=like.device)
    return (steps[None, :] < lengths.to(like.device)[:, None]).to(like.dtype)[:, None, :]


def weighted_statistics(x: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Weighted mean and standard deviation over time.

    Args:
        x: float (batch, channels, num_frames).
        weights: float (batch, channels or 1, num_frames), summing to 1 over time.

    Returns:
        ``(mean, std)``, each (batch, channels); the variance is floored at 1e-6.
    """
    mean = (x * weights).sum(dim=2)
    variance = ((x - mean[:, :, None]) ** 2 * weights).sum(dim=2)
    return mean, variance.clamp_min(_VARIANCE_FLOOR).sqrt()


class StatisticsPooling(nn.Module):
    """Mean and standard deviation over valid frames: (batch, C, T) -> (batch, 2C)."""

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Pool ``x`` (batch, channels, num_frames); ``lengths`` (batch,) counts valid frames."""
        mask = frame_mask(lengths, x.shape[2], like=x)
        mean, std = weighted_statistics(x, mask / mask.sum(dim=2, keepdim=True))
        return torch.cat([mean, std], dim=1)


class AttentiveStatisticsPooling(nn.Module):
    """Channel-wise attentive statistics pooling: (batch, C, T) -> (batch, 2C)."""

    def __init__(self, channels: int, attention_channels: int = 128, *, global_context: bool = True) -> None:
        super().__init__()
        self.global_context = global_context
        in_channels = channels * 3 if global_context else channels
        self.attention = nn.Sequential(
            nn.Conv1d(in_channels, attention_channels, 1),
            nn.ReLU(),
            nn.BatchNorm1d(attention_channels),
            nn.Tanh(),
            nn.Conv1d(attention_channels, channels, 1),
        )

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Pool ``x`` (batch, channels, num_frames); ``lengths`` (batch,) counts valid frames.

        Returns:
            float (batch, 2 * channels): attention-weighted mean, then standard deviation.
        """
        num_frames = x.shape[2]
        mask = frame_mask(lengths, num_frames, like=x)
        if self.global_context:
            mean, std = weighted_statistics(x, mask / mask.sum(dim=2, keepdim=True))
            context = torch.cat(
                [x, mean[:, :, None].expand(-1, -1, num_frames), std[:, :, None].expand(-1, -1, num_frames)], dim=1
            )
        else:
            context = x
        scores = self.attention(context).masked_fill(mask == 0, float("-inf"))
        mean, std = weighted_statistics(x, torch.softmax(scores, dim=2))
        return torch.cat([mean, std], dim=1)


__all__ = ["AttentiveStatisticsPooling", "StatisticsPooling", "frame_mask", "weighted_statistics"]
