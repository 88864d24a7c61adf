"""An irreversible optimization plan is undone by unload() then load() on the real Silero VAD."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import voicehub
from voicehub.core.errors import LifecycleError
from voicehub.optimization import (
    OptimizationCapabilities,
    OptimizationMode,
    OptimizationPass,
    OptimizationPassRegistry,
    PassResult,
)

WAV = (
    Path(__file__).resolve().parents[3]
    / "tests"
    / "data"
    / "librivox"
    / "sense_and_sensibility_01_austen_64kb-0880.wav"
)


class ZeroBiasPass(OptimizationPass):
    """Irreversible on purpose: zeroes every bias in place."""

    pass_id = "test.zero-bias"
    pass_version = "1"
    capabilities = OptimizationCapabilities(modes=(OptimizationMode.INFERENCE,), reversible=False)

    def manifest_configuration(self) -> dict[str, Any]:
        return {}

    def apply(self, model: Any, context: Any) -> PassResult:
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                if name.endswith("bias"):
                    parameter.zero_()
        return PassResult(model=model, state={}, metadata={"outcome": "configured"})


def _bounds(model: Any) -> list[tuple[int, int]]:
    return [(s.start_sample, s.end_sample) for s in model.detect(WAV).segments]


def test_unload_then_load_discards_an_irreversible_plan_and_restores_the_weights() -> None:
    registry = OptimizationPassRegistry()
    registry.register("zero-bias", ZeroBiasPass)
    model = voicehub.AutoModel.from_pretrained(model_type="vad_silero")
    before = _bounds(model)
    assert before == [(3616, 46048)]
    model.apply_optimization_plan("zero-bias", registry=registry)
    assert _bounds(model) != before
    with pytest.raises(Exception, match=r"call unload\(\) then load\(\)"):
        model.restore_optimization_plan()
    model.unload()
    model.load()
    assert model.active_optimization(OptimizationMode.INFERENCE) is None
    assert _bounds(model) == before


def test_unload_still_refuses_while_a_reversible_plan_is_active() -> None:
    model = voicehub.AutoModel.from_pretrained(model_type="vad_silero")
    model.apply_optimization_plan("eval-mode")
    with pytest.raises(LifecycleError, match=r"restore_optimization_plan\(mode='inference'\) before unload"):
        model.unload()
    model.restore_optimization_plan()
    model.unload()


def test_a_stream_refuses_a_scalar_chunk_with_a_voicehub_error() -> None:
    import numpy as np

    from voicehub.core.errors import AudioError

    session = voicehub.AutoModel.from_pretrained(model_type="vad_silero").stream(16000)
    assert session.push(np.zeros(0, dtype=np.float32)) == []
    for scalar in (np.float32(0.1), torch.tensor(0.1)):
        with pytest.raises(AudioError, match="got a scalar"):
            session.push(scalar)


def test_saving_again_removes_what_the_earlier_save_wrote_and_this_one_does_not(tmp_path: Path) -> None:
    import json

    model = voicehub.AutoModel.from_pretrained(model_type="vad_silero")
    target = model.save_pretrained(tmp_path / "saved")
    written = json.loads((target / ".voicehub-saved.json").read_text())
    assert written == ["config.json", "inference_options.json", "model.safetensors"]
    (target / "notes.txt").write_text("mine")  # not written by a save: kept
    (target / "stale").mkdir()  # pretend an earlier save wrote it
    (target / ".voicehub-saved.json").write_text(json.dumps([*written, "stale"]))
    model.save_pretrained(target)
    assert sorted(p.name for p in target.iterdir()) == [
        ".voicehub-saved.json",
        "config.json",
        "inference_options.json",
        "model.safetensors",
        "notes.txt",
    ]
    assert _bounds(voicehub.AutoModel.from_pretrained(target)) == [(3616, 46048)]
