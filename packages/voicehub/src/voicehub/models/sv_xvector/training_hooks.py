"""Training hooks of ``sv_xvector`` for the speaker-classification adapter (imports torch)."""

from __future__ import annotations

import torch
from torch import nn

from voicehub.architectures.xvector import XVector
from voicehub.core.runtime import RuntimeBundle
from voicehub.training.errors import TrainingError


class XVectorEmbeddingHooks:
    """Embeds padded batches with the x-vector graph (its log-mel front end and masking inside).

    Args:
        runtime: the loaded bundle (its module is an ``XVector``).

    Raises:
        TrainingError: when the bundle holds another graph.
    """

    def __init__(self, runtime: RuntimeBundle[object]) -> None:
        if not isinstance(runtime.module, XVector):
            raise TrainingError(f"sv_xvector hooks need an XVector graph, got {type(runtime.module).__name__}")
        self._embedding_dim = runtime.module.config.embedding_dim

    @property
    def embedding_dim(self) -> int:
        """The x-vector size of the checkpoint's config."""
        return self._embedding_dim

    def embed(self, module: nn.Module, waveform: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """float (batch, embedding_dim), not normalised; padding is masked by the graph."""
        embeddings: torch.Tensor = module(waveform, lengths)
        return embeddings


__all__ = ["XVectorEmbeddingHooks"]
