"""Wrappers pickle as recipes: every registered model rebuilds, lazily, into a wrapper with equal outputs."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from voicehub import AutoModel
from voicehub._recipe import RECIPE_SCHEMA_VERSION, ModelRecipe, recipe_of
from voicehub.architectures.xvector import XVectorConfig
from voicehub.core.tasks import SpeechTask
from voicehub.errors import UnpicklableModelError
from voicehub.modeling import AnySpeechModel
from voicehub.models.sv_xvector.config import SVXVectorConfig
from voicehub.registry import MODEL_CATALOG, ModelSpec
from voicehub.registry.errors import CheckpointNotFoundError

cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle (Ray's serializer) is a dev dependency")

ROOT = Path(__file__).resolve().parents[3]
CLIP = ROOT / "tests" / "data" / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav"
SYNTHETIC = ROOT / "tests" / "data" / "synthetic"


def _outputs(model: AnySpeechModel) -> Any:
    """The task call on the real clip, as plain values (output records compare arrays by identity)."""
    task = model.task
    if task is SpeechTask.VOICE_ACTIVITY_DETECTION:
        out = model.detect(CLIP)
        return [(s.start_sample, s.end_sample, s.score) for s in out.segments]
    if task is SpeechTask.SPEAKER_VERIFICATION:
        return model.embed(CLIP).embedding
    if task is SpeechTask.AUTOMATIC_SPEECH_RECOGNITION:
        out = model.transcribe(CLIP)
        return out.text, [(s.start_s, s.end_s, s.text) for s in out.segments]
    if task is SpeechTask.TEXT_TO_SPEECH:
        return model.generate("The batch is ready.", seed=0).audio  # unseeded synthesis draws a new seed
    raise AssertionError(f"no check for task {task}")


def _assert_equal(first: Any, second: Any) -> None:
    if isinstance(first, np.ndarray):
        np.testing.assert_array_equal(first, second)
    else:
        assert first == second


def _model(spec: ModelSpec, tmp_path: Path) -> AnySpeechModel:
    """The wrapper on its installed default weights; a model without pretrained weights gets seeded ones."""
    if spec.default_source is None:
        model = AutoModel.from_pretrained(model_type=spec.name, device="cpu")
        if not model.has_weights:
            return model
        torch.manual_seed(0)
        model.load_for_training()
        model.load()
        return AutoModel.from_pretrained(model.save_pretrained(tmp_path / spec.name), device="cpu")
    try:
        spec.default_source.resolve()
    except CheckpointNotFoundError as err:
        pytest.skip(f"{spec.name}: default weights not installed ({err})")
    return AutoModel.from_pretrained(model_type=spec.name, device="cpu")


def _spec_param(spec: ModelSpec) -> Any:
    slow = spec.task is SpeechTask.AUTOMATIC_SPEECH_RECOGNITION  # three long-form decodes on a loaded machine
    return pytest.param(spec, id=spec.name, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("spec", [_spec_param(spec) for spec in MODEL_CATALOG.list()])
@pytest.mark.slow
def test_every_registered_model_pickles_into_a_lazy_wrapper_with_equal_outputs(spec: ModelSpec, tmp_path: Path) -> None:
    model = _model(spec, tmp_path)
    before = pickle.dumps(model)  # not loaded yet
    expected = _outputs(model)
    assert model.is_loaded
    for payload in (before, cloudpickle.dumps(model)):  # pickled before loading, and with cloudpickle after
        copy = pickle.loads(payload)
        assert type(copy) is type(model) and copy is not model
        assert not copy.is_loaded  # nothing is read until the first call
        assert copy.config == model.config and copy.default_options == model.default_options
        assert copy.source == model.source
        _assert_equal(_outputs(copy), expected)
        assert copy.is_loaded
    assert len(before) < 10_000  # a recipe, not the weights


def test_an_active_plan_is_carried_and_applied_when_the_copy_loads() -> None:
    model = AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    model.apply_optimization_plan(["eval-mode", "threads"])
    expected = _outputs(model)
    copy = cloudpickle.loads(cloudpickle.dumps(model))
    assert copy.active_optimization() is None and not copy.is_loaded
    assert _outputs(copy) == expected
    result = copy.active_optimization()
    assert result is not None and [p.name for p in result.applied] == ["voicehub.eval-mode", "voicehub.threads"]
    copy.restore_optimization_plan()  # a reversible plan restores in the worker like anywhere else


def test_a_wrapper_loaded_for_training_refuses_to_pickle_and_names_the_fix() -> None:
    model = AutoModel.from_pretrained(model_type="sv_xvector", device="cpu")
    model.load_for_training()
    with pytest.raises(UnpicklableModelError, match=r"loaded for training.*save_pretrained") as info:
        pickle.dumps(model)
    assert isinstance(info.value, pickle.PicklingError)


def test_an_unpicklable_pass_is_refused_with_its_name() -> None:
    model = AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    model.apply_optimization_plan(["eval-mode"])
    applied = model.active_optimization().applied[0].optimization_pass  # type: ignore[union-attr]
    applied.hook = lambda: None  # type: ignore[attr-defined]  # a pass holding a local function
    with pytest.raises(UnpicklableModelError, match=r"optimization pass 'eval-mode'.*restore_optimization_plan"):
        pickle.dumps(model)


@pytest.mark.slow
def test_an_attached_plda_backend_is_carried_by_value(tmp_path: Path) -> None:
    torch.manual_seed(0)
    config = SVXVectorConfig(encoder=XVectorConfig(channels=32, embedding_dim=16))
    model = AutoModel.from_pretrained(model_type="sv_xvector", config=config, device="cpu")
    model.load_for_training()
    model.load()
    saved = model.save_pretrained(tmp_path / "xv")
    model = AutoModel.from_pretrained(saved, device="cpu")
    clips = sorted(SYNTHETIC.glob("*_[12].flac"))
    model.fit_backend([str(p) for p in clips], [p.stem.rsplit("_", 1)[0] for p in clips], calibrate=False)
    first, second = SYNTHETIC / "flite_slt_1.flac", SYNTHETIC / "flite_awb_2.flac"
    expected = model.verify(first, second)
    copy = pickle.loads(pickle.dumps(model))
    assert copy.backend is not None and not copy.is_loaded
    decision = copy.verify(first, second)
    assert decision.scoring == expected.scoring == "plda"
    assert decision.score == expected.score
    model.set_backend(None)  # a detached back-end stays detached in the copy
    assert pickle.loads(pickle.dumps(model)).verify(first, second).scoring == "cosine"


def test_a_recipe_of_another_schema_version_is_refused() -> None:
    model = AutoModel.from_pretrained(model_type="vad_webrtc", device="cpu")
    recipe = recipe_of(model)
    assert isinstance(recipe, ModelRecipe) and recipe.schema_version == RECIPE_SCHEMA_VERSION
    future = ModelRecipe(
        wrapper_class=recipe.wrapper_class,
        config_json=recipe.config_json,
        options_json=recipe.options_json,
        source=recipe.source,
        device=recipe.device,
        dtype=recipe.dtype,
        schema_version=RECIPE_SCHEMA_VERSION + 1,
    )
    with pytest.raises(UnpicklableModelError, match="schema_version"):
        future.build()
