"""Training hooks of ``vad_silero`` for the frame-classification adapter (imports torch)."""

from __future__ import annotations

import torch
from torch import nn

from voicehub.architectures.silero.model import SileroVAD
from voicehub.core.runtime import RuntimeBundle
from voicehub.training.errors import TrainingError


class SileroFrameHooks:
    """Calls the whole-file path of :class:`~voicehub.architectures.silero.model.SileroVAD` with autograd on.

    Frame ``i`` of the output covers samples ``[512 i, 512 (i + 1))`` at 16 kHz, the training
    spec's ``frame_num_samples``.

    Args:
        runtime: the loaded bundle (its module is a ``SileroVAD``).

    Raises:
        TrainingError: when the bundle holds another graph.
    """

    def __init__(self, runtime: RuntimeBundle[object]) -> None:
        if not isinstance(runtime.module, SileroVAD):
            raise TrainingError(f"vad_silero hooks need a SileroVAD graph, got {type(runtime.module).__name__}")

    def frame_probabilities(self, module: nn.Module, waveform: torch.Tensor, sample_rate: int) -> torch.Tensor:
        """float (batch, num_chunks) speech probabilities; see ``SileroVAD.forward``."""
        probabilities: torch.Tensor = module(waveform, sample_rate)
        return probabilities


__all__ = ["SileroFrameHooks"]
