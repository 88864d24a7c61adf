"""Additive-margin softmax against its formula."""

from __future__ import annotations

import math

import pytest
import torch

from voicehub.training import TrainingError
from voicehub.training.objectives import AdditiveMarginSoftmax


def test_am_softmax_matches_the_formula_on_hand_values() -> None:
    head = AdditiveMarginSoftmax(2, 2, scale=10.0, margin=0.3)
    with torch.no_grad():
        head.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))  # class directions (1, 0) and (0, 1)
    embedding = torch.tensor([[3.0, 4.0]])  # unit (0.6, 0.8): cosines 0.6 and 0.8
    loss = head(embedding, torch.tensor([0]))
    target, other = 10.0 * (0.6 - 0.3), 10.0 * 0.8
    expected = -target + math.log(math.exp(target) + math.exp(other))
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-6)
    assert head.logits(embedding)[0].detach().tolist() == pytest.approx([6.0, 8.0], rel=1e-6)


def test_am_softmax_refuses_one_class() -> None:
    with pytest.raises(TrainingError, match=">= 2 classes"):
        AdditiveMarginSoftmax(4, 1)
