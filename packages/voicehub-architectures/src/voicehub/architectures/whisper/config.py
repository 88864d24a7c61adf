"""Configuration of the native Whisper encoder-decoder, and the fixed audio constants of its front end.

One :class:`WhisperConfig` describes every released size (openai/whisper ``model.py``,
``ModelDimensions``; the sizes in :data:`OFFICIAL_SIZES` are those of the published checkpoints):
the log-mel input (80 bins, or 128 for large-v3), the audio encoder (two convolutions, then
``audio_layers`` pre-norm transformer blocks over ``audio_context`` positions) and the text decoder
(``text_layers`` blocks with causal self-attention and cross-attention to the encoder output, token
embeddings tied to the output projection). English-only checkpoints have 51864 tokens,
multilingual ones 51865 (99 languages) or 51866 (100 languages, large-v3).

:class:`WhisperGenerationConfig` holds what a checkpoint's side files say about decoding: the
suppressed tokens, the tokens suppressed at the first step, and the cross-attention heads that
align text with time (for word timestamps).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from voicehub.core.config import Config
from voicehub.core.errors import ConfigError

SAMPLE_RATE = 16000
"""Input rate of every Whisper checkpoint, in Hz."""

N_FFT = 400
"""STFT size and Hann window length in samples (25 ms)."""

HOP_LENGTH = 160
"""STFT hop in samples (10 ms): 100 mel frames per second."""

WINDOW_DURATION_S = 30
"""Length of the audio window the encoder sees, in seconds."""

WINDOW_NUM_SAMPLES = WINDOW_DURATION_S * SAMPLE_RATE  # 480000 samples
"""Samples in one 30 s window."""

WINDOW_NUM_FRAMES = WINDOW_NUM_SAMPLES // HOP_LENGTH  # 3000 frames
"""Mel frames in one 30 s window."""

FRAMES_PER_SECOND = SAMPLE_RATE // HOP_LENGTH  # 100 frames per second
"""Mel frames per second of audio."""

ENGLISH_VOCAB_SIZE = 51864
"""Vocabulary of the English-only checkpoints (GPT-2 BPE + specials); larger vocabularies are multilingual."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WhisperConfig(Config):
    """Sizes of a Whisper encoder-decoder.

    Attributes:
        num_mel_bins: log-mel bins of the input (80, or 128 for large-v3).
        audio_context: encoder positions per window (1500: the 3000 mel frames of 30 s after the
            stride-2 convolution, i.e. 20 ms per position).
        audio_width: encoder model width.
        audio_heads: encoder attention heads (``audio_width`` must be divisible by it).
        audio_layers: encoder transformer blocks.
        vocab_size: text tokens, specials included (51864 English-only, 51865/51866 multilingual).
        text_context: most tokens the decoder attends to (448: prompt + sot sequence + output).
        text_width: decoder model width (equal to ``audio_width`` in every released checkpoint; the
            cross-attention keys and values project the encoder output at this width).
        text_heads: decoder attention heads.
        text_layers: decoder transformer blocks.
    """

    config_type: ClassVar[str] = "whisper"
    schema_version: ClassVar[int] = 1

    num_mel_bins: int = 80
    audio_context: int = 1500
    audio_width: int = 384
    audio_heads: int = 6
    audio_layers: int = 4
    vocab_size: int = ENGLISH_VOCAB_SIZE
    text_context: int = 448
    text_width: int = 384
    text_heads: int = 6
    text_layers: int = 4

    def validate(self) -> None:
        """Check types, then ranges.

        Raises:
            ConfigError: naming the field, what was expected and what was given.
        """
        Config.validate(self)
        for name in (
            "num_mel_bins",
            "audio_context",
            "audio_width",
            "audio_heads",
            "audio_layers",
            "vocab_size",
            "text_context",
            "text_width",
            "text_heads",
            "text_layers",
        ):
            value = getattr(self, name)
            if value <= 0:
                raise ConfigError(
                    f"whisper.{name}: expected a positive int, got {value}", config_type=self.config_type, key=name
                )
        for width, heads in (("audio_width", "audio_heads"), ("text_width", "text_heads")):
            if getattr(self, width) % getattr(self, heads):
                raise ConfigError(
                    f"whisper.{width} ({getattr(self, width)}) must be divisible by whisper.{heads} "
                    f"({getattr(self, heads)}): each head gets width // heads channels",
                    config_type=self.config_type,
                    key=heads,
                )
        if self.audio_width != self.text_width:
            raise ConfigError(
                f"whisper.text_width ({self.text_width}) must equal whisper.audio_width ({self.audio_width}): "
                "the decoder's cross-attention reads the encoder output at the decoder's width",
                config_type=self.config_type,
                key="text_width",
            )
        if self.audio_context * 2 * HOP_LENGTH != WINDOW_NUM_SAMPLES:
            raise ConfigError(
                f"whisper.audio_context: expected {WINDOW_NUM_FRAMES // 2} (30 s windows of {WINDOW_NUM_FRAMES} "
                f"mel frames, halved by the stride-2 convolution), got {self.audio_context}",
                config_type=self.config_type,
                key="audio_context",
            )

    @property
    def is_multilingual(self) -> bool:
        """True for the multilingual vocabularies (more than the 51864 English-only tokens)."""
        return self.vocab_size > ENGLISH_VOCAB_SIZE

    @property
    def time_precision_s(self) -> float:
        """Seconds per encoder position and per timestamp token step (0.02 s)."""
        return WINDOW_DURATION_S / self.audio_context


