"""Training hooks of ``sv_ge2e`` for the speaker-classification adapter (imports torch)."""

from __future__ import annotations

import torch
from torch import nn

from voicehub.architectures.ge2e.model import GE2ESpeakerEncoder
from voicehub.core.runtime import RuntimeBundle
from voicehub.training.errors import TrainingError


class GE2EEmbeddingHooks:
    """Embeds each row's valid samples as the inference path does after preprocessing.

    The mel partials are computed in torch (``GE2ESpeakerEncoder.embed_utterances``); the
    inference-time silence trimming and volume normalisation (NumPy, WebRTC VAD) are not applied,
    so training clips should be speech.

    Args:
        runtime: the loaded bundle (its module is a ``GE2ESpeakerEncoder``).

    Raises:
        TrainingError: when the bundle holds another graph.
    """

    def __init__(self, runtime: RuntimeBundle[object]) -> None:
        if not isinstance(runtime.module, GE2ESpeakerEncoder):
            raise TrainingError(f"sv_ge2e hooks need a GE2ESpeakerEncoder graph, got {type(runtime.module).__name__}")
        self._embedding_dim = runtime.module.config.embedding_dim

    @property
    def embedding_dim(self) -> int:
        """256 for the resemblyzer weights."""
        return self._embedding_dim

    def embed(self, module: nn.Module, waveform: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """float (batch, embedding_dim), unit L2 norm (mean of the partials' embeddings, renormalised)."""
        if not isinstance(module, GE2ESpeakerEncoder):
            raise TrainingError(f"sv_ge2e hooks need a GE2ESpeakerEncoder graph, got {type(module).__name__}")
        rows = [waveform[row, : int(length)] for row, length in enumerate(lengths)]
        return module.embed_utterances(rows)


__all__ = ["GE2EEmbeddingHooks"]
