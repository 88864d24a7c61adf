"""ModelSpec and ModelRegistry rules (isolated registries; nothing touches the process catalog)."""

from __future__ import annotations

import dataclasses
import sys
import threading
from typing import ClassVar

import pytest

from voicehub.core import SpeechTask, UnknownModelError
from voicehub.registry import (
    DistributionSource,
    DuplicateRegistrationError,
    HubSource,
    ModelConfig,
    ModelRegistry,
    ModelSpec,
    PluginError,
    SpecError,
    class_reference,
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EchoConfig(ModelConfig):
    config_type: ClassVar[str] = "echo_test"
    gain_db: float = 0.0


class EchoWrapper:
    """Stands in for a wrapper class: the registry only records its import path."""


def _spec(model_type: str = "echo_test", *, task: str = "vad", **kwargs: object) -> ModelSpec:
    return ModelSpec(
        model_type=model_type,
        task=SpeechTask.parse(task),
        config="mypkg.config:EchoConfig",
        wrapper="mypkg.wrapper:EchoWrapper",
        **kwargs,  # type: ignore[arg-type]
    )


def test_spec_normalizes_type_aliases_task_and_source() -> None:
    spec = ModelSpec(
        model_type=" Echo_Test ",
        task="vad",  # type: ignore[arg-type]
        config="mypkg.config:EchoConfig",
        wrapper="mypkg.wrapper:EchoWrapper",
        default_source="dist:silero-vad/silero_vad/data/silero_vad.jit",  # type: ignore[arg-type]
        aliases=("Echo", "echo"),
        capabilities=("streaming",),
    )
    assert spec.model_type == "echo_test"
    assert spec.task is SpeechTask.VOICE_ACTIVITY_DETECTION
    assert spec.aliases == ("echo",)
    assert spec.capabilities == ("voice-activity-detection", "streaming")
    assert spec.default_source == DistributionSource(distribution="silero-vad", path="silero_vad/data/silero_vad.jit")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("config", "mypkg.config.EchoConfig", "module:attribute"),
        ("wrapper", "", "module:attribute"),
        ("model_type", "voicehub", "not usable"),
        ("model_type", "two words", "without spaces"),
        ("task", "singing", "unknown speech task"),
    ],
)
def test_spec_rejects_invalid_fields_naming_them(field: str, value: str, message: str) -> None:
    kwargs = {"model_type": "echo_test", "task": "vad", "config": "a.b:C", "wrapper": "a.b:D", field: value}
    with pytest.raises(SpecError, match=message) as info:
        ModelSpec(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_from_classes_stores_only_import_paths_and_reads_config_type() -> None:
    spec = ModelSpec.from_classes(EchoConfig, EchoWrapper, task="vad", default_source="acme/echo-base")
    assert spec.model_type == "echo_test"
    assert spec.config == f"{__name__}:EchoConfig"
    assert spec.wrapper == f"{__name__}:EchoWrapper"
    assert spec.default_source == HubSource(repo_id="acme/echo-base")
    assert spec.load_config_class() is EchoConfig
    assert spec.load_wrapper_class() is EchoWrapper


def test_from_classes_refuses_function_local_classes_and_disagreeing_type() -> None:
    class Local:
        pass

    with pytest.raises(SpecError, match="inside a function"):
        class_reference(Local)
    with pytest.raises(SpecError, match=r"disagrees with EchoConfig\.config_type"):
        ModelSpec.from_classes(EchoConfig, EchoWrapper, task="vad", model_type="other")


def test_aliases_are_case_insensitive_and_resolve_to_the_type() -> None:
    registry = ModelRegistry()
    registry.register(_spec(aliases=("Echo-VAD",)))
    assert registry.get("ECHO-vad").model_type == "echo_test"
    assert registry.normalize("  Echo_Test ") == "echo_test"
    assert "echo-VAD" in registry
    assert dict(registry.aliases) == {"echo-vad": "echo_test"}


def test_unknown_name_lists_the_registered_types() -> None:
    registry = ModelRegistry()
    registry.register(_spec("alpha"))
    registry.register(_spec("beta", task="asr"))
    with pytest.raises(UnknownModelError) as info:
        registry.get("gamma")
    assert info.value.available == ("alpha", "beta")
    assert "available: alpha, beta" in str(info.value)
    assert isinstance(info.value, KeyError)


def test_duplicate_type_is_refused_unless_exist_ok() -> None:
    registry = ModelRegistry()
    registry.register(_spec(aliases=("old",)))
    with pytest.raises(DuplicateRegistrationError, match="already registered"):
        registry.register(_spec(description="second"))
    registry.register(_spec(description="second", aliases=("new",)), exist_ok=True)
    assert registry.get("echo_test").description == "second"
    assert "old" not in registry  # the replaced spec's aliases went with it
    assert registry.normalize("new") == "echo_test"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (_spec("alpha", aliases=("shared",)), _spec("beta", aliases=("shared",))),  # alias vs alias
        (_spec("alpha"), _spec("beta", aliases=("alpha",))),  # alias vs type
        (_spec("alpha", aliases=("beta",)), _spec("beta")),  # type vs alias
    ],
)
def test_alias_and_type_collisions_are_refused_both_ways(first: ModelSpec, second: ModelSpec) -> None:
    registry = ModelRegistry()
    registry.register(first)
    with pytest.raises(DuplicateRegistrationError) as info:
        registry.register(second)
    assert info.value.owner == "alpha"
    assert registry.names() == ("alpha",)


