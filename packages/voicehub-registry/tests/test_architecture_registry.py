"""ArchitectureSpec references stay lazy; verified facts are checked; the registry refuses collisions."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from voicehub.core import SpeechTask, UnknownModelError
from voicehub.registry import (
    ArchitectureRegistry,
    ArchitectureSpec,
    DuplicateRegistrationError,
    PluginError,
    SpecError,
    UnsupportedByArchitectureError,
)


def _spec(**kwargs: object) -> ArchitectureSpec:
    base: dict[str, object] = {
        "architecture_id": "Tiny-Net",
        "model_builder": "tiny_arch_mod:build",
        "config": "tiny_arch_mod:TinyConfig",
        "tasks": ("vad",),
        "devices": ("cpu", "CUDA"),
        "dtypes": ("fp32", "bf16"),
        "features": ("8kHz", "streaming"),
        "optimization_passes": ("eval-mode",),
    }
    base.update(kwargs)
    return ArchitectureSpec(**base)  # type: ignore[arg-type]


def test_spec_normalizes_ids_devices_dtypes_and_tasks() -> None:
    spec = _spec()
    assert spec.architecture_id == "tiny-net"
    assert spec.devices == ("cpu", "cuda")
    assert spec.dtypes == ("float32", "bfloat16")
    assert spec.tasks == (SpeechTask.VOICE_ACTIVITY_DETECTION,)
    assert spec.features == ("8khz", "streaming")
    assert spec.references() == {"model_builder": "tiny_arch_mod:build", "config": "tiny_arch_mod:TinyConfig"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model_builder": "no_colon"}, "module:attribute"),
        ({"checkpoint_adapter": "a b:c"}, "module:attribute"),
        ({"devices": ("tpu",)}, "unknown device 'tpu'"),
        ({"dtypes": ("int4",)}, "unsupported dtype 'int4'"),
        ({"devices": ("auto",)}, "not 'auto'"),
        ({"tasks": ("singing",)}, "unknown speech task"),
        ({"components": {"config": "a:b"}}, "shadows the config slot"),
        ({"sample_rates": (16000, 0)}, "positive ints"),
    ],
)
def test_spec_rejects_bad_declarations(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        _spec(**kwargs)


def test_require_names_the_unverified_fact_and_the_verified_values() -> None:
    spec = _spec()
    spec.require(device="cuda:1", dtype="bfloat16", task="vad", feature="8KHZ", optimization_pass="eval-mode")
    assert spec.supports(device="cpu", dtype="float32")
    assert not spec.supports(device="mps")
    with pytest.raises(UnsupportedByArchitectureError) as info:
        spec.require(dtype="half")
    assert info.value.kind == "dtype"
    assert info.value.verified == ("float32", "bfloat16")
    assert "verified: float32, bfloat16" in str(info.value)
    with pytest.raises(UnsupportedByArchitectureError, match="task 'asr'"):
        spec.require(task="asr")
    with pytest.raises(UnsupportedByArchitectureError, match="optimization pass 'int8-dynamic'"):
        spec.require(optimization_pass="int8-dynamic")


def test_references_resolve_only_on_request(tmp_path: Path) -> None:
    (tmp_path / "tiny_arch_mod.py").write_text(
        textwrap.dedent(
            """
            import json
            IMPORTED = True
            class TinyConfig:
                pass
            def build(config):
                return ("built", config)
            """
        )
    )
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from voicehub.registry import ArchitectureRegistry, ArchitectureSpec
        registry = ArchitectureRegistry()
        spec = registry.register(ArchitectureSpec(
            architecture_id="tiny", model_builder="tiny_arch_mod:build", config="tiny_arch_mod:TinyConfig"))
        before = "tiny_arch_mod" in sys.modules
        config_class = registry.get("tiny").resolve("config", expected_type=object)
        print(before, "tiny_arch_mod" in sys.modules, config_class.__name__, "torch" in sys.modules)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.split() == ["False", "True", "TinyConfig", "False"]


def test_resolve_errors_name_the_role_and_the_reference() -> None:
    spec = _spec(model_builder="voicehub_missing_arch_mod:build", components={"vocoder": "json:dumps"})
    with pytest.raises(UnknownModelError, match="available: config, model_builder, vocoder"):
        spec.resolve("decoder")
    with pytest.raises(PluginError, match="model_builder") as info:
        spec.resolve("model_builder")
    assert info.value.reference == "voicehub_missing_arch_mod:build"
    with pytest.raises(PluginError, match="expected type"):
        spec.resolve("vocoder", expected_type=type)
    import json

    assert spec.resolve("vocoder") is json.dumps


def test_registry_aliases_collisions_and_task_filter() -> None:
    registry = ArchitectureRegistry()
    registry.register(_spec(aliases=("tiny",)))
    registry.register(_spec(architecture_id="other", tasks=("asr",)))
    assert registry.get("TINY").architecture_id == "tiny-net"
    assert [s.architecture_id for s in registry.list("vad")] == ["tiny-net"]
    with pytest.raises(DuplicateRegistrationError, match="already an alias of architecture 'tiny-net'"):
        registry.register(_spec(architecture_id="third", aliases=("tiny",)))
    with pytest.raises(DuplicateRegistrationError, match="already registered"):
        registry.register(_spec())
    registry.add(_spec(aliases=("tiny",)))  # identical: idempotent
    registry.unregister("tiny")
    assert registry.names() == ("other",)
    assert dict(registry.aliases) == {}
