"""ArchitectureSpec holds verified facts only; they are checked; the registry refuses collisions."""

from __future__ import annotations

import pytest

from voicehub.core import SpeechTask
from voicehub.registry import (
    ArchitectureRegistry,
    ArchitectureSpec,
    DuplicateRegistrationError,
    SpecError,
    UnsupportedByArchitectureError,
)


def _spec(**kwargs: object) -> ArchitectureSpec:
    base: dict[str, object] = {
        "architecture_id": "Tiny-Net",
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
    assert "references" not in spec.to_dict()  # facts only: the graph is imported by its integration


def test_spec_refuses_the_import_references_it_no_longer_holds() -> None:
    with pytest.raises(TypeError, match="model_builder"):
        _spec(model_builder="tiny_arch_mod:build")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"devices": ("tpu",)}, "unknown device 'tpu'"),
        ({"dtypes": ("int4",)}, "unsupported dtype 'int4'"),
        ({"devices": ("auto",)}, "not 'auto'"),
        ({"tasks": ("singing",)}, "unknown speech task"),
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