def test_one_default_per_task() -> None:
    registry = ModelRegistry()
    registry.register(_spec("alpha", default_for_task=True))
    registry.register(_spec("beta", task="asr", default_for_task=True))  # another task: fine
    with pytest.raises(DuplicateRegistrationError, match="already has the default model 'alpha'"):
        registry.register(_spec("gamma", default_for_task=True))
    assert registry.get_default("vad").model_type == "alpha"
    assert registry.get_default(SpeechTask.AUTOMATIC_SPEECH_RECOGNITION).model_type == "beta"
    with pytest.raises(UnknownModelError, match="default of text-to-speech"):
        registry.get_default("tts")


def test_unregister_removes_the_aliases() -> None:
    registry = ModelRegistry()
    registry.register(_spec(aliases=("echo", "reverb")))
    registry.register_alias("delay", "echo")
    removed = registry.unregister("REVERB")
    assert removed.model_type == "echo_test"
    assert len(registry) == 0
    assert dict(registry.aliases) == {}
    registry.register(_spec("other", aliases=("echo",)))  # the alias is free again
    assert registry.normalize("echo") == "other"


def test_list_filters_by_task_in_registration_order() -> None:
    registry = ModelRegistry()
    for name, task in (("c", "vad"), ("a", "asr"), ("b", "vad")):
        registry.register(_spec(name, task=task))
    assert [s.model_type for s in registry.list("vad")] == ["c", "b"]
    assert [s.model_type for s in registry.list()] == ["c", "a", "b"]


def test_isolated_instances_do_not_leak() -> None:
    first, second = ModelRegistry(), ModelRegistry()
    first.register(_spec())
    assert "echo_test" not in second
    clone = first.copy()
    clone.unregister("echo_test")
    assert "echo_test" in first


def test_populator_runs_once_before_first_read() -> None:
    calls: list[str] = []
    registry = ModelRegistry()

    def populate(reg: object) -> None:
        calls.append("run")
        assert isinstance(reg, ModelRegistry)
        reg.register(_spec("lazy"))

    registry.add_populator("test", populate)
    assert calls == []
    assert registry.names() == ("lazy",)
    assert registry.get("lazy").model_type == "lazy"
    assert calls == ["run"]
    assert registry.pending_populators == ()


def test_failed_populator_rolls_back_and_stays_pending() -> None:
    registry = ModelRegistry()
    registry.register(_spec("kept"))
    attempts = []

    def populate(reg: object) -> None:
        attempts.append(1)
        assert isinstance(reg, ModelRegistry)
        reg.register(_spec("half"))
        if len(attempts) == 1:
            raise PluginError("broken plug-in", reference="x:y")

    registry.add_populator("flaky", populate)
    with pytest.raises(PluginError, match="broken plug-in"):
        registry.names()
    assert registry._specs.keys() == {"kept"}  # nothing half-registered
    assert registry.pending_populators == ("flaky",)
    assert registry.names() == ("kept", "half")


