"""Native Moonshine: raw-waveform encoder and key/value-cached decoder, with greedy decoding.

The graph follows the upstream model (usefulsensors/moonshine, MIT; the Hugging Face
``transformers`` port ``models/moonshine/modeling_moonshine.py``, Apache-2.0), written anew:

* Stem: ``Conv1d(1, D, 127, stride 64, no bias)`` -> tanh -> ``GroupNorm(1 group, D)`` ->
  ``Conv1d(D, 2D, 7, stride 3)`` -> GELU -> ``Conv1d(2D, D, 3, stride 2)`` -> GELU: one frame per
  384 samples (24 ms at 16 kHz), no padding, so the frame count follows the input length.
* Encoder layers (pre-norm): LayerNorm (no bias) -> self-attention with rotary position
  embedding on the first ``rotary_dim`` channels of each head, adjacent channel pairs rotated
  (GPT-J style) -> residual; LayerNorm -> Linear -> exact GELU -> Linear -> residual; a final LayerNorm.
* Decoder layers: LayerNorm -> causal rotary self-attention -> residual; LayerNorm ->
  cross-attention on the encoder output (no rotary) -> residual; LayerNorm -> Linear to
  ``2 * intermediate`` split into value and gate -> ``value * silu(gate)`` -> Linear -> residual;
  a final LayerNorm; logits through the token embedding (tied output projection).

Batches: waveforms of different lengths are zero-padded on the right and passed with their
lengths. The stem's GroupNorm statistics, the encoder's self-attention and the decoder's
cross-attention then use each clip's own samples and frames only, so a batch gives what each clip
gives alone (the tests bound the difference). Attention runs through
``torch.nn.functional.scaled_dot_product_attention``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.moonshine.config import (
    MIN_NUM_SAMPLES,
    STEM_KERNELS,
    STEM_STRIDES,
    MoonshineConfig,
)
from voicehub.core.errors import AudioError, InferenceOptionError


def rotary_inverse_frequencies(config: MoonshineConfig) -> Tensor:
    """Rotary frequencies in radians per position, float32 (rotary_dim / 2,).

    ``theta ** (-2i / rotary_dim)`` for ``i = 0 .. rotary_dim / 2 - 1`` (the "default" rope of
    ``transformers``; 16 values for base-en).
    """
    exponents = torch.arange(0, config.rotary_dim, 2, dtype=torch.float32, device="cpu") / config.rotary_dim
    return torch.pow(config.rope_theta, exponents).reciprocal()


def _rotary_tables(
    config: MoonshineConfig, device: torch.device, start: int, length: int, dtype: torch.dtype
) -> tuple[Tensor, Tensor]:
    """cos and sin of ``position * frequency`` for positions ``start .. start + length - 1``: (length, rotary_dim / 2).

    Computed in float32 from the config on every call (a few hundred values), so a model cast to
    bfloat16 keeps exact angles.
    """
    positions = torch.arange(start, start + length, dtype=torch.float32)
    angles = (positions[:, None] * rotary_inverse_frequencies(config)[None, :]).to(device)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def _apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate adjacent channel pairs ``(2i, 2i + 1)`` of the first ``2 * cos.shape[-1]`` channels.

    Args:
        x: (batch, heads, length, head_dim).
        cos, sin: (length, rotary_dim / 2).
    """
    rotary_dim = 2 * cos.shape[-1]
    pairs = x[..., :rotary_dim].reshape(*x.shape[:-1], rotary_dim // 2, 2)
    even, odd = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1).flatten(-2)
    return torch.cat((rotated, x[..., rotary_dim:]), dim=-1)


