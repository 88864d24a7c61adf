"""The text encoder of VITS: phoneme ids -> hidden states and the prior's mean and log-std per phoneme.

Kim et al. 2021, section 2.5.1 (jaywalnut310/vits ``models.py`` ``TextEncoder``, ``attentions.py``
``Encoder``; MIT): an embedding scaled by sqrt(H), then post-norm transformer layers of multi-head
self-attention with relative-position keys and values (window +-w) and a feed-forward of two
'same'-padded convolutions. Names follow upstream so checkpoints map one to one.

One item without padding or autograd runs time-major (:meth:`Encoder.time_major`): activations are
(T, C) rows, the relative terms live on a band of the scores, and LayerNorm runs over contiguous
channels. Equal to the batched path up to float rounding.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.parallel import map_with_caller
from voicehub.architectures.vits.config import VITSConfig
from voicehub.architectures.vits.layers import (
    DerivedWeights,
    LayerNorm,
    PointwiseConv1d,
    bucket_rows,
    onednn_conv1d_rows,
    onednn_usable,
    time_major_conv1d,
    time_major_ready,
)

ONEDNN_FEED_FORWARD_MIN_ROWS = 56
"""Phoneme ids from which one item's feed-forward runs in oneDNN
(:func:`~voicehub.architectures.vits.layers.onednn_conv1d_rows`). Below, the 768 -> 192 product ran
up to 1.3x slower there than in MKL; from 56 ids on both products ran 8-20 % faster (2 threads)."""

MASK_VALUE = -1e4
"""Attention logit given to padded keys (upstream VITS value; exp(-1e4) underflows to 0 in float32)."""


class RelativeSelfAttention(nn.Module):
    """Multi-head self-attention with learned relative-position keys and values (Shaw et al. 2018).

    The relative embeddings ``emb_rel_k``/``emb_rel_v`` (1, 2w + 1, head_channels) are shared by
    all heads; offsets beyond +-w contribute nothing.
    """

    def __init__(self, channels: int, num_heads: int, window_size: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_channels = channels // num_heads
        self.window_size = window_size
        self.conv_q = PointwiseConv1d(channels, channels, 1)
        self.conv_k = PointwiseConv1d(channels, channels, 1)
        self.conv_v = PointwiseConv1d(channels, channels, 1)
        self.conv_o = PointwiseConv1d(channels, channels, 1)
        self.emb_rel_k = nn.Parameter(torch.zeros(1, 2 * window_size + 1, self.head_channels))
        self.emb_rel_v = nn.Parameter(torch.zeros(1, 2 * window_size + 1, self.head_channels))

    def relative_positions(self, length: int, device: torch.device) -> tuple[Tensor, Tensor]:
        """Embedding index and window mask of each (query, key) pair, for :meth:`forward`.

        Returns:
            ``index`` int64 (length, length): ``j - i`` shifted into 0..2w (clamped outside the
            window), and ``in_window`` float32 (length, length): 1 where ``|j - i| <= w``. They
            depend on the length only, so the encoder builds them once per call for all its layers.
        """
        positions = torch.arange(length, device=device)
        offset = positions[None, :] - positions[:, None]
        in_window = (offset.abs() <= self.window_size).float()
        return (offset + self.window_size).clamp(0, 2 * self.window_size), in_window

    def forward(self, x: Tensor, key_padding: Tensor, relative: tuple[Tensor, Tensor] | None = None) -> Tensor:
        """Attend over (batch, channels, length); ``key_padding`` bool (batch, 1, length, length) is true where masked.

        ``relative`` is :meth:`relative_positions` for this length (computed here when ``None``).
        """
        batch, channels, length = x.shape
        index, in_window = relative if relative is not None else self.relative_positions(length, x.device)
        shape = (batch, self.num_heads, self.head_channels, length)
        query = self.conv_q(x).view(shape).transpose(2, 3).mul_(1.0 / math.sqrt(self.head_channels))
        key = self.conv_k(x).view(shape).transpose(2, 3)
        value = self.conv_v(x).view(shape).transpose(2, 3)  # (batch, heads, length, head_channels)

        scores = query @ key.transpose(-2, -1)
        by_offset = query @ self.emb_rel_k[0].transpose(0, 1)  # (batch, heads, length, 2w + 1)
        scores.add_(torch.gather(by_offset, 3, index.expand(batch, self.num_heads, length, length)).mul_(in_window))
        weights = F.softmax(scores.masked_fill_(key_padding, MASK_VALUE), dim=-1)

        out = weights @ value
        # Weight of each relative offset: scatter the in-window attention weights into 2w + 1 bins.
        binned = torch.zeros(batch, self.num_heads, length, 2 * self.window_size + 1, dtype=x.dtype, device=x.device)
        binned.scatter_add_(3, index.expand_as(weights), weights * in_window)  # softmax backward needs weights
        out.add_(binned @ self.emb_rel_v[0])
        result: Tensor = self.conv_o(out.transpose(2, 3).reshape(batch, channels, length))
        return result

    def time_major_ready(self) -> bool:
        """Whether :meth:`time_major` can run (the four 1x1 layers are still the plain kind)."""
        return all(type(conv) is PointwiseConv1d for conv in (self.conv_q, self.conv_k, self.conv_v, self.conv_o))

    def _time_major_qkv(self) -> tuple[Tensor, Tensor]:
        """The q, k and v layers' weights stacked into one (3 C, C) matrix and their biases (3 C,) (a
        missing bias reads as zeros), kept between calls (:class:`DerivedWeights`). The query's
        1/sqrt(head_channels) is applied after the product, as in :meth:`forward`: folded into the
        weights, it rounded differently, and a batch then differed from its items one by one by up
        to 1.3e-4 per sample instead of 9.1e-5."""
        convs = (self.conv_q, self.conv_k, self.conv_v)
        sources = [p for conv in convs for p in (conv.weight, conv.bias) if p is not None]

        def build() -> tuple[Tensor, Tensor]:
            weight = torch.cat([conv.weight.detach()[:, :, 0] for conv in convs])
            biases = [conv.weight.new_zeros(conv.out_channels) if conv.bias is None else conv.bias for conv in convs]
            bias = torch.cat([b.detach() for b in biases])
            return weight, bias

        return DerivedWeights.of(self, "_stacked_qkv").get(sources, build)

    def time_major(self, x: Tensor) -> Tensor:
        """:meth:`forward` of one item without padding, held time-major: (T, C) -> (T, C).

        q, k and v are one product with the stacked weights (:meth:`_time_major_qkv`). The relative
        terms live on the band |j - i| <= w of the (T, T) scores: in a (T, T + 2w) buffer, row i's
        offsets -w..w are the 2w + 1 entries from column i, so a strided view with row stride
        T + 2w + 1 writes the key terms into the band and reads the attention weights out of it
        (zero-padded by w on each side) for the value terms, with no index tensors, gather or
        scatter. Equal to :meth:`forward` up to float rounding.
        """
        length, channels = x.shape
        heads, window = self.num_heads, self.window_size
        weight, bias = self._time_major_qkv()
        qkv = F.linear(x, weight, bias)
        qkv[:, :channels].mul_(1.0 / math.sqrt(self.head_channels))
        qkv = qkv.view(length, 3, heads, self.head_channels).permute(1, 2, 0, 3)
        query, key, value = qkv.unbind(0)  # (heads, T, head_channels) each
        scores = torch.bmm(query, key.transpose(1, 2))  # (heads, T, T)
        width = length + 2 * window
        diagonals = ((heads, length, 2 * window + 1), (length * width, width + 1, 1))  # row i: columns i..i + 2w
        band = x.new_zeros(heads, length, width)
        band.as_strided(*diagonals).copy_(torch.matmul(query, self.emb_rel_k[0].t()))
        weights = torch.softmax(scores.add_(band[:, :, window : window + length]), dim=-1)
        out = torch.bmm(weights, value)
        binned = F.pad(weights, (window, window)).as_strided(*diagonals)
        out.add_(torch.matmul(binned, self.emb_rel_v[0]))
        return F.linear(out.transpose(0, 1).reshape(length, channels), self.conv_o.weight[:, :, 0], self.conv_o.bias)


class FeedForward(nn.Module):
    """Two 'same'-padded convolutions with a ReLU between, masked before each."""

    def __init__(self, channels: int, filter_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.padding = ((kernel_size - 1) // 2, kernel_size // 2)
        self.conv_1 = nn.Conv1d(channels, filter_channels, kernel_size)
        self.conv_2 = nn.Conv1d(filter_channels, channels, kernel_size)

    def forward(self, x: Tensor, x_mask: Tensor) -> Tensor:
        """(batch, channels, T) -> the same; one item without autograd runs time-major (:meth:`time_major`)."""
        if x.shape[0] == 1 and not torch.is_grad_enabled() and self.time_major_ready():
            return self.time_major(x[0].t(), x_mask[0].t()).t().unsqueeze(0)
        x = torch.relu(self.conv_1(F.pad(x * x_mask, self.padding)))
        out: Tensor = self.conv_2(F.pad(x * x_mask, self.padding))
        return out * x_mask

    def time_major_ready(self) -> bool:
        """Whether :meth:`time_major` can run (both convolutions are still plain ones)."""
        return time_major_ready(self.conv_1, self.conv_2)

    def time_major(self, x: Tensor, mask: Tensor | None, pieces: int = 1) -> Tensor:
        """:meth:`forward` of one item held time-major: ``x`` (T, C), ``mask`` (T, 1) or None for no
        padding -> (T, C).

        Without a mask and from :data:`ONEDNN_FEED_FORWARD_MIN_ROWS` ids on (where
        :func:`~voicehub.architectures.vits.layers.onednn_usable` holds) each convolution is one
        oneDNN product (:func:`~voicehub.architectures.vits.layers.onednn_conv1d_rows`) over T rounded
        up to a multiple of 8 rows, the hidden rows beyond T dropped before the second product;
        otherwise k BLAS products (:func:`time_major_conv1d`).

        With ``pieces`` > 1 (and no mask), the hidden channels are cut into that many ranges, each
        range's two products on its own thread (:func:`~voicehub.architectures.parallel.map_with_caller`:
        the caller takes one), and the ranges' outputs summed. The ReLU acts per channel, so the ranges
        need each other only for that sum: one wake-up of a helper thread per layer. Equal to the
        whole up to float rounding (partial sums added in another order)."""
        if mask is not None:
            hidden = time_major_conv1d(self.conv_1, x * mask, *self.padding).relu_()
            return time_major_conv1d(self.conv_2, hidden.mul_(mask), *self.padding).mul_(mask)
        filters = self.conv_1.out_channels
        if pieces > 1:
            cuts = [filters * i // pieces for i in range(pieces + 1)]
            parts = map_with_caller(functools.partial(self._hidden_range, x), list(itertools.pairwise(cuts)))
            return functools.reduce(Tensor.add_, parts)
        return self._hidden_range(x, (0, filters))

    def _hidden_range(self, x: Tensor, channels: tuple[int, int]) -> Tensor:
        """The feed-forward's output through hidden channels [start, end) only (no mask): (T, C); in
        oneDNN from :data:`ONEDNN_FEED_FORWARD_MIN_ROWS` ids on, as :meth:`time_major`."""
        start, end = channels
        hidden_channels = slice(None) if channels == (0, self.conv_1.out_channels) else slice(start, end)
        length = x.shape[0]
        if length >= ONEDNN_FEED_FORWARD_MIN_ROWS and onednn_usable(x):
            rows = bucket_rows(length)
            hidden = onednn_conv1d_rows(self.conv_1, x, *self.padding, rows, "relu", outputs=hidden_channels)
            return onednn_conv1d_rows(
                self.conv_2, hidden[:length], *self.padding, rows, inputs=hidden_channels, bias=start == 0
            )[:length]
        hidden = time_major_conv1d(self.conv_1, x, *self.padding, outputs=hidden_channels).relu_()
        return time_major_conv1d(self.conv_2, hidden, *self.padding, inputs=hidden_channels, bias=start == 0)


class Encoder(nn.Module):
    """Post-norm transformer encoder of the text encoder."""

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        hidden = config.hidden_channels
        self.attn_layers = nn.ModuleList(
            RelativeSelfAttention(hidden, config.num_heads, config.window_size) for _ in range(config.num_layers)
        )
        self.norm_layers_1 = nn.ModuleList(LayerNorm(hidden) for _ in range(config.num_layers))
        self.ffn_layers = nn.ModuleList(
            FeedForward(hidden, config.filter_channels, config.kernel_size) for _ in range(config.num_layers)
        )
        self.norm_layers_2 = nn.ModuleList(LayerNorm(hidden) for _ in range(config.num_layers))

    def forward(self, x: Tensor, x_mask: Tensor, pieces: int = 1) -> Tensor:
        """(batch, channels, T_x) -> the same; one item without padding or autograd runs time-major
        (:meth:`time_major`, with ``pieces``)."""
        if x.shape[0] == 1 and not torch.is_grad_enabled() and self.time_major_ready() and bool(x_mask.all()):
            return self.time_major(x[0].t(), pieces).t().unsqueeze(0)
        # What depends on the length and the padding only is built once per call, not per layer.
        key_padding = (x_mask.unsqueeze(2) * x_mask.unsqueeze(-1)) == 0  # (batch, 1, T_x, T_x)
        first = cast(RelativeSelfAttention, self.attn_layers[0])  # every layer has the config's window
        relative = first.relative_positions(x.shape[2], x.device)
        x = x * x_mask
        for attn, norm_1, ffn, norm_2 in zip(
            self.attn_layers, self.norm_layers_1, self.ffn_layers, self.norm_layers_2, strict=True
        ):
            x = norm_1(x + attn(x, key_padding, relative))
            x = norm_2(x + ffn(x, x_mask))
        return x * x_mask

    def time_major_ready(self) -> bool:
        """Whether :meth:`time_major` can run (every layer is still the plain kind)."""
        return (
            all(cast(RelativeSelfAttention, attn).time_major_ready() for attn in self.attn_layers)
            and all(cast(FeedForward, ffn).time_major_ready() for ffn in self.ffn_layers)
            and all(type(norm) is LayerNorm for norm in (*self.norm_layers_1, *self.norm_layers_2))
        )

    def time_major(self, x: Tensor, pieces: int = 1) -> Tensor:
        """:meth:`forward` of one item without padding, held time-major: (T_x, C) -> (T_x, C). Attention
        and feed-forward run time-major (:meth:`RelativeSelfAttention.time_major`,
        :meth:`FeedForward.time_major`, its hidden channels in ``pieces`` ranges on as many threads),
        LayerNorm over the contiguous channels: no transposed copies and no masks. Equal to
        :meth:`forward` up to float rounding."""
        for attn, norm_1, ffn, norm_2 in zip(
            self.attn_layers, self.norm_layers_1, self.ffn_layers, self.norm_layers_2, strict=True
        ):
            x = cast(LayerNorm, norm_1).time_major(x + cast(RelativeSelfAttention, attn).time_major(x))
            x = cast(LayerNorm, norm_2).time_major(x + cast(FeedForward, ffn).time_major(x, None, pieces))
        return x


class TextEncoder(nn.Module):
    """Phoneme ids -> hidden states and the prior's mean and log-std per phoneme."""

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        self.hidden_channels = config.hidden_channels
        self.inter_channels = config.inter_channels
        self.emb = nn.Embedding(config.num_symbols, config.hidden_channels)
        self.encoder = Encoder(config)
        self.proj = PointwiseConv1d(config.hidden_channels, 2 * config.inter_channels, 1)

    def forward(self, ids: Tensor, x_mask: Tensor, pieces: int = 1) -> tuple[Tensor, Tensor, Tensor]:
        """ids (batch, T_x), ``x_mask`` (batch, 1, T_x) -> hidden states (batch, C, T_x) and the prior's
        mean and log-std (batch, inter_channels, T_x) each; ``pieces``: see :meth:`Encoder.time_major`."""
        x = (self.emb(ids) * math.sqrt(self.hidden_channels)).transpose(1, 2)
        x = self.encoder(x * x_mask, x_mask, pieces)
        stats = self.proj(x) * x_mask
        m_p, logs_p = torch.split(stats, self.inter_channels, dim=1)
        return x, m_p, logs_p


__all__ = ["MASK_VALUE", "Encoder", "FeedForward", "RelativeSelfAttention", "TextEncoder"]
