"""Automatic selection of an architecture's verified passes (``voicehub.optimization.automatic``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar

import pytest

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
    select_verified_passes,
)
from voicehub.optimization.builtin.eval_mode import EvalModePass


@dataclasses.dataclass(frozen=True)
class Facts:
    """An architecture's verified facts (the ``ArchitectureSupport`` protocol)."""

    architecture_id: str = "toy"
    devices: tuple[str, ...] = ("cpu", "cuda")
    dtypes: tuple[str, ...] = ("float32", "bfloat16")
    features: tuple[str, ...] = ()
    optimization_passes: tuple[str, ...] = ("eval-mode", "inference-mode", "threads", "dtype", "int8-dynamic")


CPU_FLOAT32 = OptimizationContext(device="cpu", dtype="float32")


def test_select_verified_passes_keeps_the_declared_order_and_skips_what_an_earlier_pass_rules_out() -> None:
    selection = select_verified_passes(Facts(), CPU_FLOAT32)
    # dtype casts to bfloat16, so the float32-only int8-dynamic no longer fits after it
    assert selection.passes == ("eval-mode", "inference-mode", "threads", "dtype")
    assert [kind for kind, _ in selection.skipped] == ["int8-dynamic"]
    reason = selection.skipped[0][1]
    assert "runtime dtype 'bfloat16' is not supported" in reason and "'dtype'" in reason


def test_select_verified_passes_follows_the_loaded_device_and_dtype() -> None:
    loaded_bf16 = select_verified_passes(Facts(), OptimizationContext(device="cpu", dtype="bfloat16"))
    assert loaded_bf16.passes == ("eval-mode", "inference-mode", "threads")
    assert [kind for kind, _ in loaded_bf16.skipped] == ["dtype", "int8-dynamic"]
    on_cuda = select_verified_passes(Facts(), OptimizationContext(device="cuda:0", dtype="float32"))
    assert on_cuda.passes == ("eval-mode", "inference-mode", "threads", "dtype")
    assert "device 'cuda:0' is not supported" in dict(on_cuda.skipped)["int8-dynamic"]
    # Only what the architecture verified: nothing else is added, whatever is registered.
    only_eval = select_verified_passes(Facts(optimization_passes=("eval-mode",)), CPU_FLOAT32)
    assert only_eval.passes == ("eval-mode",) and only_eval.skipped == ()
    assert select_verified_passes(Facts(optimization_passes=()), CPU_FLOAT32).passes == ()


def test_select_verified_passes_skips_unregistered_declined_and_other_mode_kinds() -> None:
    facts = Facts(
        optimization_passes=("eval-mode", "compile", "acme-fuse", "lora"),
        features=("compile-inference-unsafe",),
    )
    selection = select_verified_passes(facts, CPU_FLOAT32)
    assert selection.passes == ("eval-mode",)
    skipped = dict(selection.skipped)
    assert skipped["compile"] == "the architecture declares 'compile-inference-unsafe'"
    assert skipped["acme-fuse"] == "no optimization pass is registered under 'acme-fuse'"
    assert "mode 'inference' is not supported" in skipped["lora"]


class FreezePass(OptimizationPass):
    """An irreversible inference pass (it only records that it ran)."""

    pass_id: ClassVar[str] = "toy.freeze"
    pass_version: ClassVar[str] = "1"
    optimization_kind: ClassVar[str | None] = "freeze"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(modes=(OptimizationMode.INFERENCE,))

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        return {}

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        return PassResult(model=model, state={}, metadata={"outcome": "configured"})


def test_select_verified_passes_puts_irreversible_passes_last() -> None:
    registry = OptimizationPassRegistry()
    registry.register("freeze", FreezePass)
    registry.register("eval-mode", EvalModePass)
    facts = Facts(optimization_passes=("freeze", "eval-mode"))
    assert select_verified_passes(facts, CPU_FLOAT32, registry=registry).passes == ("eval-mode", "freeze")


def test_the_plan_name_auto_is_reserved() -> None:
    with pytest.raises(OptimizationConfigurationError, match="'auto' is reserved"):
        register_optimization_pass("auto", EvalModePass, registry=OptimizationPassRegistry())
    assert "auto" not in OPTIMIZATION_PASSES
