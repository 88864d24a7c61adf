"""Capabilities and contexts: validation and readable incompatibilities."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from voicehub.optimization import (
    OptimizationCapabilities,
    OptimizationConfigurationError,
    OptimizationContext,
    OptimizationMode,
)


def test_incompatibilities_name_every_mismatch() -> None:
    caps = OptimizationCapabilities(modes=("inference",), devices=("cpu",), dtypes=("float32",), streaming_safe=False)
    ctx = OptimizationContext(mode="training", device="cuda:1", dtype="bf16", streaming=True, persist_result=True)
    reasons = caps.incompatibilities(ctx)
    assert len(reasons) == 5
    assert "mode 'training' is not supported (supported: inference)" in reasons[0]
    assert "device 'cuda:1'" in reasons[1] and "cpu" in reasons[1]
    assert "'bfloat16'" in reasons[2]
    assert caps.incompatibilities(OptimizationContext()) == ()


def test_capabilities_reject_unknown_values_and_inconsistent_flags() -> None:
    with pytest.raises(OptimizationConfigurationError, match="unknown value"):
        OptimizationCapabilities(modes=(OptimizationMode.INFERENCE,), devices=("tpu",))
    with pytest.raises(OptimizationConfigurationError, match="at least one mode"):
        OptimizationCapabilities(modes=())
    with pytest.raises(OptimizationConfigurationError, match="requires persistent"):
        OptimizationCapabilities(modes=("training",), portable_export=True)
    with pytest.raises(OptimizationConfigurationError, match="unknown optimization mode"):
        OptimizationContext(mode="serving")
    with pytest.raises(OptimizationConfigurationError, match="concrete device"):
        OptimizationContext(device="auto")


@dataclass(frozen=True)
class _Spec:
    name: str
    devices: tuple[str, ...]
    dtypes: tuple[str, ...]
    features: tuple[str, ...]
    optimization_passes: tuple[str, ...]


def test_context_with_architecture_reads_verified_facts() -> None:
    spec = _Spec("arch", ("cpu",), ("fp32", "bf16"), ("compile-inference-unsafe",), ("eval-mode",))
    ctx = OptimizationContext(device="cuda:0", dtype="float16").with_architecture(spec)
    assert ctx.architecture == "arch"
    assert ctx.architecture_dtypes == ("bfloat16", "float32")
    assert ctx.architecture_features == ("compile-inference-unsafe",)
    reasons = ctx.incompatibilities_with_architecture()
    assert reasons == (
        "arch is verified on ['cpu'], not on device 'cuda:0'",
        "arch is verified in ['bfloat16', 'float32'], not in dtype 'float16'",
    )


def test_contexts_keep_other_floating_dtypes_and_passes_that_declare_dtypes_refuse_them() -> None:
    assert OptimizationContext(dtype="torch.float64").dtype == "float64"
    assert OptimizationContext(dtype="double").dtype == "float64"
    assert OptimizationContext(dtype="float8_e4m3fn").dtype == "float8_e4m3fn"
    with pytest.raises(OptimizationConfigurationError, match="unsupported dtype 'int8'"):
        OptimizationContext(dtype="int8")
    declared = OptimizationCapabilities(modes=("inference",), dtypes=("float32",))
    (reason,) = declared.incompatibilities(OptimizationContext(dtype="float64"))
    assert "runtime dtype 'float64' is not supported (supported: float32)" in reason
    assert "module.to(torch.float32)" in reason
    anything = OptimizationCapabilities(modes=("inference",))
    assert anything.dtypes is None and anything.incompatibilities(OptimizationContext(dtype="float64")) == ()
    assert anything.to_dict()["dtypes"] is None
    with pytest.raises(OptimizationConfigurationError, match="accepts no runtime"):
        OptimizationCapabilities(modes=("inference",), dtypes=())