def test_populate_waits_for_another_thread() -> None:
    registry = ModelRegistry()
    started, release = threading.Event(), threading.Event()

    def populate(reg: object) -> None:
        started.set()
        release.wait(5)
        assert isinstance(reg, ModelRegistry)
        reg.register(_spec("slow"))

    registry.add_populator("slow", populate)
    results: list[tuple[str, ...]] = []
    worker = threading.Thread(target=lambda: results.append(registry.names()))
    worker.start()
    started.wait(5)
    reader = threading.Thread(target=lambda: results.append(registry.names()))
    reader.start()
    release.set()
    worker.join(5)
    reader.join(5)
    assert results == [("slow",), ("slow",)]


def test_load_references_resolves_specs_and_is_idempotent(monkeypatch: pytest.MonkeyPatch) -> None:
    module = type(sys)("voicehub_test_catalog_mod")
    module.ONE = _spec("one")  # type: ignore[attr-defined]
    module.TWO = (_spec("two"), _spec("three", task="tts"))  # type: ignore[attr-defined]
    module.BAD = 42  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    registry = ModelRegistry()
    refs = (f"{module.__name__}:ONE", f"{module.__name__}:TWO")
    registry.load_references(refs)
    registry.load_references(refs)
    assert registry.names() == ("one", "two", "three")
    with pytest.raises(PluginError, match="is a int, expected a ModelSpec"):
        registry.load_references((f"{module.__name__}:BAD",))
    with pytest.raises(PluginError, match="cannot load 'voicehub_no_such_module:X'"):
        registry.load_references(("voicehub_no_such_module:X",))


def test_model_config_serializes_model_type_and_refuses_another() -> None:
    config = EchoConfig(gain_db=-3.0)
    data = config.to_dict()
    assert data["model_type"] == "echo_test"
    assert list(data)[:3] == ["type", "model_type", "schema_version"]
    assert EchoConfig.from_json(config.to_json()) == config
    with pytest.raises(ValueError, match="model_type 'other' cannot be loaded as EchoConfig"):
        EchoConfig.from_dict({**data, "model_type": "other"})
    with pytest.raises(KeyError, match=r"unknown key\(s\) \['gain'\]; known keys are \['gain_db'\]"):
        EchoConfig.from_dict({"gain": 1.0})


def test_upstream_model_types_and_hub_ids_belong_to_one_model_each() -> None:
    from voicehub.registry import ModelRegistry
    from voicehub.registry.errors import DuplicateRegistrationError

    registry = ModelRegistry(name="upstream")
    first = ModelSpec(
        model_type="asr_a", task="asr", config="m:C", wrapper="m:W",
        upstream_model_types=("whisper", "WhisperForConditionalGeneration"), hub_ids=("openai/whisper-tiny.en",),
        known_checkpoints=(("small", "hf:openai/whisper-small"),),
    )  # fmt: skip
    registry.register(first)
    assert registry.find_upstream(None, ["whisperforconditionalgeneration"]) is first
    assert registry.find_hub_id("OpenAI/Whisper-Tiny.en") is first  # Hub ids are case-insensitive
    assert registry.upstream_spec_of({"model_type": "whisper"}) is first
    assert registry.upstream_spec_of({"type": "asr_a", "model_type": "whisper"}) is None  # VoiceHub's own config
    with pytest.raises(
        KeyError, match=r"'small' is an upstream checkpoint that 'asr_a' loads.*hf:openai/whisper-small"
    ):
        registry.get("small")
    second = ModelSpec(model_type="asr_b", task="asr", config="m:C", wrapper="m:W", upstream_model_types=("whisper",))
    with pytest.raises(DuplicateRegistrationError, match=r"\['whisper'\] already belong to 'asr_a'"):
        registry.register(second)
    with pytest.raises(SpecError, match="owner/name"):
        ModelSpec(model_type="asr_c", task="asr", config="m:C", wrapper="m:W", hub_ids=("whisper",))
    with pytest.raises(SpecError, match="known_checkpoints"):
        ModelSpec(model_type="asr_c", task="asr", config="m:C", wrapper="m:W", known_checkpoints=(("small",),))  # type: ignore[arg-type]
