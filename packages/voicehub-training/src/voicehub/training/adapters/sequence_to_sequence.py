"""Sequence to sequence (attention encoder-decoder ASR): teacher-forced token cross-entropy.

Each record's transcript is encoded by the integration's tokenizer into
``prompt + text + end``; the decoder reads ``prompt + text`` and is trained to predict
``text + end`` (the prompt's own tokens are not targets). The loss is the mean token
cross-entropy of each utterance, averaged over utterances.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, Self, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn

from voicehub.training.adapters.base import TrainingAdapter
from voicehub.training.batching import AudioBatch, collate_audio
from voicehub.training.errors import TrainingError
from voicehub.training.manifest import ManifestRecord

IGNORE_INDEX = -100
"""Label of positions that are not targets (padding, prompt)."""


@runtime_checkable
class SequenceToSequenceHooks(Protocol):
    """What an encoder-decoder integration provides."""

    @property
    def prompt_ids(self) -> tuple[int, ...]:
        """Tokens the decoder starts from (start of transcript, language, task, no timestamps...)."""
        ...

    @property
    def end_id(self) -> int:
        """The end-of-text token (also used to pad decoder inputs)."""
        ...

    @property
    def max_num_tokens(self) -> int:
        """Longest decoder input the graph accepts."""
        ...

    def encode_text(self, text: str) -> list[int]:
        """Transcript -> token ids (no special tokens)."""
        ...

    def features(self, waveform: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The encoder input of a batch (computed without gradients: the front end has no parameters).

        Args:
            waveform: float32 (batch, num_samples), zero-padded on the right.
            lengths: int64 (batch,) valid samples per row.
        """
        ...

    def logits(self, module: nn.Module, features: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (batch, num_tokens, vocab); row ``t`` predicts token ``t + 1``."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Seq2SeqBatch:
    """Audio with decoder inputs and labels.

    Attributes:
        audio: the padded audio.
        tokens: int64 (batch, num_tokens) decoder inputs, padded with the end token.
        labels: int64 (batch, num_tokens) next-token targets, :data:`IGNORE_INDEX` where none.
    """

    audio: AudioBatch
    tokens: torch.Tensor
    labels: torch.Tensor

    @property
    def size(self) -> int:
        """Utterances in the batch."""
        return len(self.audio.records)

    def to(self, device: torch.device) -> Self:
        """A copy on ``device``."""
        return type(self)(audio=self.audio.to(device), tokens=self.tokens.to(device), labels=self.labels.to(device))


class SequenceToSequenceModule(nn.Module):
    """The encoder-decoder plus its token cross-entropy."""

    def __init__(self, graph: nn.Module, hooks: SequenceToSequenceHooks) -> None:
        super().__init__()
        self.graph = graph
        self._hooks = hooks

    def forward(self, batch: Seq2SeqBatch) -> dict[str, torch.Tensor]:
        """``{"loss": mean over utterances of the mean token cross-entropy}``."""
        with torch.no_grad():
            features = self._hooks.features(batch.audio.waveform, batch.audio.lengths)
        logits = self._hooks.logits(self.graph, features, batch.tokens).float()
        losses = F.cross_entropy(logits.transpose(1, 2), batch.labels, ignore_index=IGNORE_INDEX, reduction="none")
        valid = (batch.labels != IGNORE_INDEX).float()
        per_utterance = (losses * valid).sum(dim=1) / valid.sum(dim=1).clamp(min=1.0)
        return {"loss": per_utterance.mean()}


class SequenceToSequenceAdapter(TrainingAdapter):
    """Encoder-decoder ASR training on transcribed utterances."""

    family = "sequence_to_sequence"
    hooks_protocol = SequenceToSequenceHooks

    def _setup(self, records: Sequence[ManifestRecord]) -> None:
        self._module = SequenceToSequenceModule(self.graph, self.hooks)

    @property
    def module(self) -> SequenceToSequenceModule:
        """The graph with its objective."""
        return self._module

    def token_ids(self, text: str) -> tuple[list[int], list[int]]:
        """Decoder input and labels of one transcript.

        Raises:
            TrainingError: for a transcript longer than the decoder accepts.
        """
        prompt = list(self.hooks.prompt_ids)
        text_ids = self.hooks.encode_text(" " + text.strip())
        sequence = [*prompt, *text_ids, self.hooks.end_id]
        if len(sequence) - 1 > self.hooks.max_num_tokens:
            raise TrainingError(
                f"transcript of {len(text_ids)} tokens does not fit the decoder ({self.hooks.max_num_tokens} tokens "
                f"with the prompt); cut the utterance: {text[:60]!r}..."
            )
        inputs = sequence[:-1]
        labels = [IGNORE_INDEX] * (len(prompt) - 1) + sequence[len(prompt) :]
        return inputs, labels

    def collate(self, records: Sequence[ManifestRecord]) -> Seq2SeqBatch:
        """Padded audio, decoder inputs and labels.

        Raises:
            TrainingError: for a record without a transcript.
        """
        pairs = []
        for record in records:
            if record.text is None:
                raise TrainingError(f"{record.audio_path} (line {record.line}): no transcript to train on")
            pairs.append(self.token_ids(record.text))
        longest = max(len(inputs) for inputs, _ in pairs)
        tokens = torch.full((len(records), longest), self.hooks.end_id, dtype=torch.int64)
        labels = torch.full((len(records), longest), IGNORE_INDEX, dtype=torch.int64)
        for row, (inputs, targets) in enumerate(pairs):
            tokens[row, : len(inputs)] = torch.tensor(inputs)
            labels[row, : len(targets)] = torch.tensor(targets)
        audio = collate_audio(records, sample_rate=self.data.sample_rate)
        return Seq2SeqBatch(audio=audio, tokens=tokens, labels=labels)

    def describe(self) -> dict[str, object]:
        """The plan, with the prompt."""
        return {**super().describe(), "prompt_ids": list(self.hooks.prompt_ids)}


__all__ = [
    "IGNORE_INDEX",
    "Seq2SeqBatch",
    "SequenceToSequenceAdapter",
    "SequenceToSequenceHooks",
    "SequenceToSequenceModule",
]