class MoonshineAttention(nn.Module):
    """Multi-head attention without biases (self- or cross-attention).

    Args:
        config: sizes.
    """

    def __init__(self, config: MoonshineConfig) -> None:
        super().__init__()
        width = config.hidden_size
        self.num_heads = config.num_heads
        self.head_dim = config.head_dim
        self.q_proj = nn.Linear(width, width, bias=False)
        self.k_proj = nn.Linear(width, width, bias=False)
        self.v_proj = nn.Linear(width, width, bias=False)
        self.o_proj = nn.Linear(width, width, bias=False)

    def heads(self, projection: nn.Linear, states: Tensor) -> Tensor:
        """Project (batch, length, hidden) and split heads: (batch, heads, length, head_dim)."""
        projected: Tensor = projection(states)
        return projected.reshape(*states.shape[:2], self.num_heads, self.head_dim).transpose(1, 2)

    def attend(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None, is_causal: bool) -> Tensor:
        """Scaled dot-product attention and the output projection.

        Args:
            query: (batch, heads, length, head_dim).
            keys, values: (batch, heads, key_length, head_dim).
            mask: bool, broadcastable to (batch, heads, length, key_length), True where a key may be
                attended; ``None`` for all keys.
            is_causal: mask future keys (only with ``mask=None`` and length == key_length).

        Returns:
            (batch, length, hidden).
        """
        out = F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, is_causal=is_causal)
        projected: Tensor = self.o_proj(out.transpose(1, 2).flatten(2))
        return projected


class MoonshineEncoderLayer(nn.Module):
    """Pre-norm transformer layer: rotary self-attention and a GELU MLP."""

    def __init__(self, config: MoonshineConfig) -> None:
        super().__init__()
        self.input_layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=False)
        self.self_attn = MoonshineAttention(config)
        self.post_attention_layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=False)
        self.fc1 = nn.Linear(config.hidden_size, config.encoder_intermediate_size)
        self.fc2 = nn.Linear(config.encoder_intermediate_size, config.hidden_size)

    def forward(self, hidden: Tensor, rotary: tuple[Tensor, Tensor], mask: Tensor | None) -> Tensor:
        """(batch, frames, hidden) -> the same shape; ``mask`` as in :meth:`MoonshineAttention.attend`."""
        attention = self.self_attn
        normed = self.input_layernorm(hidden)
        query = _apply_rotary(attention.heads(attention.q_proj, normed), *rotary)
        keys = _apply_rotary(attention.heads(attention.k_proj, normed), *rotary)
        values = attention.heads(attention.v_proj, normed)
        hidden = hidden + attention.attend(query, keys, values, mask, is_causal=False)
        update: Tensor = self.fc2(F.gelu(self.fc1(self.post_attention_layernorm(hidden))))
        return hidden + update


