"""The HiFi-GAN decoder of VITS: latent frames (batch, C, T) -> waveform (batch, T * hop_length).

Upsampling transposed convolutions, each followed by multi-receptive-field residual blocks (Kong et al.
2020, "HiFi-GAN", section 2.1; VITS uses it as its decoder, Kim et al. 2021, section 2.4). The
convolutions run as (1, k) 2-D convolutions on channels-last input (:class:`TimeConv1d`), which oneDNN
executes faster on the CPU than 1-D ones; parameters keep the Conv1d shapes of the checkpoints.

This is the plain PyTorch path (any device, dtype and autograd mode). The CPU inference path with
fused, pre-packed convolutions is :class:`~voicehub.architectures.vits.backend.FastCPUBackend`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.vits.config import VITSConfig
from voicehub.architectures.vits.layers import PointwiseConv1d, sequence_mask

LRELU_SLOPE = 0.1
"""Leaky-ReLU slope inside the HiFi-GAN decoder (the last activation uses PyTorch's default 0.01)."""


class TimeConv1d(nn.Conv1d):
    """A Conv1d (same parameters) evaluated as a (1, k) Conv2d on channels-last (batch, C, 1, T) input.

    oneDNN runs channels-last 2-D convolutions without reordering activations to a blocked layout
    and back at every layer; on the decoder's long, narrow signals (32 channels x 90k samples) this
    is 2-3x faster than ``conv1d`` on the CPU, for the same arithmetic.
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(
            x,
            self.weight.unsqueeze(2),
            self.bias,
            (1, self.stride[0]),
            (0, int(self.padding[0])),
            (1, self.dilation[0]),
            self.groups,
        )


class TimeConvTranspose1d(nn.ConvTranspose1d):
    """A ConvTranspose1d evaluated as a (1, k) transposed Conv2d on channels-last input (see :class:`TimeConv1d`)."""

    def forward(self, x: Tensor, output_size: list[int] | None = None) -> Tensor:
        """(batch, C_in, 1, T) channels-last -> (batch, C_out, 1, T_out); ``output_size`` picks the
        output padding as :class:`torch.nn.ConvTranspose1d` does (its last entry is T_out).

        Raises:
            ValueError: for an ``output_size`` that no output padding reaches (torch's message).
        """
        output_padding = self._output_padding(
            x[:, :, 0],  # (batch, C_in, T): the sizes nn.ConvTranspose1d reads
            output_size,
            list(self.stride),
            [int(self.padding[0])],
            list(self.kernel_size),
            1,
            list(self.dilation),
        )
        return F.conv_transpose2d(
            x,
            self.weight.unsqueeze(2),
            self.bias,
            (1, self.stride[0]),
            (0, int(self.padding[0])),
            (0, output_padding[0]),
            self.groups,
            (1, self.dilation[0]),
        )


class ResBlock(nn.Module):
    """HiFi-GAN residual block: type 1 (dilated conv + plain conv per dilation) or type 2 (dilated convs)."""

    def __init__(self, channels: int, kernel_size: int, dilations: Sequence[int], kind: str) -> None:
        super().__init__()

        def conv(dilation: int) -> nn.Conv1d:
            return TimeConv1d(
                channels, channels, kernel_size, dilation=dilation, padding=(kernel_size - 1) * dilation // 2
            )

        self.kind = kind
        if kind == "1":
            self.convs1 = nn.ModuleList(conv(d) for d in dilations)
            self.convs2 = nn.ModuleList(conv(1) for _ in dilations)
        else:
            self.convs = nn.ModuleList(conv(d) for d in dilations)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        # Each convolution's fresh output takes the residual in place: at 32 x 90k samples every avoided
        # allocation saves a page-faulting 11 MB buffer.
        def masked(t: Tensor) -> Tensor:
            return t if mask is None else t.mul_(mask)

        if self.kind == "1":
            for conv1, conv2 in zip(self.convs1, self.convs2, strict=True):
                xt = F.leaky_relu_(conv1(masked(F.leaky_relu(x, LRELU_SLOPE))), LRELU_SLOPE)
                x = conv2(masked(xt)).add_(x)
        else:
            for conv in self.convs:
                x = conv(masked(F.leaky_relu(x, LRELU_SLOPE))).add_(x)
        return x


class Generator(nn.Module):
    """HiFi-GAN generator: latent frames (batch, inter_channels, T_y) -> waveform (batch, T_y * hop).

    Activations are kept as channels-last (batch, C, 1, T) tensors (see :class:`TimeConv1d`).
    """

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        self.rates = config.upsample_rates
        self.num_kernels = len(config.resblock_kernel_sizes)
        channels = config.upsample_initial_channel
        self.conv_pre = TimeConv1d(config.inter_channels, channels, 7, padding=3)
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        for rate, kernel in zip(config.upsample_rates, config.upsample_kernel_sizes, strict=True):
            self.ups.append(TimeConvTranspose1d(channels, channels // 2, kernel, rate, padding=(kernel - rate) // 2))
            channels //= 2
            for size, dilations in zip(config.resblock_kernel_sizes, config.resblock_dilation_sizes, strict=True):
                self.resblocks.append(ResBlock(channels, size, dilations, config.resblock))
        self.conv_post = TimeConv1d(channels, 1, 7, padding=3, bias=False)
        if config.speaker_channels:
            self.cond = PointwiseConv1d(config.speaker_channels, config.upsample_initial_channel, 1)

    def stage_blocks(self, stage: int) -> list[ResBlock]:
        """The residual blocks of upsampling stage ``stage`` (their outputs are averaged)."""
        blocks = self.resblocks[stage * self.num_kernels : (stage + 1) * self.num_kernels]
        return [block for block in blocks if isinstance(block, ResBlock)]

    def forward(self, z: Tensor, g: Tensor | None, frame_lengths: Tensor | None = None) -> Tensor:
        """Decode latent frames ``z`` (batch, C, T) with speaker condition ``g`` (batch, S, 1) or None
        into (batch, T * hop) samples; ``frame_lengths`` (batch,) masks the padding of a ragged batch
        (zeroed before every convolution, so each item equals the item decoded alone)."""
        mask = None
        if frame_lengths is not None:
            mask = sequence_mask(frame_lengths, z.shape[2]).unsqueeze(2)  # (batch, 1, 1, T)
        z = z.unsqueeze(2).contiguous(memory_format=torch.channels_last)
        x = self.conv_pre(z if mask is None else z * mask)
        if g is not None:
            x = x + self.cond(g).unsqueeze(2)
        for i, (rate, up) in enumerate(zip(self.rates, self.ups, strict=True)):
            x = F.leaky_relu_(x, LRELU_SLOPE)  # x is this loop's own tensor: in place is safe
            x = up(x if mask is None else x.mul_(mask))
            if mask is not None:
                mask = mask.repeat_interleave(rate, dim=3)
            blocks = self.stage_blocks(i)
            total = blocks[0](x, mask)
            for block in blocks[1:]:
                total = total.add_(block(x, mask))
            x = total.div_(self.num_kernels)
        x = F.leaky_relu_(x)
        return torch.tanh_(self.conv_post(x if mask is None else x.mul_(mask)))[:, 0, 0]


__all__ = ["LRELU_SLOPE", "Generator", "ResBlock", "TimeConv1d", "TimeConvTranspose1d"]
