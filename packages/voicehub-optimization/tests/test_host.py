"""OptimizationHost: the wrapper lifecycle around a real torch runtime."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest
import torch
from torch import nn

from voicehub.core.errors import LifecycleError
from voicehub.core.runtime import RuntimeBundle, RuntimeHost, RuntimeState
from voicehub.core.strict_json import JSONValue
from voicehub.optimization import (
    OptimizationApplicationError,
    OptimizationCapabilities,
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationContext,
    OptimizationHost,
    OptimizationMode,
    OptimizationPass,
    OptimizationPassRegistry,
    OptimizationRestoreError,
    PassResult,
)


class LSTMHost:
    """A small runtime host (the RuntimeHost protocol): an LSTM runtime, loaded on first use."""

    def __init__(self) -> None:
        self.bundle: RuntimeBundle[nn.Module] | None = None
        self._state = RuntimeState.CREATED
        self.loads: list[RuntimeState] = []
        self.installed: list[object] = []
        self.optimization = OptimizationHost(self)

    @property
    def state(self) -> RuntimeState:
        return self._state

    @property
    def runtime(self) -> RuntimeBundle[nn.Module] | None:
        return self.bundle

    def _enter(self, mode: RuntimeState) -> LSTMHost:
        self.optimization.check_mode_change(mode)
        if self.bundle is None:
            torch.manual_seed(0)
            self.bundle = RuntimeBundle(module=nn.Sequential(nn.LSTM(4, 8, batch_first=True)))
        self.bundle.module.train(mode is OptimizationMode.TRAINING)
        self._state = mode
        self.loads.append(mode)
        return self

    def load(self) -> LSTMHost:
        return self._enter(RuntimeState.INFERENCE)

    def load_for_training(self) -> LSTMHost:
        return self._enter(RuntimeState.TRAINING)

    def unload(self) -> None:
        self.bundle = None
        self._state = RuntimeState.CREATED

    def replace_module(self, module: object, *, state: RuntimeState) -> None:
        assert isinstance(module, nn.Module) and self.bundle is not None and self._state is state
        self.installed.append(module)
        self.bundle = self.bundle.with_module(module)

    # what a wrapper exposes, delegated to its optimization host
    def apply_optimization_plan(self, plan: Any, **kwargs: Any) -> Any:
        return self.optimization.apply(plan, **kwargs)

    def restore_optimization_plan(self, mode: str = "inference") -> None:
        self.optimization.restore(mode)

    def active_optimization(self, mode: str = "inference") -> Any:
        return self.optimization.active(mode)

    def optimization_requires_reload(self, mode: str = "inference") -> bool:
        return self.optimization.requires_reload(mode)

    def check_optimization_mode_change(self, mode: str) -> None:
        self.optimization.check_mode_change(mode)

    def available_optimization_passes(self) -> tuple[str, ...]:
        return self.optimization.available_passes()

    def module(self) -> nn.Module:
        assert self.bundle is not None
        return self.bundle.module


def test_the_lstm_host_satisfies_the_runtime_host_protocol() -> None:
    assert isinstance(LSTMHost(), RuntimeHost)


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
    assert host.installed == [host.module()]  # the original module is reinstalled on restore
    with pytest.raises(LifecycleError, match="nothing to restore"):
        host.restore_optimization_plan("inference")


def test_host_mode_change_requires_restoring_the_other_modes_plan() -> None:
    host = LSTMHost()
    result = host.apply_optimization_plan("eval-mode", registry=_registry())
    with pytest.raises(LifecycleError, match=r"cannot switch to 'training' mode: .* active in 'inference' mode"):
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


class ZeroBiasPass(OptimizationPass):
    """Irreversible: zeroes every bias of the runtime in place."""

    pass_id: ClassVar[str] = "test.zero-bias"
    pass_version: ClassVar[str] = "1"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(modes=(OptimizationMode.INFERENCE,))

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        return {}

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        module: Any = model
        with torch.no_grad():
            for name, parameter in module.named_parameters():
                if "bias" in name:
                    parameter.zero_()
        return PassResult(model=model, metadata={"outcome": "configured"})


class ZeroBiasBrokenRestorePass(ZeroBiasPass):
    pass_id: ClassVar[str] = "test.zero-bias-broken-restore"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.INFERENCE,), reversible=True
    )

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        raise RuntimeError("saved biases lost")


class BoomPass(ZeroBiasPass):
    pass_id: ClassVar[str] = "test.boom"

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        raise RuntimeError("boom")


class UnloadingHost(LSTMHost):
    """A host whose unload() follows the rule of PreTrainedSpeechModel.unload()."""

    def unload(self) -> None:
        blocking = self.optimization.blocking_unload()
        if blocking is not None:
            raise LifecycleError(f"restore the {blocking.value} plan first")
        super().unload()


@pytest.mark.parametrize(
    "plan", [(ZeroBiasPass(),), (ZeroBiasBrokenRestorePass(), BoomPass())], ids=["irreversible", "tainted"]
)
def test_unload_then_reload_recovers_from_an_irreversible_or_tainted_plan(plan: tuple[OptimizationPass, ...]) -> None:
    host = UnloadingHost()
    x = torch.ones(1, 3, 4)
    original = host.load().module()
    expected = original(x)[0]
    try:
        host.apply_optimization_plan(plan)
    except OptimizationApplicationError as err:
        assert "TAINTED" in str(err) and "discard this UnloadingHost and build a new one" in str(err)
    active = host.active_optimization()
    assert active is not None and host.optimization_requires_reload()
    with pytest.raises(OptimizationRestoreError, match="discard this UnloadingHost"):
        host.restore_optimization_plan()
    host.unload()  # allowed: dropping the runtime is the way back
    assert host.active_optimization() is None and not host.optimization_requires_reload()
    reloaded = host.load().module()
    assert reloaded is not original
    assert torch.equal(reloaded(x)[0], expected)
    result = host.apply_optimization_plan("eval-mode", registry=_registry())  # plans work again
    result.restore()


def test_a_reversible_plan_still_blocks_unload_and_is_not_forgotten() -> None:
    host = UnloadingHost()
    host.apply_optimization_plan("eval-mode", registry=_registry())
    assert not host.optimization_requires_reload()
    with pytest.raises(LifecycleError, match="restore the inference plan first"):
        host.unload()
    host.restore_optimization_plan()
    host.unload()
