"""Frame classification (voice activity): one speech/non-speech target per output frame.

Targets come from the manifest's ``segments``: frame ``i`` covers samples
``[i * F, (i + 1) * F)`` (``F = data.frame_num_samples``) and is speech when at least half of
it lies inside a segment. The loss is binary cross-entropy on the graph's speech probabilities,
averaged over each utterance's valid frames, then over utterances (every utterance weighs the
same, so the mean over data-parallel ranks equals the single-process mean of the global batch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, Self, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn

from voicehub.training.adapters.base import TrainingAdapter
from voicehub.training.batching import AudioBatch, collate_audio
from voicehub.training.errors import TrainingSpecError
from voicehub.training.manifest import ManifestRecord

PROBABILITY_FLOOR = 1e-6
"""Probabilities are clamped to [floor, 1 - floor] before the logarithm of the cross-entropy."""


@runtime_checkable
class FrameClassificationHooks(Protocol):
    """What a frame classifier's integration provides."""

    def frame_probabilities(self, module: nn.Module, waveform: torch.Tensor, sample_rate: int) -> torch.Tensor:
        """Speech probabilities.

        Args:
            module: the graph being trained.
            waveform: float32 (batch, num_samples) at ``sample_rate`` Hz, zero-padded on the right.
            sample_rate: Hz.

        Returns:
            float (batch, num_frames) in [0, 1]; frame ``i`` covers ``[i * F, (i + 1) * F)`` samples.
        """
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameBatch:
    """Audio with frame targets.

    Attributes:
        audio: the padded audio.
        targets: float32 (batch, num_frames), 1 for speech.
        frame_mask: bool (batch, num_frames), true on frames that start inside the audio.
    """

    audio: AudioBatch
    targets: torch.Tensor
    frame_mask: torch.Tensor

    @property
    def size(self) -> int:
        """Utterances in the batch."""
        return len(self.audio.records)

    def to(self, device: torch.device) -> Self:
        """A copy on ``device``."""
        return type(self)(
            audio=self.audio.to(device), targets=self.targets.to(device), frame_mask=self.frame_mask.to(device)
        )


def frame_targets(
    record: ManifestRecord, *, num_samples: int, sample_rate: int, frame_num_samples: int
) -> torch.Tensor:
    """Speech targets of one clip: float32 (ceil(num_samples / frame_num_samples),)."""
    num_frames = math.ceil(num_samples / frame_num_samples)
    speech = torch.zeros(num_samples, dtype=torch.float32)
    for segment in record.segments or ():
        first = min(round(segment.start_s * sample_rate), num_samples)
        last = min(round(segment.end_s * sample_rate), num_samples)
        speech[first:last] = 1.0
    padded = F.pad(speech, (0, num_frames * frame_num_samples - num_samples))
    return (padded.view(num_frames, frame_num_samples).mean(dim=1) >= 0.5).float()


class FrameClassificationModule(nn.Module):
    """The graph plus its binary cross-entropy objective."""

    def __init__(self, graph: nn.Module, hooks: FrameClassificationHooks, sample_rate: int) -> None:
        super().__init__()
        self.graph = graph
        self._hooks = hooks
        self.sample_rate = sample_rate

    def forward(self, batch: FrameBatch) -> dict[str, torch.Tensor]:
        """``{"loss": mean over utterances of the mean BCE over their valid frames}``."""
        probabilities = self._hooks.frame_probabilities(self.graph, batch.audio.waveform, self.sample_rate)
        num_frames = min(probabilities.shape[1], batch.targets.shape[1])
        probabilities = probabilities[:, :num_frames].float().clamp(PROBABILITY_FLOOR, 1 - PROBABILITY_FLOOR)
        targets = batch.targets[:, :num_frames]
        mask = batch.frame_mask[:, :num_frames].float()
        finite = torch.isfinite(probabilities)  # torch's BCE raises on NaN: let it reach the loss instead
        losses = F.binary_cross_entropy(probabilities.nan_to_num(0.5), targets, reduction="none")
        losses = torch.where(finite, losses, torch.full_like(losses, math.nan))
        per_utterance = (losses * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return {"loss": per_utterance.mean()}


class FrameClassificationAdapter(TrainingAdapter):
    """Frame-level speech/non-speech training (VAD); needs ``data.frame_num_samples`` and segments."""

    family = "frame_classification"
    hooks_protocol = FrameClassificationHooks

    def _setup(self, records: Sequence[ManifestRecord]) -> None:
        if self.data.frame_num_samples is None:
            raise TrainingSpecError(
                f"{self.spec.model_type}: frame classification needs data.frame_num_samples in its training spec",
                model_type=self.spec.model_type,
            )
        self.frame_num_samples: int = self.data.frame_num_samples
        self._module = FrameClassificationModule(self.graph, self.hooks, self.data.sample_rate)

    @property
    def module(self) -> FrameClassificationModule:
        """The graph with its objective."""
        return self._module

    def collate(self, records: Sequence[ManifestRecord]) -> FrameBatch:
        """Padded audio, per-frame targets from the segments, and the valid-frame mask."""
        audio = collate_audio(records, sample_rate=self.data.sample_rate)
        num_frames = math.ceil(audio.waveform.shape[1] / self.frame_num_samples)
        targets = torch.zeros(len(records), num_frames)
        mask = torch.zeros(len(records), num_frames, dtype=torch.bool)
        for row, record in enumerate(records):
            length = int(audio.lengths[row])
            row_targets = frame_targets(
                record, num_samples=length, sample_rate=self.data.sample_rate, frame_num_samples=self.frame_num_samples
            )
            targets[row, : len(row_targets)] = row_targets
            mask[row, : len(row_targets)] = True
        return FrameBatch(audio=audio, targets=targets, frame_mask=mask)

    def describe(self) -> dict[str, object]:
        """The plan, with the frame size."""
        return {**super().describe(), "frame_num_samples": self.frame_num_samples}


__all__ = [
    "FrameBatch",
    "FrameClassificationAdapter",
    "FrameClassificationHooks",
    "FrameClassificationModule",
    "frame_targets",
]
