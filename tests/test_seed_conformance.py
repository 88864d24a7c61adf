"""The seed documents' own examples, run as written (issue #33); each test is a row of docs/architecture.md.

Seed 000 is "Add an optimization", seed 001 "Library architecture", seed 004 "Model Extension
Contracts" (Hyperion). Each test quotes the sentence it proves and runs the seed's code, changed only
where a name must change (a named model type, a file path); it asserts the outcome a reader of the
seed expects, not that the code runs.
"""

from __future__ import annotations

import os

import pytest
import torch

from voicehub import AutoModel
from voicehub.core.errors import UnknownPassError
from voicehub.optimization import OptimizationCompatibilityError
from voicehub.optimization.builtin.torch_compile import TorchCompilePass

os.environ.setdefault("HF_HUB_OFFLINE", "1")


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
