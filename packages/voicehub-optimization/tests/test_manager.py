"""The plan manager on small real torch modules: validation first, ordered apply, rollback."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest
import torch
from torch import nn

from voicehub.core import strict_json
from voicehub.core.errors import LifecycleError
from voicehub.core.strict_json import JSONValue
from voicehub.optimization import (
    OptimizationApplicationError,
    OptimizationCapabilities,
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationContext,
    OptimizationMode,
    OptimizationPass,
    OptimizationPassManager,
    OptimizationPassRegistry,
    OptimizationRestoreError,
    OptimizationResult,
    OptimizationValidationError,
    PassResult,
    apply_optimization_plan,
    infer_context,
)


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.ReLU(), nn.Linear(16, 2)).train()


def _snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _identical(module: nn.Module, snapshot: Mapping[str, torch.Tensor]) -> bool:
    state = module.state_dict()
    return list(state) == list(snapshot) and all(
        state[k].dtype == v.dtype and torch.equal(state[k], v) for k, v in snapshot.items()
    )


class ScalePass(OptimizationPass):
    """Multiplies every parameter in place (reversible by dividing back exactly: factor 2)."""

    pass_id: ClassVar[str] = "test.scale"
    pass_version: ClassVar[str] = "1"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.INFERENCE,), reversible=True
    )

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        return {"factor": 2.0}

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        module: Any = model
        with torch.no_grad():
            for p in module.parameters():
                p.mul_(2.0)
        return PassResult(model=model, state={}, metadata={"outcome": "configured"})

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        module: Any = model
        with torch.no_grad():
            for p in module.parameters():
                p.div_(2.0)
        return model


class FailingPass(OptimizationPass):
    pass_id: ClassVar[str] = "test.failing"
    pass_version: ClassVar[str] = "1"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(modes=(OptimizationMode.INFERENCE,))

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        return {}

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        raise RuntimeError("kernel exploded")


class CudaOnlyPass(FailingPass):
    pass_id: ClassVar[str] = "test.cuda-only"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.INFERENCE,), devices=("cuda",)
    )


def _registry() -> OptimizationPassRegistry:
    registry = OptimizationPassRegistry()
    registry.register("eval-mode", "voicehub.optimization.builtin.eval_mode:EvalModePass")
    registry.register("scale", ScalePass)
    registry.register("failing", FailingPass)
    registry.register("cuda-only", CudaOnlyPass)
    return registry


def test_failed_pass_rolls_back_earlier_passes_bit_identically() -> None:
    model = _model()
    before = _snapshot(model)
    with pytest.raises(OptimizationApplicationError, match="kernel exploded") as info:
        OptimizationPassManager(_registry()).apply(model, ("eval-mode", "scale", "failing"))
    assert info.value.pass_id == "test.failing" and info.value.rollback_errors == ()
    assert _identical(model, before)
    assert all(m.training for m in model.modules())


def test_unsupported_hardware_fails_before_the_first_change() -> None:
    model = _model()
    before = _snapshot(model)
    with pytest.raises(OptimizationCompatibilityError, match=r"device 'cpu' is not supported .*cuda"):
        OptimizationPassManager(_registry()).apply(model, ("scale", "cuda-only"))
    assert _identical(model, before)


def test_plan_refuses_duplicates_and_empty_plans() -> None:
    manager = OptimizationPassManager(_registry())
    with pytest.raises(OptimizationConfigurationError, match="more than once"):
        manager.apply(_model(), ("scale", "eval-mode", "SCALE"))
    with pytest.raises(OptimizationConfigurationError, match="more than once"):
        manager.apply(_model(), ("scale", ScalePass()))
    with pytest.raises(OptimizationConfigurationError, match="empty"):
        manager.apply(_model(), ())


def test_manifest_is_deterministic_strict_json_and_restore_returns_original() -> None:
    texts = []
    for _ in range(2):
        model = _model()
        before = _snapshot(model)
        result = OptimizationPassManager(_registry()).apply(model, ["eval-mode", "scale"])
        texts.append(result.manifest_json())
        assert not _identical(model, before)
        assert result.outcomes() == {"eval-mode": "configured", "scale": "configured"}
        assert result.restore() is model
        assert _identical(model, before) and model.training
        with pytest.raises(OptimizationRestoreError, match="already restored"):
            result.restore()
    assert texts[0] == texts[1]
    manifest = strict_json.loads(texts[0])
    assert [p["pass"] for p in manifest["passes"]] == ["voicehub.eval-mode", "test.scale"]
    assert manifest["passes"][1]["configuration"] == {"factor": 2.0}
    assert manifest["passes"][0]["metadata"] == {"outcome": "configured", "modules_switched_to_eval": 5}
    assert manifest["context"]["dtype"] == "float32"


class Irreversible(ScalePass):
    """Scales the parameters and declares it cannot undo that."""

    pass_id: ClassVar[str] = "test.irreversible"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(modes=(OptimizationMode.INFERENCE,))


class RestoreFails(ScalePass):
    """Reversible by declaration, but its restore raises (a bug in a third-party pass)."""

    pass_id: ClassVar[str] = "test.restore-fails"

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        raise OSError("restore lost its saved state")


def test_an_irreversible_pass_followed_by_another_pass_is_refused_before_any_change() -> None:
    for plan in ((Irreversible(), FailingPass()), ("eval-mode", Irreversible(), "scale")):
        model = _model()
        before = _snapshot(model)
        with pytest.raises(OptimizationConfigurationError, match=r"irreversible passes may only come last") as info:
            OptimizationPassManager(_registry()).apply(model, plan)
        assert "'test.irreversible' to the end of the plan" in str(info.value)
        assert _identical(model, before) and model.training
    # Last in the plan it is allowed; a failure of the pass itself still rolls back the earlier ones.
    model = _model()
    before = _snapshot(model)
    with pytest.raises(OptimizationApplicationError, match="runtime is unchanged"):
        OptimizationPassManager(_registry()).apply(model, ("scale", "failing"))
    assert _identical(model, before)
    result = OptimizationPassManager(_registry()).apply(model, ("eval-mode", Irreversible()))
    assert result.requires_reload and not result.reversible
    with pytest.raises(OptimizationRestoreError, match="irreversible; to get the original runtime back, do not use"):
        result.restore()


def test_a_failed_rollback_taints_the_runtime_and_says_how_to_recover() -> None:
    model = _model()
    x = torch.ones(1, 8)
    with pytest.raises(OptimizationApplicationError, match=r"ALSO failed .*TAINTED.*To recover, do not use") as info:
        OptimizationPassManager(_registry()).apply(model, (RestoreFails(), "failing"))
    error = info.value
    assert error.rollback_errors[0][0] == "test.restore-fails" and "lost its saved state" in error.rollback_errors[0][1]
    tainted = error.result
    assert isinstance(tainted, OptimizationResult)
    assert tainted.tainted is not None and "test.failing" in tainted.tainted
    assert tainted.requires_reload and not tainted.reversible
    assert tainted.manifest()["tainted"] == tainted.tainted
    with pytest.raises(OptimizationRestoreError, match="tainted"):
        tainted.restore()
    with pytest.raises(LifecycleError, match="TAINTED and must not be used"):  # no silently wrong outputs
        model(x)


def test_a_restore_that_fails_halfway_taints_the_result() -> None:
    model = _model()
    result = OptimizationPassManager(_registry()).apply(model, (RestoreFails(), "scale"))
    with pytest.raises(
        OptimizationRestoreError,
        match=r"restoring optimization pass 'test.restore-fails' failed.*TAINTED \(partly restored\)",
    ):
        result.restore()
    assert result.tainted is not None and "after restoring ['scale']" in result.tainted and not result.restored
    with pytest.raises(OptimizationRestoreError, match="the runtime is tainted"):
        result.restore()
    with pytest.raises(LifecycleError, match="TAINTED"):
        model(torch.ones(1, 8))


def test_float64_and_partly_float64_runtimes_are_refused_by_dtype_bound_passes_before_any_change() -> None:
    double = _model().double()
    mixed = _model()
    mixed.register_buffer("scale", torch.ones(3, dtype=torch.float64))
    for model in (double, mixed):
        assert infer_context(model).dtype == "float64"
        before = _snapshot(model)
        for name in ("dtype", "int8-dynamic"):
            with pytest.raises(OptimizationCompatibilityError, match=r"runtime dtype 'float64' is not supported"):
                apply_optimization_plan(model, name)
            assert _identical(model, before)
    # A pass that works in any dtype still applies (it declares dtypes=None).
    result = apply_optimization_plan(double, "eval-mode")
    assert result.manifest()["passes"][0]["capabilities"]["dtypes"] is None
    assert result.manifest()["context"]["dtype"] == "float64"
    result.restore()


@pytest.mark.parametrize(
    ("outcome", "metadata"),
    [
        ("Accelerated", {}),
        ("accelerated ", {}),
        ("  SKIPPED", {}),
        ("Optimized", {}),
        ("configured", {"speedup": "2.4x"}),
        ("configured", {"note": "2.4x faster"}),
        ("configured", {"details": {"effect": ["kernels were sped up"]}}),
        ("configured", {"speed_up_factor": 2.0}),
        ("configured", {"Acceleration": True}),
        ("2x faster", {}),
    ],
)
def test_speed_claims_in_outcome_or_metadata_are_refused_and_rolled_back(
    outcome: str, metadata: dict[str, JSONValue]
) -> None:
    class Boastful(ScalePass):
        pass_id: ClassVar[str] = "test.boastful"

        def apply(self, model: object, context: OptimizationContext) -> PassResult:
            super().apply(model, context)
            return PassResult(model=model, metadata={"outcome": outcome, **metadata})

    model = _model()
    before = _snapshot(model)
    with pytest.raises(OptimizationApplicationError, match=r"not allowed|claims a speed-up"):
        OptimizationPassManager(_registry()).apply(model, ("eval-mode", Boastful()))
    assert model.training and _identical(model, before)


def test_a_plain_exception_from_a_pass_check_is_wrapped_naming_the_pass_before_any_change() -> None:
    class BuggyValidate(ScalePass):
        pass_id: ClassVar[str] = "acme.buggy-validate"

        def validate(self, model: object, context: OptimizationContext) -> None:
            raise KeyError("num_heads")

    class BuggyConfiguration(ScalePass):
        pass_id: ClassVar[str] = "acme.buggy-configuration"

        def manifest_configuration(self) -> Mapping[str, JSONValue]:
            raise AttributeError("no attribute 'factor'")

    for buggy, stage in ((BuggyValidate(), "validate()"), (BuggyConfiguration(), "manifest_configuration()")):
        model = _model()
        before = _snapshot(model)
        with pytest.raises(OptimizationValidationError, match=r"nothing was changed") as info:
            OptimizationPassManager(_registry()).apply(model, ("scale", buggy))
        assert info.value.pass_id == buggy.pass_id and f"in {stage}" in str(info.value)
        assert _identical(model, before)


def test_architecture_unsafe_feature_declines_the_pass_and_required_support_fails_before_mutation() -> None:
    class Audited(ScalePass):
        pass_id: ClassVar[str] = "test.audited"
        requires_architecture_support: ClassVar[bool] = True

    class RequiredScale(ScalePass):
        requirement = "required"

    class Spec:
        architecture_id = "tiny"
        devices = ("cpu",)
        dtypes = ("float32",)
        features = ("test.scale-inference-unsafe",)
        optimization_passes = ("eval-mode",)

    model = _model()
    before = _snapshot(model)
    manager = OptimizationPassManager(_registry())
    result = manager.apply(model, ("eval-mode", "scale"), architecture=Spec())
    assert result.outcomes() == {"eval-mode": "configured", "scale": "not-applicable"}
    reason = result.manifest()["passes"][1]["metadata"]["reason"]
    assert reason.startswith("architecture 'tiny' declares the feature 'test.scale-inference-unsafe'")
    assert _identical(model, before)  # the declined pass did not run
    result.restore()
    assert model.training
    with pytest.raises(OptimizationCompatibilityError, match=r"test\.scale-inference-unsafe"):
        manager.apply(model, ("eval-mode", RequiredScale()), architecture=Spec())
    with pytest.raises(OptimizationCompatibilityError, match="audited architecture support"):
        manager.apply(model, (Audited(),), architecture=Spec())
    with pytest.raises(OptimizationCompatibilityError, match="verified in"):
        manager.apply(model, ("eval-mode",), OptimizationContext(dtype="bfloat16"), architecture=Spec())
    assert _identical(model, before) and model.training


def test_non_torch_runtime_gets_not_applicable_with_reason() -> None:
    class CRuntime:
        def is_speech(self, frame: bytes) -> bool:
            return bool(frame)

    runtime = CRuntime()
    result = apply_optimization_plan(runtime, "eval-mode", registry=_registry())
    assert result.model is runtime
    metadata = result.manifest()["passes"][0]["metadata"]
    assert metadata["outcome"] == "not-applicable"
    assert "not a torch.nn.Module" in metadata["reason"]
    assert result.manifest()["context"]["device"] is None
    assert result.restore() is runtime


def test_mode_and_context_must_agree() -> None:
    with pytest.raises(OptimizationConfigurationError, match="disagrees"):
        apply_optimization_plan(
            _model(), "eval-mode", mode="training", context=OptimizationContext(), registry=_registry()
        )
    with pytest.raises(OptimizationCompatibilityError, match="mode 'training' is not supported"):
        apply_optimization_plan(_model(), "eval-mode", mode="training", registry=_registry())
