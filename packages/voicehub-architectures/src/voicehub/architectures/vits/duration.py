"""VITS duration predictors (inference direction): the stochastic one (a flow over noise conditioned
on the text encoder's states) and the deterministic one.

Kim et al. 2021, section 2.3 (jaywalnut310/vits ``models.py`` ``StochasticDurationPredictor`` and
``DurationPredictor``, ``modules.py`` ``DDSConv``/``ConvFlow``/``ElementwiseAffine``,
``transforms.py`` rational-quadratic splines, Durkan et al. 2019; MIT). Module and parameter names
follow upstream so checkpoints map one to one.
"""

from __future__ import annotations

import math
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.vits.config import DDS_NUM_LAYERS, SPLINE_NUM_BINS, SPLINE_TAIL_BOUND, VITSConfig
from voicehub.architectures.vits.layers import LayerNorm, PointwiseConv1d

SPLINE_MIN_BIN = 1e-3
"""Smallest bin width, height and derivative of the rational-quadratic spline (upstream default)."""


class DDSConv(nn.Module):
    """Dilated depth-separable convolutions (dilation 1, k, k^2), each LayerNorm + GELU, residual."""

    def __init__(self, channels: int, kernel_size: int) -> None:
        super().__init__()
        self.convs_sep = nn.ModuleList()
        self.convs_1x1 = nn.ModuleList()
        self.norms_1 = nn.ModuleList()
        self.norms_2 = nn.ModuleList()
        for i in range(DDS_NUM_LAYERS):
            dilation = kernel_size**i
            self.convs_sep.append(
                nn.Conv1d(
                    channels,
                    channels,
                    kernel_size,
                    groups=channels,
                    dilation=dilation,
                    padding=(kernel_size * dilation - dilation) // 2,
                )
            )
            self.convs_1x1.append(PointwiseConv1d(channels, channels, 1))
            self.norms_1.append(LayerNorm(channels))
            self.norms_2.append(LayerNorm(channels))

    def forward(self, x: Tensor, x_mask: Tensor, g: Tensor | None = None) -> Tensor:
        if g is not None:
            x = x + g
        for conv_sep, conv_1x1, norm_1, norm_2 in zip(
            self.convs_sep, self.convs_1x1, self.norms_1, self.norms_2, strict=True
        ):
            y = F.gelu(norm_1(conv_sep(x * x_mask)))
            x = x + F.gelu(norm_2(conv_1x1(y)))
        return x * x_mask


def _inverse_rational_quadratic(
    inputs: Tensor, widths_raw: Tensor, heights_raw: Tensor, derivatives_raw: Tensor
) -> Tensor:
    """Inverse of a monotonic rational-quadratic spline on [-B, B] with identity (linear) tails.

    Durkan et al. 2019, "Neural Spline Flows", eq. 4-8 solved for the input; B is
    :data:`SPLINE_TAIL_BOUND`, with :data:`SPLINE_NUM_BINS` bins whose widths, heights and inner knot
    derivatives come from the unnormalized (..., bins), (..., bins), (..., bins - 1) tensors; the
    derivative at both outer knots is 1 so the tails join smoothly.
    """
    bound = SPLINE_TAIL_BOUND
    num_bins = widths_raw.shape[-1]
    inside = (inputs >= -bound) & (inputs <= bound)
    x = inputs.clamp(-bound, bound)

    def knots(raw: Tensor) -> tuple[Tensor, Tensor]:
        sizes = SPLINE_MIN_BIN + (1 - SPLINE_MIN_BIN * num_bins) * F.softmax(raw, dim=-1)
        cumulative = F.pad(torch.cumsum(sizes, dim=-1), (1, 0)) * (2 * bound) - bound
        cumulative = torch.cat([torch.full_like(cumulative[..., :1], -bound), cumulative[..., 1:-1],
                                torch.full_like(cumulative[..., :1], bound)], dim=-1)  # fmt: skip
        return cumulative, cumulative[..., 1:] - cumulative[..., :-1]

    cum_widths, widths = knots(widths_raw)
    cum_heights, heights = knots(heights_raw)
    edge = math.log(math.exp(1 - SPLINE_MIN_BIN) - 1)  # softplus(edge) + min = 1
    derivatives = SPLINE_MIN_BIN + F.softplus(F.pad(derivatives_raw, (1, 1), value=edge))

    # Bin of each input, counted on the output axis (heights); the top knot is nudged up so the upper
    # bound itself falls in the last bin.
    search = torch.cat([cum_heights[..., :-1], cum_heights[..., -1:] + 1e-6], dim=-1)
    bin_index = ((x[..., None] >= search).sum(dim=-1, keepdim=True) - 1).clamp(0, num_bins - 1)

    def pick(values: Tensor) -> Tensor:
        return values.gather(-1, bin_index)[..., 0]

    in_cum_width, in_width = pick(cum_widths), pick(widths)
    in_cum_height, in_height = pick(cum_heights), pick(heights)
    in_delta = in_height / in_width
    d_left, d_right = pick(derivatives), pick(derivatives[..., 1:])

    shifted = x - in_cum_height
    slope_sum = d_left + d_right - 2 * in_delta
    a = shifted * slope_sum + in_height * (in_delta - d_left)
    b = in_height * d_left - shifted * slope_sum
    c = -in_delta * shifted
    root = (2 * c) / (-b - torch.sqrt((b.pow(2) - 4 * a * c).clamp_min(0)))
    return torch.where(inside, root * in_width + in_cum_width, inputs)


