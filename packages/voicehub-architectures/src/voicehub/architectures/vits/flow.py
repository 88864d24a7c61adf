"""The normalizing flow of VITS (reverse direction): mean-only affine couplings over WaveNet stacks.

Kim et al. 2021, section 2.5.2 (the flow f_theta; jaywalnut310/vits ``modules.py`` ``WN`` and
``ResidualCouplingLayer``, MIT). Module and parameter names follow upstream so checkpoints map one
to one.

Inference of one item without autograd runs time-major (:meth:`ResidualCouplingBlock.inverse`):
activations are (T, C) matrices, every k-tap convolution is one matrix product of the (T, k * C)
rows of the padded input with the weight's taps stacked (k * C_in, C_out), and 1x1 convolutions
are ``linear``. The rearranged weights are kept (rebuilt when a weight changes; see
:meth:`WaveNet.time_major`). On the CPU in float32 (:func:`~voicehub.architectures.vits.layers.onednn_usable`)
the WaveNet's products run in oneDNN (:func:`~voicehub.architectures.vits.layers.onednn_linear`, the
gate's sigmoid fused) on a row count rounded up to a multiple of 8, the extra rows masked as padding.
The result equals the channel-major path up to float rounding.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.parallel import map_single_threaded
from voicehub.architectures.vits.config import VITSConfig
from voicehub.architectures.vits.layers import (
    DerivedWeights,
    PointwiseConv1d,
    bucket_rows,
    onednn_linear,
    onednn_usable,
    pack_linear_weight,
    stacked_rows,
    time_major_ready,
)


@dataclasses.dataclass(frozen=True, slots=True)
class _TimeMajorLayer:
    """One WaveNet layer's weights for :meth:`WaveNet.time_major`, in one of two forms.

    Attributes:
        weight: the in-layer's k taps stacked, (k * C, 2 C) with row j * C + c for tap j, channel c;
            or, for oneDNN, that matrix transposed and packed (:func:`pack_linear_weight`).
        bias: the in-layer's bias (2 C,) or None.
        res_weight: the 1x1 res/skip layer's (C_out, C) weight, or it packed for oneDNN.
        res_bias: its bias (C_out,) or None.
        onednn: whether the weights are in the oneDNN form.

    The first C outputs of the in-layer (the tanh half) are scaled by -2 in ``weight`` and ``bias``
    (see :meth:`WaveNet.time_major`).
    """

    weight: Tensor
    bias: Tensor | None
    res_weight: Tensor
    res_bias: Tensor | None
    onednn: bool

    def gates(self, columns: Tensor, bias: Tensor | None) -> Tensor:
        """``sigmoid(columns @ weight + bias)``: (T, k * C) -> (T, 2 C), ``bias`` (2 C,) or None."""
        if self.onednn:
            return onednn_linear(columns, self.weight, bias, "sigmoid")
        product = torch.mm(columns, self.weight) if bias is None else torch.addmm(bias, columns, self.weight)
        return product.sigmoid_()

    def res_skip(self, acts: Tensor) -> Tensor:
        """The 1x1 res/skip layer: (T, C) -> (T, C_out)."""
        if self.onednn:
            return onednn_linear(acts, self.res_weight, self.res_bias)
        return F.linear(acts, self.res_weight, self.res_bias)


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

    def time_major_ready(self) -> bool:
        """Whether every layer is still a plain convolution (a pass may have replaced some)."""
        return time_major_ready(*self.in_layers) and all(
            isinstance(layer, PointwiseConv1d) for layer in self.res_skip_layers
        )

    def _time_major_layers(self, onednn: bool) -> list[_TimeMajorLayer]:
        """Per layer, the weights of :meth:`time_major` for BLAS, or packed for oneDNN (``onednn``),
        kept between calls (:class:`DerivedWeights`; each form is built only when used)."""
        convs = [cast(nn.Conv1d, layer) for layer in self.in_layers]
        res_skips = [cast(PointwiseConv1d, layer) for layer in self.res_skip_layers]
        sources = [p for m in (*convs, *res_skips) for p in (m.weight, m.bias) if p is not None]

        def build() -> list[_TimeMajorLayer]:
            layers = []
            for conv, res_skip in zip(convs, res_skips, strict=True):
                weight = conv.weight.detach()  # (2 C, C, k)
                stacked = weight.permute(2, 1, 0).reshape(-1, weight.shape[0]).clone()
                stacked[:, : self.channels] *= -2
                bias = None if conv.bias is None else conv.bias.detach().clone()
                if bias is not None:
                    bias[: self.channels] *= -2
                res_weight = res_skip.weight.detach()[:, :, 0].contiguous()
                layers.append(
                    _TimeMajorLayer(
                        weight=pack_linear_weight(stacked.t()) if onednn else stacked,
                        bias=bias,
                        res_weight=pack_linear_weight(res_weight) if onednn else res_weight,
                        res_bias=None if res_skip.bias is None else res_skip.bias.detach(),
                        onednn=onednn,
                    )
                )
            return layers

        name = "_onednn_weights" if onednn else "_time_major_weights"
        return DerivedWeights.of(self, name).get(sources, build)

    def _gate_bias(self, layer: _TimeMajorLayer, cond: Tensor | None, index: int) -> Tensor | None:
        """The in-layer's bias plus layer ``index``'s slice of ``cond`` (1, 2 C L), its tanh half times -2:
        the condition is one vector per item, so it is a bias of the product."""
        if cond is None:
            return layer.bias
        channels = self.channels
        piece = cond[0, 2 * channels * index : 2 * channels * (index + 1)].clone()
        piece[:channels] *= -2
        return piece if layer.bias is None else piece.add_(layer.bias)

    def time_major(self, x: Tensor, mask: Tensor | None, cond: Tensor | None) -> Tensor:
        """:meth:`forward` of one item, time-major: ``x`` (T, C), ``mask`` (T, 1) or None for no
        padding, ``cond`` (1, 2 C L) or None.

        Each in-layer is one matrix product of the (T, k * C) rows of the padded input (im2col) with
        its stacked taps, the condition added to its bias (:meth:`_gate_bias`). The gate ``tanh(a) *
        sigmoid(b)`` is computed as ``s_b - 2 s_a s_b`` (one ``addcmul``) with ``s_a = sigmoid(-2 a)``,
        ``s_b = sigmoid(b)``, since tanh(a) = 1 - 2 sigmoid(-2 a); the factor -2 is folded into the
        weights. One sigmoid over all 2 C channels replaces a tanh (~3x slower per element here), a
        sigmoid and a product; on the oneDNN path (:func:`onednn_usable`) it is fused into the
        product. Equal to :meth:`forward` up to float rounding.
        """
        channels, length = self.channels, x.shape[0]
        onednn = onednn_usable(x)
        output: Tensor | None = None
        last = len(self.in_layers) - 1
        for i, (in_module, layer) in enumerate(zip(self.in_layers, self._time_major_layers(onednn), strict=True)):
            in_layer = cast(nn.Conv1d, in_module)
            pad, dilation, taps = int(in_layer.padding[0]), in_layer.dilation[0], in_layer.kernel_size[0]
            columns = stacked_rows(x, pad, taps, dilation, length)  # (T, k * C)
            bias = self._gate_bias(layer, cond, i)
            gates = layer.gates(columns, bias)
            acts = torch.addcmul(gates[:, channels:], gates[:, :channels], gates[:, channels:], value=-2)
            res_skip_acts = layer.res_skip(acts)
            skip = res_skip_acts[:, channels:] if i < last else res_skip_acts
            if i < last:
                x = x + res_skip_acts[:, :channels]
                if mask is not None:
                    x.mul_(mask)
            output = skip if output is None else output + skip
        if output is None:
            raise ValueError("vits: a WaveNet needs at least one layer")
        return output if mask is None else output * mask


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

    def time_major_ready(self) -> bool:
        """Whether :meth:`inverse_time_major` can run (the layers are still the plain ones)."""
        return (
            isinstance(self.pre, PointwiseConv1d)
            and isinstance(self.post, PointwiseConv1d)
            and self.enc.time_major_ready()
        )

    def context_frames(self) -> int:
        """Frames on each side of a frame that this coupling's output depends on: the half-widths of
        its WaveNet convolutions, summed (1x1 layers add none)."""
        return sum(
            (conv.kernel_size[0] - 1) * conv.dilation[0] // 2
            for conv in self.enc.in_layers
            if isinstance(conv, nn.Conv1d)
        )

    def inverse_time_major(self, x: Tensor, mask: Tensor | None, cond: Tensor | None) -> Tensor:
        """:meth:`inverse` of one item, time-major: ``x`` (T, C), ``mask`` (T, 1) or None for no
        padding, ``cond`` as in :meth:`WaveNet.time_major`.

        On the oneDNN path the rows are padded to :func:`~voicehub.architectures.vits.layers.bucket_rows`
        and the extra rows masked, as a padded item's: the WaveNet's products then repeat their
        shapes between sentences of similar length (see
        :data:`~voicehub.architectures.vits.layers.ONEDNN_ROW_BUCKET`)."""
        length = x.shape[0]
        rows = bucket_rows(length) if onednn_usable(x) else length
        if rows != length:
            x = F.pad(x, (0, 0, 0, rows - length))
            mask = F.pad(x.new_ones(length, 1) if mask is None else mask, (0, 0, 0, rows - length))
        x0, x1 = x[:, : self.half_channels], x[:, self.half_channels :]
        hidden = F.linear(x0, self.pre.weight[:, :, 0], self.pre.bias)
        if mask is not None:
            hidden = hidden.mul_(mask)
        mean = F.linear(self.enc.time_major(hidden, mask, cond), self.post.weight[:, :, 0], self.post.bias)
        shifted = x1 - mean  # masked once below: (x1 - mean * m) * m = (x1 - mean) * m for a 0/1 mask
        return torch.cat([x0, shifted if mask is None else shifted.mul_(mask)], 1)[:length]


def _time_major_mask(y_mask: Tensor) -> Tensor | None:
    """One item's frame mask (1, 1, T) as (T, 1), or None when it masks nothing (every frame is signal)."""
    mask = y_mask[0].t()
    return None if bool(mask.all()) else mask.contiguous()


