"""Native PyTorch Whisper encoder-decoder (upstream: github.com/openai/whisper ``model.py``, MIT).

    log-mel (B, n_mels, 3000) -> Conv1d k3 + GELU -> Conv1d k3 stride 2 + GELU -> + sinusoids (1500)
    -> audio_layers x [x + SelfAttn(LN(x)); x + MLP(LN(x))] -> LN  = audio features (B, 1500, W)

    tokens (B, T) -> embedding + learned positions -> text_layers x [x + CausalSelfAttn(LN(x));
    x + CrossAttn(LN(x), audio); x + MLP(LN(x))] -> LN -> @ embedding^T = logits (B, T, vocab)

Attention runs through :func:`torch.nn.functional.scaled_dot_product_attention`. The query, key
and value projections of self-attention are one fused ``qkv`` Linear and the cross-attention key
and value one fused ``kv`` Linear (the CTranslate2 layout: one matrix product instead of three);
the key bias is stored (zero in every released checkpoint; a constant key bias does not change a
softmax over keys).

Decoding keeps a :class:`DecoderState` per batch: the self-attention keys and values of every
position decoded so far, written into buffers preallocated for ``text_context`` positions (no
per-step concatenation), and the cross-attention keys and values, computed once per audio window.
Rows of a batch that share one audio window (beams, best-of samples) share its cross-attention
keys and values: their queries are stacked into one attention call instead of copying the keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.whisper.config import WINDOW_NUM_FRAMES, WhisperConfig
from voicehub.components.derived import DerivedTensors
from voicehub.core.errors import AudioError, InferenceOptionError

MAX_TIMESCALE = 10000
"""Longest period of the encoder's sinusoidal position encoding, in positions."""


