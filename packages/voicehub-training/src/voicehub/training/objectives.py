"""Losses the family adapters share."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from voicehub.training.errors import TrainingError


class AdditiveMarginSoftmax(nn.Module):
    """Additive-margin softmax (CosFace / AM-softmax) over speaker classes.

    ``logit_j = s * (cos(theta_j) - m * [j == y])``, where ``cos(theta_j)`` is the cosine between
    the embedding and class ``j``'s weight row; the loss is the cross-entropy of these logits.
    Formula: Wang et al., "Additive Margin Softmax for Face Verification", IEEE SPL 2018, eq. 5.

    Args:
        embedding_dim: size of the embeddings.
        num_classes: number of speakers.
        scale: ``s`` (> 0).
        margin: ``m``, subtracted from the target cosine (>= 0).

    Raises:
        TrainingError: for fewer than 2 classes or a bad scale/margin.
    """

    def __init__(self, embedding_dim: int, num_classes: int, *, scale: float = 30.0, margin: float = 0.2) -> None:
        super().__init__()
        if num_classes < 2 or embedding_dim < 1 or not scale > 0 or margin < 0:
            raise TrainingError(
                f"additive-margin softmax: expected >= 2 classes, embedding_dim >= 1, scale > 0, margin >= 0, got "
                f"{num_classes}, {embedding_dim}, {scale}, {margin}"
            )
        self.scale = scale
        self.margin = margin
        self.weight = nn.Parameter(torch.empty(num_classes, embedding_dim))
        nn.init.xavier_uniform_(self.weight)

    def logits(self, embeddings: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        """Scaled cosines (batch, num_classes), with the margin taken off the target when ``labels`` is given."""
        cosines = F.normalize(embeddings.float(), dim=1) @ F.normalize(self.weight, dim=1).T
        if labels is not None:
            cosines = cosines - self.margin * F.one_hot(labels, cosines.shape[1]).to(cosines.dtype)
        return self.scale * cosines

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean loss.

        Args:
            embeddings: float (batch, embedding_dim).
            labels: int64 (batch,) class indices.
        """
        return F.cross_entropy(self.logits(embeddings, labels), labels)


__all__ = ["AdditiveMarginSoftmax"]