def _coupling_piece(
    layer: ResidualCouplingLayer,
    source: Tensor,
    mask: Tensor | None,
    cond: Tensor | None,
    out: Tensor,
    piece: tuple[int, int],
) -> None:
    """Frames [start, end) of ``layer``'s time-major inverse of ``source`` (T, C), written into ``out``,
    from the piece plus the coupling's context on each side (see :meth:`ResidualCouplingBlock.inverse_in_pieces`)."""
    start, end = piece
    context = layer.context_frames()
    lo, hi = max(0, start - context), min(source.shape[0], end + context)
    piece_mask = None if mask is None else mask[lo:hi]
    out[start:end] = layer.inverse_time_major(source[lo:hi], piece_mask, cond)[start - lo : end - lo]


class ResidualCouplingBlock(nn.Module):
    """The normalizing flow: couplings at even indices of ``flows``, channel flips between them."""

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        self.flows = nn.ModuleDict(
            {str(2 * i): ResidualCouplingLayer(config) for i in range(config.flow_num_couplings)}
        )

    def context_frames(self) -> int:
        """Frames on each side of a frame that its output depends on: the half-widths of every
        WaveNet convolution, summed over the couplings (1x1 layers and flips add none). A piece of
        the input with this many extra frames on each side gives the exact output inside the piece."""
        return sum(cast(ResidualCouplingLayer, layer).context_frames() for layer in self.flows.values())

    def time_major_ready(self) -> bool:
        """Whether every coupling can run time-major (:meth:`inverse_in_pieces` needs it)."""
        return all(layer.time_major_ready() for layer in self._layers())

    def _layers(self) -> list[ResidualCouplingLayer]:
        """The couplings in inverse order."""
        return [cast(ResidualCouplingLayer, self.flows[name]) for name in sorted(self.flows, key=int, reverse=True)]

    def inverse(self, z: Tensor, y_mask: Tensor, g: Tensor | None) -> Tensor:
        """Latent frames z_p (batch, C, T) -> z (batch, C, T); ``y_mask`` (batch, 1, T), ``g`` (batch, S, 1) or None.

        One item without autograd runs time-major (see the module docstring).
        """
        layers = self._layers()
        if z.shape[0] == 1 and not torch.is_grad_enabled() and self.time_major_ready():
            frames, mask = z[0].t(), _time_major_mask(y_mask)  # (T, C), (T, 1) or None
            for layer in layers:
                cond = layer.enc.cond_layer(g)[:, :, 0] if g is not None else None
                frames = layer.inverse_time_major(torch.flip(frames, [1]), mask, cond)
            return frames.t().unsqueeze(0)
        for layer in layers:
            z = layer.inverse(torch.flip(z, [1]), y_mask, g)
        return z

    def inverse_in_pieces(self, z: Tensor, y_mask: Tensor, g: Tensor | None, pieces: int) -> Tensor:
        """:meth:`inverse` of one item (1, C, T) with each coupling cut in time into ``pieces`` pieces,
        one per worker thread with one intra-op thread
        (:func:`~voicehub.architectures.parallel.map_single_threaded`).

        A piece reads its frames plus the coupling's :meth:`ResidualCouplingLayer.context_frames` on
        each side (zeros beyond the signal, as the whole coupling's padding) and keeps its own frames:
        the same row-by-row products as the whole. Cutting each coupling, rather than the whole flow
        once with the sum of all couplings' context, repeats 8 frames per cut instead of 32 (Piper
        medium: a 236-frame sentence in two pieces is 252 frames of work instead of 300), for one
        wake-up of the threads per coupling.

        Args:
            z: float (1, C, T) latent frames z_p.
            y_mask: float (1, 1, T) frame mask.
            g: float (1, S, 1) speaker embedding, or None.
            pieces: time pieces per coupling (the threads to use).

        Returns:
            float (1, C, T): z, as :meth:`inverse`.

        Raises:
            ValueError: for more than one item, or a coupling that cannot run time-major
                (:meth:`time_major_ready`).
        """
        layers = self._layers()
        if z.shape[0] != 1 or not self.time_major_ready():
            raise ValueError("vits: the flow runs in pieces only for one item with plain time-major couplings")
        length = z.shape[2]
        frames, mask = z[0].t().contiguous(), _time_major_mask(y_mask)  # (T, C), (T, 1) or None
        cuts = [round(length * i / pieces) for i in range(pieces + 1)]
        for layer in layers:
            cond = layer.enc.cond_layer(g)[:, :, 0] if g is not None else None
            source, out = torch.flip(frames, [1]), torch.empty_like(frames)
            work = functools.partial(_coupling_piece, layer, source, mask, cond, out)
            map_single_threaded(work, list(itertools.pairwise(cuts)), pieces)
            frames = out
        return frames.t().unsqueeze(0)


__all__ = ["ResidualCouplingBlock", "ResidualCouplingLayer", "WaveNet"]