class ElementwiseAffine(nn.Module):
    """``y = m + exp(logs) * x`` per channel; inverted at inference."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.m = nn.Parameter(torch.zeros(channels, 1))
        self.logs = nn.Parameter(torch.zeros(channels, 1))

    def inverse(self, x: Tensor, x_mask: Tensor) -> Tensor:
        return (x - self.m) * torch.exp(-self.logs) * x_mask


class ConvFlow(nn.Module):
    """Spline coupling layer of the stochastic duration predictor (2 channels: 1 conditions 1)."""

    def __init__(self, filter_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.filter_channels = filter_channels
        self.pre = PointwiseConv1d(1, filter_channels, 1)
        self.convs = DDSConv(filter_channels, kernel_size)
        self.proj = PointwiseConv1d(filter_channels, 3 * SPLINE_NUM_BINS - 1, 1)

    def inverse(self, x: Tensor, x_mask: Tensor, g: Tensor) -> Tensor:
        x0, x1 = x[:, :1], x[:, 1:]
        h = self.proj(self.convs(self.pre(x0), x_mask, g=g)) * x_mask  # (batch, 3 * bins - 1, T_x)
        h = h.transpose(1, 2).unsqueeze(1)  # (batch, 1, T_x, 3 * bins - 1)
        scale = math.sqrt(self.filter_channels)
        bins = SPLINE_NUM_BINS
        x1 = _inverse_rational_quadratic(x1, h[..., :bins] / scale, h[..., bins : 2 * bins] / scale, h[..., 2 * bins :])
        return torch.cat([x0, x1], 1) * x_mask


class StochasticDurationPredictor(nn.Module):
    """Flow-based duration predictor, reverse direction only: noise -> log-durations.

    ``flows`` keeps the upstream indices (``0`` affine, then ConvFlows at odd indices with channel
    flips between them); the reverse pass uses ``0`` and the ConvFlows from index 3 on.
    """

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        channels, kernel = config.hidden_channels, config.duration_kernel_size
        self.pre = PointwiseConv1d(channels, channels, 1)
        self.convs = DDSConv(channels, kernel)
        self.proj = PointwiseConv1d(channels, channels, 1)
        self.flows = nn.ModuleDict({"0": ElementwiseAffine(2)})
        for i in range(2, config.duration_num_flows + 1):
            self.flows[str(2 * i - 1)] = ConvFlow(channels, kernel)
        if config.speaker_channels:
            self.cond = PointwiseConv1d(config.speaker_channels, channels, 1)

    def _spline_flows(self) -> list[ConvFlow]:
        """The spline couplings in the order the reverse pass applies them (highest index first)."""
        names = sorted((name for name in self.flows if name != "0"), key=int, reverse=True)
        return [cast(ConvFlow, self.flows[name]) for name in names]

    def forward(self, x: Tensor, x_mask: Tensor, noise: Tensor, g: Tensor | None) -> Tensor:
        """Log-durations (batch, 1, T_x) from the text encoder's states ``x`` (batch, C, T_x), ``x_mask``
        (batch, 1, T_x), ``noise`` (batch, 2, T_x) (already scaled by noise_w) and ``g`` (batch, S, 1)
        or None."""
        h = self.pre(x)
        if g is not None:
            h = h + self.cond(g)
        h = self.proj(self.convs(h, x_mask)) * x_mask
        z = noise
        for flow in self._spline_flows():
            z = flow.inverse(torch.flip(z, [1]), x_mask, h)
        return cast(ElementwiseAffine, self.flows["0"]).inverse(torch.flip(z, [1]), x_mask)[:, :1]


class DurationPredictor(nn.Module):
    """Deterministic duration predictor: two conv + ReLU + LayerNorm blocks -> log-durations."""

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        channels, kernel = config.duration_filter_channels, config.duration_kernel_size
        self.conv_1 = nn.Conv1d(config.hidden_channels, channels, kernel, padding=kernel // 2)
        self.norm_1 = LayerNorm(channels)
        self.conv_2 = nn.Conv1d(channels, channels, kernel, padding=kernel // 2)
        self.norm_2 = LayerNorm(channels)
        self.proj = PointwiseConv1d(channels, 1, 1)
        if config.speaker_channels:
            self.cond = PointwiseConv1d(config.speaker_channels, config.hidden_channels, 1)

    def forward(self, x: Tensor, x_mask: Tensor, g: Tensor | None) -> Tensor:
        if g is not None:
            x = x + self.cond(g)
        x = self.norm_1(torch.relu(self.conv_1(x * x_mask)))
        x = self.norm_2(torch.relu(self.conv_2(x * x_mask)))
        logw: Tensor = self.proj(x * x_mask)
        return logw * x_mask


__all__ = ["DDSConv", "DurationPredictor", "StochasticDurationPredictor"]
