"""Speaker classification: embeddings trained with an additive-margin softmax over the manifest's speakers.

The head (:class:`~voicehub.training.objectives.AdditiveMarginSoftmax`, one row per speaker,
in sorted speaker order) exists only for training; the exported model is the embedder alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, Self, runtime_checkable

import torch
from torch import nn

from voicehub.training.adapters.base import TrainingAdapter
from voicehub.training.batching import AudioBatch, collate_audio
from voicehub.training.errors import TrainingError
from voicehub.training.manifest import ManifestRecord
from voicehub.training.objectives import AdditiveMarginSoftmax

DEFAULT_SCALE = 30.0
DEFAULT_MARGIN = 0.2
"""AM-softmax scale and margin (Wang et al. 2018 use s = 30, m = 0.35; 0.2 is the usual speaker-verification choice)."""


@runtime_checkable
class SpeakerEmbeddingHooks(Protocol):
    """What a speaker embedder's integration provides."""

    @property
    def embedding_dim(self) -> int:
        """Size of one embedding."""
        ...

    def embed(self, module: nn.Module, waveform: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Embeddings with autograd.

        Args:
            module: the graph being trained.
            waveform: float32 (batch, num_samples) at the contract's rate, zero-padded on the right.
            lengths: int64 (batch,) valid samples per row.

        Returns:
            float (batch, embedding_dim).
        """
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeakerBatch:
    """Audio with speaker labels.

    Attributes:
        audio: the padded audio.
        labels: int64 (batch,) speaker indices.
    """

    audio: AudioBatch
    labels: torch.Tensor

    @property
    def size(self) -> int:
        """Utterances in the batch."""
        return len(self.audio.records)

    def to(self, device: torch.device) -> Self:
        """A copy on ``device``."""
        return type(self)(audio=self.audio.to(device), labels=self.labels.to(device))


class SpeakerClassificationModule(nn.Module):
    """The embedder plus the training-only classification head."""

    def __init__(self, graph: nn.Module, hooks: SpeakerEmbeddingHooks, head: AdditiveMarginSoftmax) -> None:
        super().__init__()
        self.graph = graph
        self.head = head
        self._hooks = hooks

    def forward(self, batch: SpeakerBatch) -> dict[str, torch.Tensor]:
        """``{"loss": mean additive-margin softmax loss}``."""
        embeddings = self._hooks.embed(self.graph, batch.audio.waveform, batch.audio.lengths)
        return {"loss": self.head(embeddings, batch.labels)}


class SpeakerClassificationAdapter(TrainingAdapter):
    """Speaker-embedding training; the speakers are those of the training records."""

    family = "speaker_classification"
    hooks_protocol = SpeakerEmbeddingHooks

    def _setup(self, records: Sequence[ManifestRecord]) -> None:
        speakers = sorted({record.speaker for record in records if record.speaker is not None})
        if len(speakers) < 2 or any(record.speaker is None for record in records):
            raise TrainingError(
                f"{self.spec.model_type}: speaker classification needs a speaker on every record and at least 2 "
                f"speakers, got {len(speakers)} speaker(s) over {len(records)} record(s)"
            )
        self.speakers: tuple[str, ...] = tuple(speakers)
        self._index = {speaker: index for index, speaker in enumerate(self.speakers)}
        device = next(self.graph.parameters()).device
        head = AdditiveMarginSoftmax(
            self.hooks.embedding_dim, len(speakers), scale=DEFAULT_SCALE, margin=DEFAULT_MARGIN
        )
        self._module = SpeakerClassificationModule(self.graph, self.hooks, head.to(device))

    @property
    def module(self) -> SpeakerClassificationModule:
        """The embedder with its head."""
        return self._module

    def collate(self, records: Sequence[ManifestRecord]) -> SpeakerBatch:
        """Padded audio and speaker indices.

        Raises:
            TrainingError: for a speaker the head was not built for.
        """
        unknown = sorted({str(r.speaker) for r in records if r.speaker not in self._index})
        if unknown:
            raise TrainingError(f"speakers {unknown} are not among the training speakers {list(self.speakers)}")
        audio = collate_audio(records, sample_rate=self.data.sample_rate)
        labels = torch.tensor([self._index[str(record.speaker)] for record in records], dtype=torch.int64)
        return SpeakerBatch(audio=audio, labels=labels)

    def describe(self) -> dict[str, object]:
        """The plan, with the speakers and the head's settings."""
        return {**super().describe(), "speakers": list(self.speakers), "scale": DEFAULT_SCALE, "margin": DEFAULT_MARGIN}


__all__ = ["SpeakerBatch", "SpeakerClassificationAdapter", "SpeakerClassificationModule", "SpeakerEmbeddingHooks"]
