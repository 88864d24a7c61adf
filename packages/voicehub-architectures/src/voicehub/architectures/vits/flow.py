"""The normalizing flow of VITS (reverse direction): mean-only affine couplings over WaveNet stacks.

Kim et al. 2021, section 2.5.2 (the flow f_theta; jaywalnut310/vits ``modules.py`` ``WN`` and
``ResidualCouplingLayer``, MIT). Module and parameter names follow upstream so checkpoints map one
to one.
"""

from __future__ import annotations

from typing import cast

import torch
from torch import Tensor, nn

from voicehub.architectures.vits.config import VITSConfig
from voicehub.architectures.vits.layers import PointwiseConv1d


class WaveNet(nn.Module):
    """Non-causal WaveNet (gated tanh-sigmoid units, residual and skip 1x1 convs), masked."""

    def __init__(self, channels: int, kernel_size: int, dilation_rate: int, num_layers: int, cond: int) -> None:
        super().__init__()
        self.channels = channels
        self.in_layers = nn.ModuleList()
        self.res_skip_layers = nn.ModuleList()
        for i in range(num_layers):
            dilation = dilation_rate**i
            self.in_layers.append(
                nn.Conv1d(
                    channels,
                    2 * channels,
                    kernel_size,
                    dilation=dilation,
                    padding=(kernel_size * dilation - dilation) // 2,
                )
            )
            self.res_skip_layers.append(PointwiseConv1d(channels, 2 * channels if i < num_layers - 1 else channels, 1))
        if cond:
            self.cond_layer = PointwiseConv1d(cond, 2 * channels * num_layers, 1)

    def forward(self, x: Tensor, x_mask: Tensor, g: Tensor | None) -> Tensor:
        cond = self.cond_layer(g) if g is not None else None
        output = torch.zeros_like(x)
        last = len(self.in_layers) - 1
        for i, (in_layer, res_skip) in enumerate(zip(self.in_layers, self.res_skip_layers, strict=True)):
            x_in = in_layer(x)
            if cond is not None:
                x_in = x_in + cond[:, 2 * self.channels * i : 2 * self.channels * (i + 1)]
            acts = torch.tanh(x_in[:, : self.channels]) * torch.sigmoid(x_in[:, self.channels :])
            res_skip_acts = res_skip(acts)
            if i < last:
                x = (x + res_skip_acts[:, : self.channels]) * x_mask
                output = output + res_skip_acts[:, self.channels :]
            else:
                output = output + res_skip_acts
        return output * x_mask


class ResidualCouplingLayer(nn.Module):
    """Mean-only affine coupling: the second half of the channels is shifted by a WaveNet of the first."""

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        self.half_channels = config.inter_channels // 2
        self.pre = PointwiseConv1d(self.half_channels, config.hidden_channels, 1)
        self.enc = WaveNet(
            config.hidden_channels,
            config.flow_kernel_size,
            config.flow_dilation_rate,
            config.flow_num_layers,
            config.speaker_channels,
        )
        self.post = PointwiseConv1d(config.hidden_channels, self.half_channels, 1)

    def inverse(self, x: Tensor, x_mask: Tensor, g: Tensor | None) -> Tensor:
        x0, x1 = x[:, : self.half_channels], x[:, self.half_channels :]
        mean = self.post(self.enc(self.pre(x0) * x_mask, x_mask, g)) * x_mask
        return torch.cat([x0, (x1 - mean) * x_mask], 1)


class ResidualCouplingBlock(nn.Module):
    """The normalizing flow: couplings at even indices of ``flows``, channel flips between them."""

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        self.flows = nn.ModuleDict(
            {str(2 * i): ResidualCouplingLayer(config) for i in range(config.flow_num_couplings)}
        )

    def couplings(self) -> list[ResidualCouplingLayer]:
        """The couplings in inverse order."""
        return [cast(ResidualCouplingLayer, self.flows[name]) for name in sorted(self.flows, key=int, reverse=True)]

    def inverse(self, z: Tensor, y_mask: Tensor, g: Tensor | None) -> Tensor:
        """Latent frames z_p (batch, C, T) -> z (batch, C, T); ``y_mask`` (batch, 1, T), ``g`` (batch, S, 1) or None."""
        for layer in self.couplings():
            z = layer.inverse(torch.flip(z, [1]), y_mask, g)
        return z


__all__ = ["ResidualCouplingBlock", "ResidualCouplingLayer", "WaveNet"]
