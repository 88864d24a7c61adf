"""The lazy pass registry: factories, references, duplicates, entry points."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from voicehub.core.errors import RegistryError, UnknownPassError
from voicehub.core.strict_json import JSONValue
from voicehub.optimization import (
    OPTIMIZATION_PASSES,
    OptimizationCapabilities,
    OptimizationConfigurationError,
    OptimizationContext,
    OptimizationMode,
    OptimizationPass,
    OptimizationPassRegistry,
    PassResult,
    register_optimization_pass,
)


class _NoOpPass(OptimizationPass):
    pass_id: ClassVar[str] = "test.noop"
    pass_version: ClassVar[str] = "1"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(modes=(OptimizationMode.INFERENCE,))

    def __init__(self, level: int = 0) -> None:
        self.level = level

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        return {"level": self.level}

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        return self.not_applicable_result(model, reason="test pass never changes anything")


def test_import_optimization_loads_no_torch_in_a_fresh_process() -> None:
    code = (
        "import sys, voicehub.optimization as o; names = o.OPTIMIZATION_PASSES.list(); "
        "assert 'eval-mode' in names and 'int8-dynamic' in names, names; "
        "bad = [m for m in sys.modules if m == 'torch' or m.startswith('voicehub.optimization.builtin.')]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_registry_create_resolves_a_reference_lazily_and_returns_fresh_instances() -> None:
    registry = OptimizationPassRegistry()
    registry.register("Eval-Mode", "voicehub.optimization.builtin.eval_mode:EvalModePass")
    assert registry.list() == ("eval-mode",)
    first, second = registry.create("eval-mode"), registry.create("EVAL-MODE")
    assert first is not second
    assert first.qualified_id == "voicehub.eval-mode@1"


def test_registry_register_raises_on_duplicate_name_unless_exist_ok() -> None:
    registry = OptimizationPassRegistry()
    registry.register("noop", _NoOpPass)
    registry.register("noop", _NoOpPass)  # the same factory again is fine
    with pytest.raises(RegistryError, match="already registered"):
        registry.register("noop", lambda: _NoOpPass(level=2))
    registry.register("noop", lambda: _NoOpPass(level=2), exist_ok=True)
    created = registry.create("noop")
    assert isinstance(created, _NoOpPass) and created.level == 2


def test_registry_create_unknown_name_lists_registered_names() -> None:
    registry = OptimizationPassRegistry()
    registry.register("noop", _NoOpPass)
    with pytest.raises(UnknownPassError, match=r"unknown optimization pass 'nope'; available: noop"):
        registry.create("nope")


def test_registry_rejects_factories_that_return_something_else() -> None:
    registry = OptimizationPassRegistry()
    registry.register("bad", lambda: object())  # type: ignore[arg-type,return-value]
    with pytest.raises(OptimizationConfigurationError, match="expected an OptimizationPass instance"):
        registry.create("bad")
    with pytest.raises(OptimizationConfigurationError, match="module:attribute"):
        registry.register("worse", "no-colon-here")


def test_register_optimization_pass_works_as_function_and_decorator_on_isolated_registry() -> None:
    registry = OptimizationPassRegistry()

    @register_optimization_pass("decorated", registry=registry)
    class Decorated(_NoOpPass):
        pass_id: ClassVar[str] = "test.decorated"

    register_optimization_pass("configured", lambda: _NoOpPass(level=7), registry=registry)
    assert registry.list() == ("configured", "decorated")
    assert isinstance(registry.create("decorated"), Decorated)
    created: Any = registry.create("configured")
    assert created.level == 7
    assert "decorated" not in OPTIMIZATION_PASSES


def test_reversible_declaration_without_restore_is_refused() -> None:
    class Liar(_NoOpPass):
        capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
            modes=(OptimizationMode.INFERENCE,), reversible=True
        )

    with pytest.raises(OptimizationConfigurationError, match="does not override restore"):
        Liar.validate_declaration()


def test_entry_points_register_third_party_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    entry = importlib.metadata.EntryPoint(
        name="third-party-noop", value=f"{__name__}:_NoOpPass", group="voicehub.optimization_passes"
    )
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [entry] if group == entry.group else [])
    registry = OptimizationPassRegistry(discover_entry_points=True)
    registry.register("eval-mode", "voicehub.optimization.builtin.eval_mode:EvalModePass")
    assert registry.list() == ("eval-mode", "third-party-noop")
    assert registry.factory("third-party-noop") == f"{__name__}:_NoOpPass"
    clash = OptimizationPassRegistry(discover_entry_points=True)
    clash.register("third-party-noop", _NoOpPass)
    with pytest.raises(RegistryError, match="collides"):
        clash.list()


def test_registration_calls_no_factory_until_a_pass_is_created() -> None:
    calls: list[int] = []

    def factory() -> OptimizationPass:
        calls.append(1)
        return _NoOpPass(level=len(calls))

    registry = OptimizationPassRegistry()
    register_optimization_pass("counted", factory, registry=registry)
    assert registry.list() == ("counted",) and "counted" in registry
    assert calls == []
    first: Any = registry.create("counted")
    second: Any = registry.create("counted")
    assert (first.level, second.level) == (1, 2)  # one fresh instance per plan


def test_an_unknown_pass_is_a_pass_error_not_a_model_error() -> None:
    from voicehub.core.errors import UnknownModelError, UnknownNameError

    with pytest.raises(UnknownPassError) as caught:
        OPTIMIZATION_PASSES.create("no-such-pass")
    assert isinstance(caught.value, UnknownNameError) and isinstance(caught.value, KeyError)
    assert not isinstance(caught.value, UnknownModelError)
