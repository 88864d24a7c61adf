"""OptimizationHost on the REAL registered task wrappers (Silero VAD, GE2E): failure paths.

Each test reproduces a fault a newcomer found and checks the fix on real weights and real
audio: a plan that could corrupt the model is refused before any change; a failed rollback
leaves a runtime that says it is tainted (and how to recover) instead of computing wrong
answers; a failed plan leaves the wrapper in the lifecycle state it had; dtype-bound passes
refuse a float64 runtime; manifests cannot claim speed-ups; ``dtype`` is streaming-safe.

These tests need the ``voicehub`` meta-package (the wrappers); they are skipped when this member
is tested alone.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
import soundfile
import torch

pytest.importorskip("voicehub.modeling")

import voicehub
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
    OptimizationRestoreError,
    OptimizationValidationError,
    PassResult,
    apply_optimization_plan,
)
from voicehub.optimization.builtin.precision import DtypePass
from voicehub.optimization.builtin.torch_compile import TorchCompilePass

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[3]
VAD_AUDIO = ROOT / "tests" / "data" / "silero" / "test.wav"  # 60 s of English speech, 16 kHz
SILERO_SEGMENTS = 19  # segments Silero VAD finds in VAD_AUDIO with the default options
BOTH_MODES = (OptimizationMode.INFERENCE, OptimizationMode.TRAINING)


def _silero() -> Any:
    return voicehub.AutoModel.from_pretrained(model_type="vad_silero", device="cpu")


def _state(runtime: Any) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in runtime.state_dict().items()}


def _same(runtime: Any, saved: Mapping[str, torch.Tensor]) -> bool:
    state = runtime.state_dict()
    return list(state) == list(saved) and all(torch.equal(state[k], v) for k, v in saved.items())


class AcmeZeroBias(OptimizationPass):
    """Irreversible: zeroes every bias in place (the newcomer's ``acme-zero-bias``)."""

    pass_id: ClassVar[str] = "acme.zero-bias"
    pass_version: ClassVar[str] = "1"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(modes=BOTH_MODES)

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        return {}

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        module: Any = model
        with torch.no_grad():
            for name, parameter in module.named_parameters():
                if name.endswith("bias"):
                    parameter.zero_()
        return PassResult(model=model, metadata={"outcome": "configured"})


class AcmeZeroBiasBrokenRestore(AcmeZeroBias):
    """Declares itself reversible, but its restore raises: a rollback through it fails."""

    pass_id: ClassVar[str] = "acme.zero-bias-broken-restore"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(modes=BOTH_MODES, reversible=True)

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        raise RuntimeError("the saved biases were lost")


class AcmeBoom(OptimizationPass):
    """Raises in apply (the newcomer's ``acme-boom``)."""

    pass_id: ClassVar[str] = "acme.boom"
    pass_version: ClassVar[str] = "1"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(modes=BOTH_MODES)

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        return {}

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        raise RuntimeError("boom")


def test_an_irreversible_pass_before_a_failing_one_is_refused_before_the_model_changes() -> None:
    model = _silero()
    assert len(model.detect(VAD_AUDIO).segments) == SILERO_SEGMENTS
    saved = _state(model.runtime.module)
    with pytest.raises(OptimizationConfigurationError, match="irreversible passes may only come last"):
        model.apply_optimization_plan((AcmeZeroBias(), AcmeBoom()))
    assert _same(model.runtime.module, saved) and model.active_optimization() is None
    assert len(model.detect(VAD_AUDIO).segments) == SILERO_SEGMENTS


def test_a_failed_rollback_taints_the_wrapper_refuses_everything_and_a_new_wrapper_recovers() -> None:
    model = _silero()
    model.load()
    with pytest.raises(OptimizationApplicationError, match="ALSO failed") as info:
        model.apply_optimization_plan((AcmeZeroBiasBrokenRestore(), AcmeBoom()))
    message = str(info.value)
    assert "TAINTED" in message and "build a new wrapper with SileroVADModel.from_pretrained(...)" in message
    tainted = model.active_optimization("inference")
    assert tainted is not None and tainted.tainted is not None and model.optimization_requires_reload("inference")
    # No silently wrong answers (it found 6 segments instead of 19 before the fix): detection refuses.
    with pytest.raises(LifecycleError, match="TAINTED and must not be used"):
        model.detect(VAD_AUDIO)
    with pytest.raises(LifecycleError, match=r"TAINTED.*from_pretrained"):
        model.apply_optimization_plan("eval-mode")
    with pytest.raises(OptimizationRestoreError, match=r"tainted.*from_pretrained"):
        model.restore_optimization_plan("inference")
    with pytest.raises(LifecycleError, match=r"TAINTED.*from_pretrained"):
        model.load_for_training()
    with pytest.raises(LifecycleError):
        model.save_pretrained(ROOT / "never-written")
    assert not (ROOT / "never-written").exists()
    # The recovery the messages name works.
    fresh = voicehub.AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    assert len(fresh.detect(VAD_AUDIO).segments) == SILERO_SEGMENTS
    assert fresh.active_optimization() is None


def test_an_irreversible_plan_names_a_way_back_that_works() -> None:
    model = _silero()
    result = model.apply_optimization_plan(AcmeZeroBias())
    assert model.optimization_requires_reload("inference") and not model.optimization_requires_reload("training")
    with pytest.raises(OptimizationRestoreError, match=r"irreversible; .*SileroVADModel\.from_pretrained\(\.\.\.\)"):
        model.restore_optimization_plan("inference")
    with pytest.raises(OptimizationRestoreError, match="from_pretrained"):
        result.restore()
    for refused in (lambda: model.load_for_training(), lambda: model.apply_optimization_plan("eval-mode")):
        with pytest.raises(LifecycleError, match=r"irreversible.*from_pretrained") as info:
            refused()
        assert "restore_optimization_plan" not in str(info.value)  # no advice that loops back
    fresh = voicehub.AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    assert len(fresh.detect(VAD_AUDIO).segments) == SILERO_SEGMENTS


def test_a_training_plan_that_fails_leaves_the_wrapper_in_inference() -> None:
    model = _silero()
    assert len(model.detect(VAD_AUDIO).segments) == SILERO_SEGMENTS
    runtime, saved = model.runtime.module, _state(model.runtime.module)
    failing_plans: list[tuple[Any, type[Exception]]] = [
        (TorchCompilePass(backend="nope", requirement="required"), OptimizationCompatibilityError),  # validation
        (("threads", AcmeBoom()), OptimizationApplicationError),  # application, rolled back
    ]
    for plan, error in failing_plans:
        with pytest.raises(error):
            model.apply_optimization_plan(plan, mode="training")
        assert model.state.value == "inference" and model.runtime.module is runtime
        assert not runtime.training and not any(p.requires_grad for p in runtime.parameters())
        assert model.active_optimization("training") is None and _same(runtime, saved)
        assert len(model.detect(VAD_AUDIO).segments) == SILERO_SEGMENTS


def test_a_failed_plan_on_a_wrapper_that_was_not_loaded_leaves_it_unloaded() -> None:
    model = _silero()
    assert model.state.value == "created"
    with pytest.raises(OptimizationCompatibilityError, match="'nope' is not available"):
        model.apply_optimization_plan(TorchCompilePass(backend="nope", requirement="required"), mode="training")
    assert model.state.value == "created" and model.runtime is None
    with pytest.raises(OptimizationApplicationError, match="boom"):
        model.apply_optimization_plan(("eval-mode", AcmeBoom()))
    assert model.state.value == "created" and model.runtime is None


def test_dtype_bound_passes_refuse_a_float64_silero_runtime_before_any_change() -> None:
    model = _silero()
    model.load()
    double = copy.deepcopy(model.runtime.module).double()
    saved = _state(double)
    for plan in ("dtype", "int8-dynamic", DtypePass(dtype="bfloat16", requirement="required")):
        with pytest.raises(OptimizationCompatibilityError, match=r"runtime dtype 'float64' is not supported"):
            apply_optimization_plan(double, plan)
        assert _same(double, saved)
        assert all(t.dtype == torch.float64 for t in double.state_dict().values() if t.is_floating_point())


def test_a_pass_claiming_a_speed_up_is_refused_and_the_wrapper_is_unchanged() -> None:
    class Boastful(AcmeZeroBiasBrokenRestore):
        pass_id: ClassVar[str] = "acme.boastful"
        capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(modes=BOTH_MODES, reversible=True)

        def apply(self, model: object, context: OptimizationContext) -> PassResult:
            return PassResult(model=model, metadata={"outcome": "configured", "speedup": "2.4x faster"})

        def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
            return model

    model = _silero()
    with pytest.raises(OptimizationApplicationError, match=r"claims a speed-up .*'speedup'"):
        model.apply_optimization_plan(Boastful())
    assert model.active_optimization() is None
    assert len(model.detect(VAD_AUDIO).segments) == SILERO_SEGMENTS


def test_a_plain_exception_in_a_custom_validate_is_a_voicehub_error_naming_the_pass() -> None:
    class BuggyValidate(AcmeZeroBias):
        pass_id: ClassVar[str] = "acme.buggy-validate"

        def validate(self, model: object, context: OptimizationContext) -> None:
            raise ValueError("expected an attention layer")

    model = _silero()
    model.load()
    saved = _state(model.runtime.module)
    with pytest.raises(OptimizationValidationError, match=r"'acme.buggy-validate' raised ValueError in validate\(\)"):
        model.apply_optimization_plan(BuggyValidate())
    assert _same(model.runtime.module, saved) and model.active_optimization() is None


def test_dtype_is_streaming_safe_silero_streams_the_same_events_in_bfloat16() -> None:
    model = _silero()
    audio, sample_rate = soundfile.read(VAD_AUDIO, dtype="float32")
    audio = audio[: 20 * sample_rate]  # the first 20 s: 8 segments (the whole file: 19, same result; slower)

    def stream() -> list[Any]:
        session = model.stream(sample_rate)
        pushes = range(0, len(audio), 4000)  # 250 ms pushes, an uneven number of 32 ms chunks each
        events = [e for start in pushes for e in session.push(audio[start : start + 4000])]
        return events + list(session.flush())

    eager = stream()
    context = OptimizationContext(mode="inference", device="cpu", dtype="float32", streaming=True)
    result = model.apply_optimization_plan("dtype", context=context)
    assert result.manifest()["passes"][0]["capabilities"]["streaming_safe"] is True
    try:
        assert next(model.runtime.module.parameters()).dtype == torch.bfloat16
        assert stream() == eager and len(eager) == 2 * 8  # a start and an end per segment, identical samples
    finally:
        model.restore_optimization_plan()
