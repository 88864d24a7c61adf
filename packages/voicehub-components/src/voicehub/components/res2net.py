"""1-D convolution blocks of TDNN / ECAPA-TDNN speaker encoders.

* :class:`TDNNBlock`: dilated 1-D convolution -> ReLU -> BatchNorm (a TDNN layer, Snyder et al.,
  "X-vectors: robust DNN embeddings for speaker recognition", ICASSP 2018).
* :class:`Res2NetBlock1d`: Res2Net multi-scale convolution (Gao et al., TPAMI 2021): the channels
  are split into ``scale`` groups; group ``i > 0`` is convolved after adding group ``i - 1``'s output.
* :class:`SqueezeExcitation1d`: channel gating from the time average (Hu et al., CVPR 2018).
* :class:`SERes2NetBlock`: 1x1 TDNN -> Res2Net -> 1x1 TDNN -> SE, plus a residual connection:
  the block of ECAPA-TDNN (Desplanques et al., Interspeech 2020) and of Hyperion's
  ``resb_type: seres2bn`` 1-D ResNet.

All blocks take and return float tensors (batch, channels, num_frames).
"""

from __future__ import annotations

import torch
from torch import nn

from voicehub.core import ConfigError


class TDNNBlock(nn.Module):
    """Dilated Conv1d ('same' length) -> ReLU -> BatchNorm1d."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dilation: int = 1) -> None:
        super().__init__()
        if kernel_size % 2 != 1:
            raise ConfigError(f"TDNNBlock kernel_size must be odd to keep the length, got {kernel_size}")
        padding = dilation * (kernel_size - 1) // 2
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, dilation=dilation, padding=padding)
        self.activation = nn.ReLU()
        self.norm = nn.BatchNorm1d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (batch, in_channels, num_frames) to (batch, out_channels, num_frames)."""
        out: torch.Tensor = self.norm(self.activation(self.conv(x)))
        return out


class Res2NetBlock1d(nn.Module):
    """Res2Net multi-scale block; ``channels`` must be divisible by ``scale``."""

    def __init__(self, channels: int, *, scale: int, kernel_size: int, dilation: int) -> None:
        super().__init__()
        if scale < 1 or channels % scale:
            raise ConfigError(f"Res2NetBlock1d: channels ({channels}) must be divisible by scale ({scale})")
        self.scale = scale
        width = channels // scale
        self.blocks = nn.ModuleList(TDNNBlock(width, width, kernel_size, dilation) for _ in range(scale - 1))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Map (batch, channels, num_frames) to the same shape.

        ``mask`` (batch, 1, num_frames), 1 on valid frames, zeroes padded frames after every
        convolution so that they never leak into valid ones (batched equals one by one).
        """
        groups = torch.chunk(x, self.scale, dim=1)
        outputs = [groups[0]]
        previous: torch.Tensor | None = None
        for group, block in zip(groups[1:], self.blocks, strict=True):
            previous = block(group if previous is None else group + previous)
            if mask is not None:
                previous = previous * mask
            outputs.append(previous)
        return torch.cat(outputs, dim=1)


class SqueezeExcitation1d(nn.Module):
    """Scale each channel by a sigmoid gate computed from the (masked) time average."""

    def __init__(self, channels: int, bottleneck: int) -> None:
        super().__init__()
        self.reduce = nn.Conv1d(channels, bottleneck, 1)
        self.expand = nn.Conv1d(bottleneck, channels, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Gate (batch, channels, num_frames); ``mask`` (batch, 1, num_frames) marks valid frames."""
        if mask is None:
            mean = x.mean(dim=2, keepdim=True)
        else:
            mean = (x * mask).sum(dim=2, keepdim=True) / mask.sum(dim=2, keepdim=True).clamp_min(1.0)
        gate = torch.sigmoid(self.expand(torch.relu(self.reduce(mean))))
        return x * gate


class SERes2NetBlock(nn.Module):
    """ECAPA-TDNN block: TDNN 1x1 -> Res2Net -> TDNN 1x1 -> SE, with a residual connection."""

    def __init__(
        self, channels: int, *, kernel_size: int, dilation: int, scale: int = 8, se_bottleneck: int = 128
    ) -> None:
        super().__init__()
        self.pre = TDNNBlock(channels, channels, 1)
        self.res2net = Res2NetBlock1d(channels, scale=scale, kernel_size=kernel_size, dilation=dilation)
        self.post = TDNNBlock(channels, channels, 1)
        self.se = SqueezeExcitation1d(channels, se_bottleneck)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Map (batch, channels, num_frames) to the same shape.

        ``mask`` (batch, 1, num_frames), 1 on valid frames: padded frames are zeroed after each
        layer and excluded from the squeeze-excitation average.
        """
        keep = mask if mask is not None else torch.ones_like(x[:, :1])
        y = self.res2net(self.pre(x) * keep, mask)
        out: torch.Tensor = self.se(self.post(y) * keep, mask)
        return (out + x) * keep


__all__ = ["Res2NetBlock1d", "SERes2NetBlock", "SqueezeExcitation1d", "TDNNBlock"]
