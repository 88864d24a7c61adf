"""DerivedTensors: a derived value follows its sources and is never copied with its module."""

from __future__ import annotations

import copy
import pickle

import torch
from torch import nn

from voicehub.components.derived import DerivedTensors


class _Holder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.transposed: DerivedTensors[torch.Tensor] = DerivedTensors()
        self.builds = 0

    def columns(self) -> torch.Tensor | None:
        def build() -> torch.Tensor:
            self.builds += 1
            return self.linear.weight.detach().t().contiguous()

        return self.transposed.get([self.linear.weight], build)


def test_derived_tensors_are_rebuilt_only_when_a_source_changes() -> None:
    module = _Holder()
    first = module.columns()
    assert first is not None and torch.equal(first, module.linear.weight.t())
    assert module.columns() is first and module.builds == 1
    with torch.no_grad():
        module.linear.weight.mul_(-2.0)  # in place: the version counter moves
    again = module.columns()
    assert again is not None and torch.equal(again, module.linear.weight.t()) and module.builds == 2
    module.linear.weight = nn.Parameter(torch.ones(2, 3))  # another tensor
    ones = module.columns()
    assert ones is not None and torch.equal(ones, torch.ones(3, 2)) and module.builds == 3


def test_derived_tensors_are_never_copied_pickled_or_saved() -> None:
    module = _Holder()
    module.columns()
    assert module.transposed.built
    assert not copy.deepcopy(module).transposed.built
    assert not pickle.loads(pickle.dumps(module)).transposed.built
    assert set(module.state_dict()) == {"linear.weight", "linear.bias"}


def test_inference_tensor_sources_are_not_cached() -> None:
    with torch.inference_mode():
        weight = torch.ones(2, 3)
    holder: DerivedTensors[torch.Tensor] = DerivedTensors()
    assert holder.get([weight], lambda: weight.t()) is None
    assert not holder.built
