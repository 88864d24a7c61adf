"""Training hooks of ``asr_whisper`` / ``asr_whisper_base`` for the sequence-to-sequence adapter (imports torch)."""

from __future__ import annotations

import torch
from torch import nn

from voicehub.architectures.whisper.audio import window_log_mel
from voicehub.architectures.whisper.model import Whisper
from voicehub.core.runtime import RuntimeBundle
from voicehub.models.asr_whisper.wrapper import WhisperRuntime
from voicehub.training.errors import TrainingError

TRAINING_LANGUAGE = "en"
"""Language token of the start sequence of multilingual checkpoints (the training data is English)."""


class WhisperSeq2SeqHooks:
    """Whisper's prompt, tokenizer, 30 s log-mel windows and teacher-forced forward pass.

    The decoder starts from ``<|startoftranscript|>`` (plus ``<|en|><|transcribe|>`` on multilingual
    checkpoints) and ``<|notimestamps|>``, as transcription without timestamps does.

    Args:
        runtime: the loaded :class:`~voicehub.models.asr_whisper.wrapper.WhisperRuntime`.

    Raises:
        TrainingError: when the bundle is not a Whisper runtime.
    """

    def __init__(self, runtime: RuntimeBundle[object]) -> None:
        if not isinstance(runtime, WhisperRuntime) or not isinstance(runtime.module, Whisper):
            raise TrainingError(f"asr_whisper hooks need a WhisperRuntime, got {type(runtime).__name__}")
        self._tokenizer = runtime.tokenizer
        config = runtime.module.config
        self._num_mel_bins = config.num_mel_bins
        self._max_num_tokens = config.text_context
        language = TRAINING_LANGUAGE if self._tokenizer.multilingual else None
        special = self._tokenizer.special
        self._prompt = (*self._tokenizer.sot_sequence(language, "transcribe"), special.no_timestamps)
        self._end_id = special.eot

    @property
    def prompt_ids(self) -> tuple[int, ...]:
        """Start sequence and ``<|notimestamps|>``."""
        return self._prompt

    @property
    def end_id(self) -> int:
        """``<|endoftext|>``."""
        return self._end_id

    @property
    def max_num_tokens(self) -> int:
        """The decoder's text context (448)."""
        return self._max_num_tokens

    def encode_text(self, text: str) -> list[int]:
        """BPE ids of ``text`` (no special tokens)."""
        return self._tokenizer.encode(text)

    def features(self, waveform: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """float32 (batch, num_mel_bins, 3000): each row's valid samples as one normalised 30 s window."""
        rows = [waveform[row, : int(length)].float().cpu() for row, length in enumerate(lengths)]
        return window_log_mel(rows, self._num_mel_bins).to(waveform.device)

    def logits(self, module: nn.Module, features: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """float32 (batch, num_tokens, vocab): ``Whisper.forward``."""
        logits: torch.Tensor = module(features, tokens)
        return logits


__all__ = ["TRAINING_LANGUAGE", "WhisperSeq2SeqHooks"]
