"""Entry-point loading rules (the end-to-end plug-in test installs a real distribution: packages/voicehub/tests)."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

from voicehub.core import SpeechTask
from voicehub.registry import (
    DuplicateRegistrationError,
    ModelRegistry,
    ModelSpec,
    PluginError,
    PluginWarning,
    load_model_entry_points,
)

MODULE = "voicehub_test_plugin_specs"


def _spec(name: str, **kwargs: object) -> ModelSpec:
    return ModelSpec(
        model_type=name, task=SpeechTask.VOICE_ACTIVITY_DETECTION, config="a.b:C", wrapper="a.b:W", **kwargs
    )  # type: ignore[arg-type]


@pytest.fixture
def entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    module = type(sys)(MODULE)
    module.GOOD = _spec("plug_good", aliases=("good",))  # type: ignore[attr-defined]
    module.PAIR = (_spec("plug_a"), _spec("plug_b", aliases=("taken",)))  # type: ignore[attr-defined]
    module.NOT_A_SPEC = "vad"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, module)
    group = "voicehub.test-models"
    eps = importlib.metadata.EntryPoints(
        [
            importlib.metadata.EntryPoint("a_good", f"{MODULE}:GOOD", group),
            importlib.metadata.EntryPoint("b_pair", f"{MODULE}:PAIR", group),
            importlib.metadata.EntryPoint("c_bad", f"{MODULE}:NOT_A_SPEC", group),
            importlib.metadata.EntryPoint("d_missing", "voicehub_no_such_plugin:SPEC", group),
        ]
    )
    monkeypatch.setattr(
        importlib.metadata, "entry_points", lambda group: eps if group == "voicehub.test-models" else ()
    )


@pytest.mark.usefixtures("entry_points")
def test_raise_mode_stops_at_the_first_broken_plugin_naming_it() -> None:
    registry = ModelRegistry()
    with pytest.raises(PluginError, match="'c_bad' = 'voicehub_test_plugin_specs:NOT_A_SPEC'") as info:
        load_model_entry_points(registry, group="voicehub.test-models")
    assert info.value.reference == f"{MODULE}:NOT_A_SPEC"
    assert registry.names() == ("plug_good", "plug_a", "plug_b")


@pytest.mark.usefixtures("entry_points")
def test_warn_mode_skips_broken_plugins_and_keeps_each_one_all_or_nothing() -> None:
    registry = ModelRegistry()
    registry.register(_spec("builtin", aliases=("taken",)))
    with pytest.warns(PluginWarning) as caught:
        added = load_model_entry_points(registry, group="voicehub.test-models", on_error="warn")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 3
    assert "'b_pair'" in messages[0] and "already an alias of model 'builtin'" in messages[0]
    assert "'c_bad'" in messages[1] and "expected a ModelSpec" in messages[1]
    assert "'d_missing'" in messages[2] and "fix or uninstall" in messages[2]
    # plug_a was registered before plug_b collided: it is rolled back with its entry point.
    assert registry.names() == ("builtin", "plug_good")
    assert [s.model_type for s in added] == ["plug_good"]
    with pytest.raises(DuplicateRegistrationError):
        load_model_entry_points(registry, group="voicehub.test-models")