def sinusoids(length: int, channels: int, max_timescale: int = MAX_TIMESCALE) -> Tensor:
    """Sinusoidal position encoding of the encoder: ``[sin(p / s_i) | cos(p / s_i)]``.

    The timescales ``s_i`` are spaced geometrically from 1 to ``max_timescale`` over ``channels // 2``
    channels (openai/whisper ``model.sinusoids``).

    Returns:
        float32 (length, channels).
    """
    increment = math.log(max_timescale) / (channels // 2 - 1)
    # Always on the CPU, also inside ``torch.device("meta")`` (arithmetic on meta tensors is slow to set up).
    inverse = torch.exp(-increment * torch.arange(channels // 2, dtype=torch.float32, device="cpu"))
    angles = torch.arange(length, dtype=torch.float32, device="cpu")[:, None] * inverse[None, :]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


class MLP(nn.Module):
    """Position-wise feed-forward block: Linear(W, 4W) -> GELU (erf) -> Linear(4W, W)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x: Tensor) -> Tensor:
        """Map (..., W) -> (..., W)."""
        out: Tensor = self.fc2(F.gelu(self.fc1(x)))
        return out


class LayerCache:
    """One decoder layer's keys and values for one batch.

    Attributes:
        self_key, self_value: (rows, heads, text_context, head_width); positions ``[0, length)`` are valid.
        cross_key, cross_value: (windows, heads, audio_context, head_width), one per audio window.
    """

    def __init__(self, self_key: Tensor, self_value: Tensor, cross_key: Tensor, cross_value: Tensor) -> None:
        self.self_key = self_key
        self.self_value = self_value
        self.cross_key = cross_key
        self.cross_value = cross_value


class DecoderState:
    """What the decoder carries from step to step for one batch of token rows.

    ``rows = windows * group_size``: row ``w * group_size + j`` is the ``j``-th hypothesis (beam or
    sample) of audio window ``w``.

    Attributes:
        layers: one :class:`LayerCache` per decoder layer.
        length: tokens decoded so far (the next token's position).
        group_size: hypotheses per audio window.
    """

    def __init__(self, layers: list[LayerCache], group_size: int) -> None:
        self.layers = layers
        self.length = 0
        self.group_size = group_size

    @property
    def num_rows(self) -> int:
        """Token rows in the batch."""
        return self.layers[0].self_key.shape[0]

    def reorder(self, rows: Tensor) -> None:
        """Keep (and duplicate) rows of the self-attention cache: row ``i`` becomes old row ``rows[i]``.

        Used by beam search; ``rows`` must keep each row within its audio window's group. Only the
        ``length`` valid positions are copied (in place), not the whole preallocated cache: a beam
        step then moves ``length / text_context`` of the bytes a full copy would.
        """
        valid = self.length
        for layer in self.layers:
            layer.self_key[:, :, :valid] = layer.self_key[rows, :, :valid]
            layer.self_value[:, :, :valid] = layer.self_value[rows, :, :valid]

    def keep_windows(self, windows: Tensor) -> None:
        """Keep only the given audio windows (int64 indices, in order) and their ``group_size`` rows each.

        Decoding drops windows that have finished, so later steps run on the rest only. The cross-
        attention keys and values of the kept windows and their rows' self-attention caches are
        copied into new, smaller tensors.
        """
        group = self.group_size
        windows = windows.to(self.layers[0].cross_key.device)
        rows = (windows[:, None] * group + torch.arange(group, device=windows.device)).reshape(-1)
        for layer in self.layers:
            layer.self_key = layer.self_key.index_select(0, rows)
            layer.self_value = layer.self_value.index_select(0, rows)
            layer.cross_key = layer.cross_key.index_select(0, windows)
            layer.cross_value = layer.cross_value.index_select(0, windows)


class SelfAttention(nn.Module):
    """Multi-head self-attention with a fused query/key/value projection."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x: Tensor, cache: LayerCache | None = None, start: int = 0) -> Tensor:
        """Attend over ``x`` (no cache: every position sees every position) or causally over the cache.

        Args:
            x: float (rows, T, W).
            cache: decoder cache; the new keys and values go to positions ``[start, start + T)``.
            start: position of ``x[:, 0]``.

        Returns:
            float (rows, T, W).
        """
        rows, length, width = x.shape
        qkv = self.qkv(x).view(rows, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        query, key, value = qkv[0], qkv[1], qkv[2]
        if cache is None:
            attended = F.scaled_dot_product_attention(query, key, value)
        else:
            end = start + length
            cache.self_key[:, :, start:end] = key
            cache.self_value[:, :, start:end] = value
            key, value = cache.self_key[:, :, :end], cache.self_value[:, :, :end]
            if length == 1:
                attended = F.scaled_dot_product_attention(query, key, value)
            elif start == 0:
                attended = F.scaled_dot_product_attention(query, key, value, is_causal=True)
            else:
                mask = torch.ones(length, end, dtype=torch.bool, device=x.device).tril(start)
                attended = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
        out: Tensor = self.out(attended.transpose(1, 2).reshape(rows, length, width))
        return out


class CrossAttention(nn.Module):
    """Multi-head attention of decoder positions over the audio features, fused key/value projection."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(width, width)
        self.kv = nn.Linear(width, 2 * width)
        self.out = nn.Linear(width, width)

    def keys_values(self, audio_features: Tensor) -> tuple[Tensor, Tensor]:
        """Project the audio features once: two float (windows, heads, audio_context, head_width)."""
        windows, length, width = audio_features.shape
        kv = self.kv(audio_features).view(windows, length, 2, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        return kv[0].contiguous(), kv[1].contiguous()

    def forward(self, x: Tensor, cache: LayerCache, *, return_scores: bool = False) -> tuple[Tensor, Tensor | None]:
        """Attend from ``x`` to the cached audio keys and values.

        Args:
            x: float (windows * group, T, W); rows of one window are consecutive.
            cache: holds the window's keys and values.
            return_scores: also return the pre-softmax scores ``q k^T / sqrt(head_width)``.

        Returns:
            float (windows * group, T, W) and, if asked, the scores float (windows, heads, group * T,
            audio_context) with row ``j * T + t`` for hypothesis ``j``, token ``t``.
        """
        rows, length, width = x.shape
        windows = cache.cross_key.shape[0]
        group = rows // windows
        head_width = width // self.heads
        # The hypotheses of one window attend to the same keys: stack their queries along time.
        query = self.query(x).view(windows, group * length, self.heads, head_width).transpose(1, 2)
        scores = None
        if return_scores:
            scores = (query @ cache.cross_key.transpose(-1, -2)) * head_width**-0.5
            attended = scores.softmax(dim=-1) @ cache.cross_value
        else:
            attended = F.scaled_dot_product_attention(query, cache.cross_key, cache.cross_value)
        return self.out(attended.transpose(1, 2).reshape(rows, length, width)), scores


class EncoderBlock(nn.Module):
    """Pre-norm transformer block of the audio encoder."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.attn_ln = nn.LayerNorm(width)
        self.attn = SelfAttention(width, heads)
        self.mlp_ln = nn.LayerNorm(width)
        self.mlp = MLP(width)

    def forward(self, x: Tensor) -> Tensor:
        """Map (B, T, W) -> (B, T, W)."""
        x = x + self.attn(self.attn_ln(x))
        out: Tensor = x + self.mlp(self.mlp_ln(x))
        return out


class DecoderBlock(nn.Module):
    """Pre-norm transformer block of the text decoder: causal self-attention, cross-attention, MLP."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.attn_ln = nn.LayerNorm(width)
        self.attn = SelfAttention(width, heads)
        self.cross_attn_ln = nn.LayerNorm(width)
        self.cross_attn = CrossAttention(width, heads)
        self.mlp_ln = nn.LayerNorm(width)
        self.mlp = MLP(width)

    def forward(
        self, x: Tensor, cache: LayerCache, start: int, *, return_scores: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Map (rows, T, W) -> (rows, T, W), extending ``cache``; optionally the cross-attention scores."""
        x = x + self.attn(self.attn_ln(x), cache, start)
        attended, scores = self.cross_attn(self.cross_attn_ln(x), cache, return_scores=return_scores)
        x = x + attended
        return x + self.mlp(self.mlp_ln(x)), scores


class AudioEncoder(nn.Module):
    """Log-mel windows -> audio features."""

    positional_embedding: Tensor

    def __init__(self, config: WhisperConfig) -> None:
        super().__init__()
        width = config.audio_width
        self.conv1 = nn.Conv1d(config.num_mel_bins, width, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(width, width, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(config.audio_context, width))
        self.blocks = nn.ModuleList(EncoderBlock(width, config.audio_heads) for _ in range(config.audio_layers))
        self.ln_post = nn.LayerNorm(width)

    def forward(self, mel: Tensor) -> Tensor:
        """Encode 30 s windows.

        Args:
            mel: float (windows, num_mel_bins, 3000), the normalised log-mel of
                :func:`~voicehub.architectures.whisper.audio.log_mel_spectrogram` (10 ms frames).

        Returns:
            float (windows, audio_context, audio_width); position ``p`` covers 20 ms from ``p * 0.02`` s.

        Raises:
            AudioError: for another shape.
        """
        expected = (self.conv1.in_channels, WINDOW_NUM_FRAMES)
        if mel.ndim != 3 or tuple(mel.shape[1:]) != expected:
            raise AudioError(
                f"Whisper encoder expects log-mel (windows, {expected[0]}, {expected[1]}), i.e. 30 s windows of "
                f"10 ms frames, got {tuple(mel.shape)}; pad or cut the audio to 30 s (log_mel_spectrogram does)"
            )
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x)).transpose(1, 2)
        x = x + self.positional_embedding.to(x.dtype)
        for block in self.blocks:
            x = block(x)
        out: Tensor = self.ln_post(x)
        return out


def _retie_after_load(module: nn.Module, incompatible_keys: object) -> None:
    """``load_state_dict`` post-hook of :class:`TextDecoder` (a module-level function: models stay picklable)."""
    if isinstance(module, TextDecoder):
        module._tie_output()


class TextDecoder(nn.Module):
    """Tokens + audio features -> next-token logits, with a key/value cache."""

    def __init__(self, config: WhisperConfig) -> None:
        super().__init__()
        width = config.text_width
        self.heads = config.text_heads
        embedding = torch.empty(config.vocab_size, width)
        if embedding.device.type != "meta":  # normal_ on the meta device imports torch._refs (seconds)
            nn.init.normal_(embedding)
        self.token_embedding = nn.Embedding(config.vocab_size, width, _weight=embedding)
        self.positional_embedding = nn.Parameter(torch.zeros(config.text_context, width))
        self.blocks = nn.ModuleList(DecoderBlock(width, config.text_heads) for _ in range(config.text_layers))
        self.ln = nn.LayerNorm(width)
        # The output projection is the embedding matrix (tied). A Linear holds it too, so that module
        # passes (int8 dynamic quantisation) can swap the projection, the largest product of a decoding
        # step; its weight is a plain reference, not a parameter of its own, so the state dict and
        # parameters() hold the matrix once.
        self.output = nn.Linear(width, config.vocab_size, bias=False, device="meta")
        del self.output.weight
        self._columns: DerivedTensors[Tensor] = DerivedTensors()  # see _output_columns: never saved or copied
        self._tie_output()
        self.register_load_state_dict_post_hook(_retie_after_load)  # type: ignore[no-untyped-call]

    def _tie_output(self) -> None:
        """Point the output projection at the current embedding matrix (after a load replaced it)."""
        if type(self.output) is nn.Linear:
            object.__setattr__(self.output, "weight", self.token_embedding.weight)

    def cross_keys_values(self, audio_features: Tensor) -> list[tuple[Tensor, Tensor]]:
        """Every layer's cross-attention keys and values of the audio features (once per audio window).

        Args:
            audio_features: float (windows, audio_context, W) from :class:`AudioEncoder`.

        Returns:
            One ``(key, value)`` per layer, each float (windows, heads, audio_context, head_width) in
            the weights' dtype; rows of windows can be picked with ``index_select(0, ...)`` and
            handed to :meth:`init_state` again (decoding, a fallback temperature, word alignment).
        """
        # Features in the weights' dtype (a dtype pass hands float32 back from the encoder).
        audio_features = audio_features.to(self.token_embedding.weight.dtype)
        return [cast(DecoderBlock, block).cross_attn.keys_values(audio_features) for block in self.blocks]

    def init_state(
        self,
        audio_features: Tensor | None = None,
        *,
        group_size: int = 1,
        max_length: int | None = None,
        cross: Sequence[tuple[Tensor, Tensor]] | None = None,
    ) -> DecoderState:
        """Allocate the self-attention cache around the cross-attention keys and values.

        Args:
            audio_features: float (windows, audio_context, W) from :class:`AudioEncoder`; its keys
                and values are computed here unless ``cross`` gives them.
            group_size: token rows per window (beam size or samples); the state holds
                ``windows * group_size`` rows.
            max_length: most positions the self-attention cache holds (default ``text_context``).
            cross: keys and values already computed by :meth:`cross_keys_values` (not recomputed).

        Returns:
            A fresh :class:`DecoderState` (length 0).

        Raises:
            InferenceOptionError: with neither ``audio_features`` nor ``cross``, or a ``cross`` of
                another number of layers.
        """
        if cross is None:
            if audio_features is None:
                raise InferenceOptionError(
                    "Whisper decoder state needs the audio features or their cross-attention keys and values; "
                    "pass audio_features= or cross= (from cross_keys_values)"
                )
            cross = self.cross_keys_values(audio_features)
        if len(cross) != len(self.blocks):
            raise InferenceOptionError(
                f"Whisper decoder has {len(self.blocks)} layers, got cross-attention keys and values for "
                f"{len(cross)}; compute them with this decoder's cross_keys_values"
            )
        key = cross[0][0]
        windows = key.shape[0]
        length = self.positional_embedding.shape[0] if max_length is None else max_length
        width = self.positional_embedding.shape[1]
        shape = (windows * group_size, self.heads, length, width // self.heads)
        layers = [LayerCache(key.new_zeros(shape), key.new_zeros(shape), k, v) for k, v in cross]
        return DecoderState(layers, group_size)

    def forward(
        self, tokens: Tensor, state: DecoderState, *, return_scores: bool = False
    ) -> tuple[Tensor, list[Tensor]]:
        """Run new tokens through the decoder, extending ``state``.

        Args:
            tokens: int64 (rows, T), the tokens at positions ``[state.length, state.length + T)``.
            state: from :meth:`init_state`; ``state.length`` advances by T.
            return_scores: also return every layer's cross-attention scores (for word alignment).

        Returns:
            The final hidden states, float (rows, T, W) (turn them into logits with :meth:`logits`),
            and, if asked, one float (windows, heads, group * T, audio_context) score tensor per layer.

        Raises:
            InferenceOptionError: when the tokens would run past ``text_context`` positions.
        """
        start = state.length
        end = start + tokens.shape[1]
        capacity = state.layers[0].self_key.shape[2]
        if end > capacity:
            raise InferenceOptionError(
                f"Whisper decoder holds {capacity} positions, got {end} (prompt, start sequence and output "
                "together); shorten the prompt or the number of new tokens"
            )
        x = self.token_embedding(tokens) + self.positional_embedding[start:end]
        all_scores = []
        for block, cache in zip(self.blocks, state.layers, strict=True):
            x, scores = block(x, cache, start, return_scores=return_scores)
            if scores is not None:
                all_scores.append(scores)
        state.length = end
        return self.ln(x), all_scores

    def logits(self, hidden: Tensor) -> Tensor:
        """Project hidden states (..., W) onto the vocabulary with the tied embedding: float32 (..., vocab).

        Outside training (no gradient wanted for the embedding) a decoding step's few rows take
        other routes through the same float32 products (the sum order changes, so results move by
        rounding only), because the plain product of a few rows by the whole (vocab, W) matrix runs
        far below memory speed: one row against a (W, vocab) column-major copy of the embedding; 2
        to :data:`BLOCKED_MAX_ROWS` rows as one batched product over blocks of
        :data:`VOCAB_BLOCK_ROWS` embedding rows (a view, no copy). The column-major copy costs the
        matrix's size once more and is remade when the weights change. (Timings: run 3 of
        ``benchmarks/results/asr_speed.jsonl``.)
        """
        weight = self.token_embedding.weight
        hidden = hidden.to(weight.dtype)  # the tied weights' dtype
        rows = hidden.numel() // hidden.shape[-1] if hidden.shape[-1] else 0
        logits: Tensor | None = None
        if type(self.output) is nn.Linear and not (torch.is_grad_enabled() and weight.requires_grad):
            flat = hidden.reshape(rows, hidden.shape[-1])
            if rows == 1:
                columns = self._output_columns(weight)
                if columns is not None:
                    logits = flat @ columns
            elif 1 < rows <= BLOCKED_MAX_ROWS:
                logits = _blocked_projection(weight.detach(), flat)
            if logits is not None:
                logits = logits.reshape(*hidden.shape[:-1], logits.shape[-1])
        if logits is None:
            logits = self.output(hidden)
        return logits.float()

    def _output_columns(self, weight: Tensor) -> Tensor | None:
        """The embedding as a contiguous (W, vocab) matrix, remade after any change to the weights.

        Returns ``None`` for an inference tensor (it keeps no version counter, so a change could not be
        seen; :class:`~voicehub.components.derived.DerivedTensors`): the caller then multiplies by the
        embedding itself.
        """
        return self._columns.get([weight], lambda: weight.detach().t().contiguous())


VOCAB_BLOCK_ROWS = 2048
"""Embedding rows per block of :func:`_blocked_projection` (not critical: sizes from 1024 to 4096 ran alike)."""

BLOCKED_MAX_ROWS = 32
"""Most hidden rows projected block by block; more rows go through one plain matrix product."""


def _blocked_projection(weight: Tensor, hidden: Tensor) -> Tensor:
    """``hidden @ weight.T`` as one batched product over blocks of embedding rows.

    Args:
        weight: (vocab, W) contiguous embedding.
        hidden: (R, W) rows, R small (a decoding step).

    Returns:
        (R, vocab) products in the weight's dtype.
    """
    vocab, width = weight.shape
    rows = hidden.shape[0]
    full = vocab // VOCAB_BLOCK_ROWS * VOCAB_BLOCK_ROWS
    out = hidden.new_empty(rows, vocab)
    if full:
        blocks = weight[:full].view(full // VOCAB_BLOCK_ROWS, VOCAB_BLOCK_ROWS, width)
        products = torch.bmm(blocks, hidden.t().expand(blocks.shape[0], width, rows))  # (blocks, block rows, R)
        out[:, :full] = products.view(full, rows).t()
    if full < vocab:
        out[:, full:] = hidden @ weight[full:].t()
    return out


class Whisper(nn.Module):
    """The Whisper encoder-decoder.

    Attributes:
        config: the sizes this graph was built with.
        encoder: log-mel -> audio features.
        decoder: tokens + audio features -> logits.
    """

    def __init__(self, config: WhisperConfig | None = None) -> None:
        super().__init__()
        self.config = config or WhisperConfig()
        self.encoder = AudioEncoder(self.config)
        self.decoder = TextDecoder(self.config)

    def embed_audio(self, mel: Tensor) -> Tensor:
        """Encode log-mel windows (windows, num_mel_bins, 3000) -> float (windows, audio_context, W)."""
        features: Tensor = self.encoder(mel.to(self.encoder.conv1.weight.dtype))
        return features

    def decode(
        self, tokens: Tensor, state: DecoderState, *, return_scores: bool = False
    ) -> tuple[Tensor, list[Tensor]]:
        """One decoder step over new tokens (see :meth:`TextDecoder.forward`); decoding loops call this.

        Returns:
            The final hidden states, float (rows, T, W), and the cross-attention scores if asked.
        """
        return self.decoder(tokens, state, return_scores=return_scores)  # type: ignore[no-any-return]

    def optimization_execution_methods(self) -> tuple[str, ...]:
        """The entry points optimization passes wrap (``threads``, ``inference-mode``, ``dtype``, ``compile``).

        :meth:`embed_audio` (the encoder, once per window batch) and :meth:`decode` (the decoder step,
        once per token); :meth:`forward` runs through them (looked up on the instance, so it sees
        the wrapped versions) and is not listed, so that a wrapping pass never nests.
        """
        return ("embed_audio", "decode")

    def forward(self, mel: Tensor, tokens: Tensor) -> Tensor:
        """Teacher-forced logits: every token sees itself and the tokens before it.

        Args:
            mel: float (B, num_mel_bins, 3000) log-mel windows.
            tokens: int64 (B, T), T <= ``text_context``.

        Returns:
            float32 logits (B, T, vocab_size); row ``t`` predicts token ``t + 1``.
        """
        features = self.embed_audio(mel)
        state = self.decoder.init_state(features, max_length=tokens.shape[1])
        hidden, _ = self.decode(tokens, state)
        return self.decoder.logits(hidden)


__all__ = [
    "BLOCKED_MAX_ROWS",
    "MAX_TIMESCALE",
    "MLP",
    "VOCAB_BLOCK_ROWS",
    "AudioEncoder",
    "CrossAttention",
    "DecoderBlock",
    "DecoderState",
    "EncoderBlock",
    "LayerCache",
    "SelfAttention",
    "TextDecoder",
    "Whisper",
    "sinusoids",
]