class MoonshineEncoder(nn.Module):
    """Raw waveform -> encoder states, one frame per 384 samples.

    Args:
        config: sizes.
    """

    def __init__(self, config: MoonshineConfig) -> None:
        super().__init__()
        width = config.hidden_size
        self.config = config
        self.conv1 = nn.Conv1d(1, width, STEM_KERNELS[0], stride=STEM_STRIDES[0], bias=False)
        self.groupnorm = nn.GroupNorm(1, width, eps=config.group_norm_eps)
        self.conv2 = nn.Conv1d(width, 2 * width, STEM_KERNELS[1], stride=STEM_STRIDES[1])
        self.conv3 = nn.Conv1d(2 * width, width, STEM_KERNELS[2], stride=STEM_STRIDES[2])
        self.layers = nn.ModuleList(MoonshineEncoderLayer(config) for _ in range(config.encoder_num_layers))
        self.layer_norm = nn.LayerNorm(width, eps=config.layer_norm_eps, bias=False)

    @staticmethod
    def output_lengths(lengths: Tensor) -> list[Tensor]:
        """Frames after each stem convolution for inputs of ``lengths`` samples: three (batch,) int64 tensors."""
        out = []
        for kernel, stride in zip(STEM_KERNELS, STEM_STRIDES, strict=True):
            lengths = torch.div(lengths - kernel, stride, rounding_mode="floor") + 1
            out.append(lengths)
        return out

    def _group_norm(self, hidden: Tensor, num_frames: Tensor) -> Tensor:
        """Single-group GroupNorm over each clip's own frames (statistics ignore right padding).

        The same arithmetic as ``nn.GroupNorm(1, C)`` (biased variance), with the sums taken over
        the first ``num_frames[i]`` frames of clip ``i`` only.
        """
        valid = (torch.arange(hidden.shape[-1], device=hidden.device) < num_frames[:, None]).unsqueeze(1)
        count = (num_frames * hidden.shape[1]).to(hidden.dtype)[:, None, None]
        mean = torch.where(valid, hidden, 0).sum(dim=(1, 2), keepdim=True) / count
        centred = torch.where(valid, hidden - mean, 0)
        variance = centred.square().sum(dim=(1, 2), keepdim=True) / count
        normed = (hidden - mean) * torch.rsqrt(variance + self.groupnorm.eps)
        return normed * self.groupnorm.weight[:, None] + self.groupnorm.bias[:, None]

    def forward(self, waveform: Tensor, num_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Encode a batch of waveforms.

        Args:
            waveform: float (batch, num_samples), mono, in [-1, 1], at 16 kHz; clips shorter than the
                batch are zero-padded on the right.
            num_samples: int64 (batch,), each clip's length in samples; ``None`` when every clip
                fills the batch.

        Returns:
            ``(states, num_frames)``: float (batch, frames, hidden) with frames =
            :func:`~voicehub.architectures.moonshine.config.num_encoder_frames` of the longest clip
            (frames past a clip's own count are zero), and int64 (batch,) frames per clip.

        Raises:
            AudioError: for a waveform that is not (batch, num_samples), or a clip shorter than
                895 samples (56 ms), the stem's receptive field.
        """
        batch = _check_waveform(waveform, num_samples)
        hidden = torch.tanh(self.conv1(batch.unsqueeze(1)))
        frame_counts: list[Tensor] | None = None
        if num_samples is None:
            hidden = self.groupnorm(hidden)
        else:
            frame_counts = self.output_lengths(num_samples.to(device=hidden.device, dtype=torch.int64))
            hidden = self._group_norm(hidden, frame_counts[0])
        hidden = F.gelu(self.conv2(hidden))
        hidden = F.gelu(self.conv3(hidden)).transpose(1, 2)  # (batch, frames, hidden)
        num_frames_total = hidden.shape[1]
        rotary = _rotary_tables(self.config, hidden.device, 0, num_frames_total, hidden.dtype)
        mask = None
        if frame_counts is not None:
            num_frames = frame_counts[-1]
            valid = torch.arange(num_frames_total, device=hidden.device)[None, :] < num_frames[:, None]
            mask = None if bool(valid.all()) else valid[:, None, None, :]
        else:
            num_frames = torch.full((batch.shape[0],), num_frames_total, dtype=torch.int64, device=hidden.device)
        for layer in self.layers:
            hidden = layer(hidden, rotary, mask)
        hidden = self.layer_norm(hidden)
        if mask is not None:
            hidden = hidden * mask[:, 0, 0, :, None].to(hidden.dtype)
        return hidden, num_frames


def _check_waveform(waveform: Tensor, num_samples: Tensor | None) -> Tensor:
    if waveform.dim() != 2 or not waveform.is_floating_point():
        raise AudioError(
            f"waveform: expected a float tensor (batch, num_samples), got {waveform.dtype} {tuple(waveform.shape)}",
            source="waveform",
        )
    lengths = [waveform.shape[1]] * waveform.shape[0]
    if num_samples is not None:
        if num_samples.shape != (waveform.shape[0],) or num_samples.is_floating_point():
            raise AudioError(
                f"num_samples: expected an int tensor ({waveform.shape[0]},), one length per clip, got "
                f"{num_samples.dtype} {tuple(num_samples.shape)}",
                source="waveform",
            )
        lengths = [int(n) for n in num_samples.tolist()]
        if max(lengths, default=0) > waveform.shape[1]:
            raise AudioError(
                f"num_samples: a clip of {max(lengths)} samples does not fit a batch of {waveform.shape[1]}",
                source="waveform",
            )
    short = [n for n in lengths if n < MIN_NUM_SAMPLES]
    if short:
        raise AudioError(
            f"waveform: Moonshine needs at least {MIN_NUM_SAMPLES} samples (56 ms at 16 kHz) per clip, got "
            f"{min(short)}; pad short clips with silence",
            source="waveform",
        )
    return waveform


class MoonshineDecoderLayer(nn.Module):
    """Causal rotary self-attention, cross-attention and a SiLU-gated MLP, each pre-normed."""

    def __init__(self, config: MoonshineConfig) -> None:
        super().__init__()
        width = config.hidden_size
        self.input_layernorm = nn.LayerNorm(width, eps=config.layer_norm_eps, bias=False)
        self.self_attn = MoonshineAttention(config)
        self.post_attention_layernorm = nn.LayerNorm(width, eps=config.layer_norm_eps, bias=False)
        self.encoder_attn = MoonshineAttention(config)
        self.final_layernorm = nn.LayerNorm(width, eps=config.layer_norm_eps, bias=False)
        self.fc1 = nn.Linear(width, 2 * config.decoder_intermediate_size)
        self.fc2 = nn.Linear(config.decoder_intermediate_size, width)


@dataclass(slots=True)
class MoonshineDecoderState:
    """The decoder's cache for one batch of audio: cross-attention K/V (once) and the growing self-attention K/V.

    Made by :meth:`MoonshineModel.start_decoding`; :meth:`MoonshineModel.decode` appends to it.

    Attributes:
        cross_keys, cross_values: per layer, (batch, heads, frames, head_dim), computed once per audio.
        encoder_mask: bool (batch, 1, 1, frames), True on each clip's own frames; ``None`` when no
            clip is padded.
        self_keys, self_values: per layer, (batch, heads, capacity, head_dim); the first
            :attr:`length` positions are filled.
        length: tokens decoded so far (the position of the next token).
    """

    cross_keys: list[Tensor]
    cross_values: list[Tensor]
    encoder_mask: Tensor | None
    self_keys: list[Tensor]
    self_values: list[Tensor]
    length: int = 0

    @property
    def batch_size(self) -> int:
        """Clips in the batch."""
        return self.cross_keys[0].shape[0]

    def reserve(self, extra: int) -> None:
        """Make room for ``extra`` more self-attention positions (doubling the buffers when they are full)."""
        capacity = self.self_keys[0].shape[2]
        if self.length + extra <= capacity:
            return
        grow = max(self.length + extra, 2 * capacity) - capacity
        for cache in (self.self_keys, self.self_values):
            for index, tensor in enumerate(cache):
                cache[index] = torch.cat((tensor, tensor.new_zeros(*tensor.shape[:2], grow, tensor.shape[3])), dim=2)


class MoonshineDecoder(nn.Module):
    """Token embedding (also the output projection), decoder layers and the final norm.

    Args:
        config: sizes.
    """

    def __init__(self, config: MoonshineConfig) -> None:
        super().__init__()
        self.config = config
        weight = torch.empty(config.vocab_size, config.hidden_size)
        if weight.device.type != "meta":  # on the meta device (checkpoint loading) init would only cost time
            nn.init.normal_(weight)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, _weight=weight)
        self.layers = nn.ModuleList(MoonshineDecoderLayer(config) for _ in range(config.decoder_num_layers))
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=False)


class MoonshineModel(nn.Module):
    """Moonshine encoder-decoder.

    Typical use: ``tokens = model.generate(waveform)`` (greedy, batched); or step by step with
    :meth:`encode`, :meth:`start_decoding` and :meth:`decode`.

    Args:
        config: sizes; base-en by default.
    """

    def __init__(self, config: MoonshineConfig | None = None) -> None:
        super().__init__()
        self.config = config or MoonshineConfig()
        self.encoder = MoonshineEncoder(self.config)
        self.decoder = MoonshineDecoder(self.config)

    def encode(self, waveform: Tensor, num_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Encoder states of a batch; see :meth:`MoonshineEncoder.forward` (same arguments, result, errors)."""
        encoded: tuple[Tensor, Tensor] = self.encoder(waveform.to(self.decoder.embed_tokens.weight.dtype), num_samples)
        return encoded

    def start_decoding(
        self, states: Tensor, num_frames: Tensor | None = None, *, capacity: int = 64
    ) -> MoonshineDecoderState:
        """Compute every layer's cross-attention keys and values once for a batch of encoder states.

        Args:
            states: float (batch, frames, hidden) from :meth:`encode`.
            num_frames: int64 (batch,) frames per clip; ``None`` when no clip is padded.
            capacity: self-attention positions to allocate up front (the cache grows past it).

        Returns:
            A fresh decoder state at position 0.
        """
        keys, values = [], []
        for module in self.decoder.layers:
            attention = cast(MoonshineDecoderLayer, module).encoder_attn
            keys.append(attention.heads(attention.k_proj, states))
            values.append(attention.heads(attention.v_proj, states))
        mask = None
        if num_frames is not None:
            valid = torch.arange(states.shape[1], device=states.device)[None, :] < num_frames.to(states.device)[:, None]
            mask = None if bool(valid.all()) else valid[:, None, None, :]
        shape = (states.shape[0], self.config.num_heads, max(1, capacity), self.config.head_dim)
        layers = self.config.decoder_num_layers
        return MoonshineDecoderState(
            cross_keys=keys,
            cross_values=values,
            encoder_mask=mask,
            self_keys=[states.new_zeros(shape) for _ in range(layers)],
            self_values=[states.new_zeros(shape) for _ in range(layers)],
        )

    def decode(self, tokens: Tensor, state: MoonshineDecoderState, *, last_only: bool = False) -> Tensor:
        """Run the decoder on new tokens, appending their keys and values to ``state``.

        Args:
            tokens: int64 (batch, new_tokens) at positions ``state.length ..``; the first call
                usually passes the start token (``bos_token_id``) alone.
            state: from :meth:`start_decoding`; updated in place (its length grows by new_tokens).
            last_only: return the logits of the last new token only.

        Returns:
            Logits, float (batch, new_tokens, vocab_size), or (batch, 1, vocab_size) with ``last_only``.

        Raises:
            InferenceOptionError: for tokens of another batch size or outside the vocabulary.
        """
        decoder = self.decoder
        if tokens.dim() != 2 or tokens.shape[0] != state.batch_size or tokens.shape[1] == 0:
            raise InferenceOptionError(
                f"tokens: expected int64 (batch={state.batch_size}, new_tokens >= 1), got {tuple(tokens.shape)}"
            )
        if int(tokens.min()) < 0 or int(tokens.max()) >= self.config.vocab_size:
            raise InferenceOptionError(
                f"tokens: ids must be in [0, {self.config.vocab_size}), got [{int(tokens.min())}, {int(tokens.max())}]"
            )
        start, count = state.length, tokens.shape[1]
        state.reserve(count)
        hidden = decoder.embed_tokens(tokens)
        rotary = _rotary_tables(self.config, hidden.device, start, count, hidden.dtype)
        stop = start + count
        causal = None
        if count > 1 and start > 0:
            positions = torch.arange(stop, device=hidden.device)
            causal = positions[None, :] <= torch.arange(start, stop, device=hidden.device)[:, None]
        for index, layer in enumerate(decoder.layers):
            module = cast(MoonshineDecoderLayer, layer)
            attention = module.self_attn
            normed = module.input_layernorm(hidden)
            query = _apply_rotary(attention.heads(attention.q_proj, normed), *rotary)
            state.self_keys[index][:, :, start:stop] = _apply_rotary(attention.heads(attention.k_proj, normed), *rotary)
            state.self_values[index][:, :, start:stop] = attention.heads(attention.v_proj, normed)
            keys, values = state.self_keys[index][:, :, :stop], state.self_values[index][:, :, :stop]
            hidden = hidden + attention.attend(query, keys, values, causal, is_causal=count > 1 and start == 0)
            cross = module.encoder_attn
            query = cross.heads(cross.q_proj, module.post_attention_layernorm(hidden))
            hidden = hidden + cross.attend(
                query, state.cross_keys[index], state.cross_values[index], state.encoder_mask, is_causal=False
            )
            value, gate = module.fc1(module.final_layernorm(hidden)).chunk(2, dim=-1)
            hidden = hidden + module.fc2(value * F.silu(gate))
        state.length = stop
        if last_only:
            hidden = hidden[:, -1:]
        return F.linear(decoder.norm(hidden), decoder.embed_tokens.weight)

    def forward(self, waveform: Tensor, tokens: Tensor, num_samples: Tensor | None = None) -> Tensor:
        """Teacher-forced logits (training and scoring).

        Args:
            waveform: float (batch, num_samples) at 16 kHz, right-padded; see :meth:`encode`.
            tokens: int64 (batch, length), starting with ``bos_token_id``.
            num_samples: int64 (batch,) clip lengths, or ``None``.

        Returns:
            Logits, float (batch, length, vocab_size); position ``t`` predicts token ``t + 1``.
        """
        states, num_frames = self.encode(waveform, num_samples)
        state = self.start_decoding(states, num_frames if num_samples is not None else None, capacity=tokens.shape[1])
        return self.decode(tokens, state)

    @torch.inference_mode()
    def generate(
        self, waveform: Tensor, num_samples: Tensor | None = None, *, max_new_tokens: int | None = None
    ) -> list[list[int]]:
        """Greedy transcription of a batch of clips, in token ids.

        Each clip stops at its end-of-text token or after its own budget,
        ``config.max_new_tokens(clip samples)`` (6 tokens per second of audio, as upstream), or
        ``max_new_tokens`` when given.

        Args:
            waveform: float (batch, num_samples) or (num_samples,), mono, in [-1, 1], at 16 kHz;
                shorter clips zero-padded on the right.
            num_samples: int64 (batch,) clip lengths, or ``None`` when no clip is padded.
            max_new_tokens: a budget (>= 1) for every clip instead of the duration rule.

        Returns:
            Per clip, the generated token ids without the start token and without the
            end-of-text token.

        Raises:
            AudioError: see :meth:`MoonshineEncoder.forward`.
            InferenceOptionError: for a budget < 1.
        """
        batch = waveform if waveform.dim() != 1 else waveform.unsqueeze(0)
        if max_new_tokens is not None and (isinstance(max_new_tokens, bool) or max_new_tokens < 1):
            raise InferenceOptionError(f"max_new_tokens: expected an int >= 1, got {max_new_tokens!r}")
        states, num_frames = self.encode(batch, num_samples)
        lengths = num_samples.tolist() if num_samples is not None else [batch.shape[-1]] * batch.shape[0]
        budgets = [max_new_tokens or self.config.max_new_tokens(int(n)) for n in lengths]
        state = self.start_decoding(states, num_frames if num_samples is not None else None, capacity=max(budgets) + 1)
        eos = self.config.eos_token_id
        next_tokens = torch.full((batch.shape[0], 1), self.config.bos_token_id, dtype=torch.int64, device=states.device)
        outputs: list[list[int]] = [[] for _ in budgets]
        done = [False] * len(budgets)
        for step in range(max(budgets)):
            logits = self.decode(next_tokens, state, last_only=True)
            chosen = logits[:, -1].argmax(dim=-1)
            for index, token in enumerate(chosen.tolist()):
                if done[index]:
                    continue
                if token == eos:
                    done[index] = True
                else:
                    outputs[index].append(token)
                    done[index] = step + 1 >= budgets[index]
            if all(done):
                break
            next_tokens = chosen[:, None]
        return outputs

    def optimization_execution_methods(self) -> tuple[str, ...]:
        """The entry points optimization passes wrap (``threads``, ``inference-mode``, ``compile``...).

        The three tensor-level steps; :meth:`forward` and :meth:`generate` run through them
        (looked up on the instance, so they see the wrapped versions), and are not listed
        themselves so that a wrapping pass never nests.
        """
        return ("encode", "start_decoding", "decode")


__all__ = [
    "MoonshineAttention",
    "MoonshineDecoder",
    "MoonshineDecoderLayer",
    "MoonshineDecoderState",
    "MoonshineEncoder",
    "MoonshineEncoderLayer",
    "MoonshineModel",
    "rotary_inverse_frequencies",
]
