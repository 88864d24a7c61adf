"""The seed documents' own examples, run as written (issue #33); each test is a row of docs/architecture.md.

Seed 000 is "Add an optimization", seed 001 "Library architecture", seed 004 "Model Extension
Contracts" (Hyperion). Each test quotes the sentence it proves and runs the seed's code, changed only
where a name must change (a named model type, a file path); it asserts the outcome a reader of the
seed expects, not that the code runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub import AutoModel
from voicehub.core import load_audio
from voicehub.core.errors import UnknownPassError
from voicehub.models import load_builtin_architectures
from voicehub.optimization import (
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationContext,
    select_verified_passes,
)
from voicehub.optimization.builtin.torch_compile import TorchCompilePass

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = Path(__file__).resolve().parent / "data"
ARCHITECTURES = load_builtin_architectures()


# ------------------------------------------------------------------------------------------ seed 000 / 001: passes
def test_seed_000_explicit_backend_that_cannot_run_fails_before_mutation() -> None:
    """Seed 000: "an explicit backend that cannot run ... must still fail before mutation"."""
    model = AutoModel.from_pretrained(model_type="vad_silero")
    model.load()
    assert model.runtime is not None
    module = model.runtime.module
    before = {k: v.clone() for k, v in module.state_dict().items()}
    with pytest.raises(OptimizationCompatibilityError, match="backend 'no-such-backend' is not available") as info:
        model.apply_optimization_plan(("eval-mode", TorchCompilePass(backend="no-such-backend")), mode="inference")
    assert "named explicitly" in str(info.value)
    assert model.active_optimization("inference") is None
    assert model.runtime.module is module and "forward" not in vars(module)
    assert all(torch.equal(v, before[k]) for k, v in module.state_dict().items())


def test_seed_001_custom_kernels_plan_is_refused_naming_the_known_passes() -> None:
    """Seed 001's plan ``("custom-kernels", "compile")``: the pass is pending (lead); until then a named refusal."""
    model = AutoModel.from_pretrained(model_type="vad_silero")
    with pytest.raises(UnknownPassError) as info:
        model.apply_optimization_plan(("custom-kernels", "compile"), mode="inference")
    message = str(info.value)
    assert "'custom-kernels'" in message
    for known in ("compile", "dtype", "eval-mode", "inference-mode", "int8-dynamic", "threads"):
        assert known in message
    assert not model.is_loaded  # refused before the runtime was loaded


def test_seed_001_auto_plan_applies_exactly_the_architectures_verified_passes() -> None:
    """Seed 001: "optimization_passes metadata records implementations verified for automatic selection"."""
    audio = load_audio(DATA / "silero" / "test.wav").samples[: 16000 * 20]
    model = AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    reference = model.detect(audio, sample_rate=16000, return_probabilities=True)
    verified = model.architecture_spec().optimization_passes  # type: ignore[union-attr]
    result = model.apply_optimization_plan("auto", mode="inference")
    manifest = result.manifest()
    names = [entry["name"] for entry in manifest["passes"]]  # type: ignore[index, union-attr]
    # float32 on the CPU: every verified kind fits except int8-dynamic, which is float32-only and comes after dtype
    assert verified == ("eval-mode", "inference-mode", "threads", "dtype", "int8-dynamic")
    assert names == ["eval-mode", "inference-mode", "threads", "dtype"]
    assert manifest["context"]["dtype"] == "float32"  # type: ignore[index, call-overload]
    optimized = model.detect(audio, sample_rate=16000, return_probabilities=True)
    model.restore_optimization_plan("inference")
    assert optimized.probabilities is not None and reference.probabilities is not None
    assert len(optimized.segments) == len(reference.segments)
    assert float(np.abs(optimized.probabilities - reference.probabilities).max()) <= 0.08  # bfloat16, as verified
    restored = model.detect(audio, sample_rate=16000, return_probabilities=True)
    assert restored.probabilities is not None and np.array_equal(restored.probabilities, reference.probabilities)


def test_seed_001_auto_plan_without_architecture_metadata_is_refused_before_loading() -> None:
    model = AutoModel.from_pretrained(model_type="vad_webrtc")
    with pytest.raises(OptimizationConfigurationError, match="has no architecture metadata; name the passes"):
        model.apply_optimization_plan("auto", mode="inference")
    assert not model.is_loaded


@pytest.mark.parametrize("architecture", [spec.architecture_id for spec in ARCHITECTURES.list()])
def test_seed_001_auto_selection_is_a_partition_of_every_architectures_verified_passes(architecture: str) -> None:
    spec = ARCHITECTURES.get(architecture)
    for device in spec.devices:
        for dtype in spec.dtypes:
            context = OptimizationContext(device=device, dtype=dtype)
            selection = select_verified_passes(spec, context)
            skipped = [kind for kind, _ in selection.skipped]
            assert sorted((*selection.passes, *skipped)) == sorted(spec.optimization_passes), (device, dtype)
            assert all(reason for _, reason in selection.skipped)
