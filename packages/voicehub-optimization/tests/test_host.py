"""OptimizationHost: the wrapper lifecycle around a real torch runtime."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from voicehub.core.errors import LifecycleError
from voicehub.optimization import (
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationContext,
    OptimizationHost,
    OptimizationMode,
    OptimizationPassRegistry,
)


class LSTMHost(OptimizationHost):
    """A small host: an LSTM + Linear runtime, loaded on first use."""

    def __init__(self) -> None:
        self.runtime: nn.Module | None = None
        self.loads: list[OptimizationMode] = []
        self.installed: list[object] = []

    def _optimization_runtime(self, mode: OptimizationMode) -> object:
        self.check_optimization_mode_change(mode)
        if self.runtime is None:
            torch.manual_seed(0)
            self.runtime = nn.Sequential(nn.LSTM(4, 8, batch_first=True))
        self.runtime.train(mode is OptimizationMode.TRAINING)
        self.loads.append(mode)
        return self.runtime

    def _set_optimization_runtime(self, mode: OptimizationMode, runtime: object) -> None:
        assert isinstance(runtime, nn.Module)
        self.installed.append(runtime)
        self.runtime = runtime


def _registry() -> OptimizationPassRegistry:
    registry = OptimizationPassRegistry()
    registry.register("eval-mode", "voicehub.optimization.builtin.eval_mode:EvalModePass")
    return registry


def test_host_applies_restores_and_tracks_the_active_plan() -> None:
    host = LSTMHost()
    assert "eval-mode" in host.available_optimization_passes()
    result = host.apply_optimization_plan("eval-mode", mode="inference", registry=_registry())
    assert host.loads == [OptimizationMode.INFERENCE]
    assert host.active_optimization("inference") is result
    assert host.active_optimization("training") is None
    with pytest.raises(LifecycleError, match="already active"):
        host.apply_optimization_plan("eval-mode", registry=_registry())
    host.restore_optimization_plan("inference")
    assert host.active_optimization("inference") is None
    assert host.installed == [host.runtime]  # the original runtime is reinstalled on restore
    with pytest.raises(LifecycleError, match="nothing to restore"):
        host.restore_optimization_plan("inference")


def test_host_mode_change_requires_restoring_the_other_modes_plan() -> None:
    host = LSTMHost()
    result = host.apply_optimization_plan("eval-mode", registry=_registry())
    with pytest.raises(LifecycleError, match=r"active in 'inference' mode; cannot switch to 'training'"):
        host.apply_optimization_plan("eval-mode", mode="training", registry=_registry())
    assert host.loads == [OptimizationMode.INFERENCE]  # refused before loading for training
    result.restore()  # restoring through the result informs the host too
    assert host.active_optimization("inference") is None
    host.check_optimization_mode_change("training")


def test_host_refuses_a_context_of_another_mode_before_loading() -> None:
    host = LSTMHost()
    with pytest.raises(OptimizationConfigurationError, match="disagrees"):
        host.apply_optimization_plan(
            "eval-mode", mode="inference", context=OptimizationContext(mode="training"), registry=_registry()
        )
    assert host.loads == []


def test_host_refuses_a_pass_of_another_mode_before_loading_the_runtime_for_that_mode() -> None:
    host = LSTMHost()
    with pytest.raises(OptimizationCompatibilityError, match="supports inference mode, not 'training'"):
        host.apply_optimization_plan("eval-mode", mode="training", registry=_registry())
    assert host.loads == []
