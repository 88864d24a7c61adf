"""The text encoder of VITS: phoneme ids -> hidden states and the prior's mean and log-std per phoneme.

Kim et al. 2021, section 2.5.1 (jaywalnut310/vits ``models.py`` ``TextEncoder``, ``attentions.py``
``Encoder``; MIT): an embedding scaled by sqrt(H), then post-norm transformer layers of multi-head
self-attention with relative-position keys and values (window +-w) and a feed-forward of two
'same'-padded convolutions. Names follow upstream so checkpoints map one to one.
"""

from __future__ import annotations

import math
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.vits.config import VITSConfig
from voicehub.architectures.vits.layers import LayerNorm, PointwiseConv1d

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


class FeedForward(nn.Module):
    """Two 'same'-padded convolutions with a ReLU between, masked before each."""

    def __init__(self, channels: int, filter_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.padding = ((kernel_size - 1) // 2, kernel_size // 2)
        self.conv_1 = nn.Conv1d(channels, filter_channels, kernel_size)
        self.conv_2 = nn.Conv1d(filter_channels, channels, kernel_size)

    def forward(self, x: Tensor, x_mask: Tensor) -> Tensor:
        """(batch, channels, T) -> the same."""
        x = torch.relu(self.conv_1(F.pad(x * x_mask, self.padding)))
        out: Tensor = self.conv_2(F.pad(x * x_mask, self.padding))
        return out * x_mask


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

    def forward(self, x: Tensor, x_mask: Tensor) -> Tensor:
        """(batch, channels, T_x) -> the same."""
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


class TextEncoder(nn.Module):
    """Phoneme ids -> hidden states and the prior's mean and log-std per phoneme."""

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        self.hidden_channels = config.hidden_channels
        self.inter_channels = config.inter_channels
        self.emb = nn.Embedding(config.num_symbols, config.hidden_channels)
        self.encoder = Encoder(config)
        self.proj = PointwiseConv1d(config.hidden_channels, 2 * config.inter_channels, 1)

    def forward(self, ids: Tensor, x_mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """ids (batch, T_x), ``x_mask`` (batch, 1, T_x) -> hidden states (batch, C, T_x) and the prior's
        mean and log-std (batch, inter_channels, T_x) each."""
        x = self.encoder(self.embed(ids) * x_mask, x_mask)
        return self.stats(x, x_mask)

    def embed(self, ids: Tensor) -> Tensor:
        """ids (batch, T_x) -> embeddings scaled by sqrt(hidden_channels), (batch, C, T_x)."""
        embedded: Tensor = self.emb(ids)
        return (embedded * math.sqrt(self.hidden_channels)).transpose(1, 2)

    def stats(self, x: Tensor, x_mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The encoder's output ``x`` (batch, C, T_x) -> ``x``, m_p and logs_p (see :meth:`forward`)."""
        stats = self.proj(x) * x_mask
        m_p, logs_p = torch.split(stats, self.inter_channels, dim=1)
        return x, m_p, logs_p


__all__ = ["MASK_VALUE", "Encoder", "FeedForward", "RelativeSelfAttention", "TextEncoder"]