def _size(
    width: int, heads: int, layers: int, vocab: int, *, mels: int = 80, text_layers: int | None = None
) -> WhisperConfig:
    return WhisperConfig(
        num_mel_bins=mels,
        audio_width=width,
        audio_heads=heads,
        audio_layers=layers,
        vocab_size=vocab,
        text_width=width,
        text_heads=heads,
        text_layers=layers if text_layers is None else text_layers,
    )


OFFICIAL_SIZES: dict[str, WhisperConfig] = {
    "tiny.en": _size(384, 6, 4, 51864),
    "tiny": _size(384, 6, 4, 51865),
    "base.en": _size(512, 8, 6, 51864),
    "base": _size(512, 8, 6, 51865),
    "small.en": _size(768, 12, 12, 51864),
    "small": _size(768, 12, 12, 51865),
    "medium.en": _size(1024, 16, 24, 51864),
    "medium": _size(1024, 16, 24, 51865),
    "large-v1": _size(1280, 20, 32, 51865),
    "large-v2": _size(1280, 20, 32, 51865),
    "large-v3": _size(1280, 20, 32, 51866, mels=128),
    "large-v3-turbo": _size(1280, 20, 32, 51866, mels=128, text_layers=4),
}
"""The sizes of the released checkpoints (openai/whisper ``_MODELS``; declarative: nothing dispatches on
these names, loaders read the sizes from the checkpoint itself)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WhisperGenerationConfig(Config):
    """Decoding facts a checkpoint ships next to its weights.

    Read from the CTranslate2 ``config.json`` (``suppress_ids``, ``suppress_ids_begin``,
    ``alignment_heads``) or the Hugging Face ``generation_config.json`` (``suppress_tokens``,
    ``begin_suppress_tokens``, ``alignment_heads``); a checkpoint without them gets the rules of
    openai/whisper (non-speech symbols computed from the tokenizer, the blank and end-of-text
    suppressed first, the last half of the decoder layers for alignment).

    Attributes:
        suppress_tokens: token ids never sampled (non-speech symbols such as ``♪`` or ``[``).
            The decoder always adds the task, start-of-transcript, previous-text, LM and no-speech
            tokens to this set.
        begin_suppress_tokens: token ids not sampled as the first token (the blank ``" "`` and
            end-of-text: an empty transcript must come from the no-speech rule, not from sampling).
        alignment_heads: ``(decoder layer, head)`` pairs whose cross-attention follows the audio
            in time; empty means every head of the last half of the layers.
    """

    config_type: ClassVar[str] = "whisper-generation"
    schema_version: ClassVar[int] = 1

    suppress_tokens: tuple[int, ...] = ()
    begin_suppress_tokens: tuple[int, ...] = ()
    alignment_heads: tuple[tuple[int, int], ...] = ()

    def validate(self) -> None:
        """Check types, then that ids and heads are non-negative.

        Raises:
            ConfigError: naming the field.
        """
        Config.validate(self)
        for name in ("suppress_tokens", "begin_suppress_tokens"):
            if any(token < 0 for token in getattr(self, name)):
                raise ConfigError(
                    f"whisper-generation.{name}: expected token ids >= 0, got {list(getattr(self, name))}",
                    config_type=self.config_type,
                    key=name,
                )
        if any(layer < 0 or head < 0 for layer, head in self.alignment_heads):
            raise ConfigError(
                f"whisper-generation.alignment_heads: expected (layer, head) pairs >= 0, got "
                f"{[list(pair) for pair in self.alignment_heads]}",
                config_type=self.config_type,
                key="alignment_heads",
            )

    def check_against(self, config: WhisperConfig) -> None:
        """Check that the ids and heads exist in a graph of ``config``'s sizes.

        Raises:
            ConfigError: naming the out-of-range token id or head.
        """
        for name in ("suppress_tokens", "begin_suppress_tokens"):
            bad = [token for token in getattr(self, name) if token >= config.vocab_size]
            if bad:
                raise ConfigError(
                    f"whisper-generation.{name}: token ids {bad} are outside the vocabulary of {config.vocab_size}",
                    config_type=self.config_type,
                    key=name,
                )
        bad_heads = [
            list(pair) for pair in self.alignment_heads if pair[0] >= config.text_layers or pair[1] >= config.text_heads
        ]
        if bad_heads:
            raise ConfigError(
                f"whisper-generation.alignment_heads: {bad_heads} outside the decoder's {config.text_layers} layers "
                f"x {config.text_heads} heads",
                config_type=self.config_type,
                key="alignment_heads",
            )

    def alignment_heads_for(self, config: WhisperConfig) -> tuple[tuple[int, int], ...]:
        """The heads used for word alignment: the stored pairs, or all heads of the last half of the layers."""
        if self.alignment_heads:
            return self.alignment_heads
        return tuple(
            (layer, head)
            for layer in range(config.text_layers // 2, config.text_layers)
            for head in range(config.text_heads)
        )


__all__ = [
    "ENGLISH_VOCAB_SIZE",
    "FRAMES_PER_SECOND",
    "HOP_LENGTH",
    "N_FFT",
    "OFFICIAL_SIZES",
    "SAMPLE_RATE",
    "WINDOW_DURATION_S",
    "WINDOW_NUM_FRAMES",
    "WINDOW_NUM_SAMPLES",
    "WhisperConfig",
    "WhisperGenerationConfig",
]
