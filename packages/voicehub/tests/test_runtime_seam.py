"""The runtime seam on the real wrappers: the RuntimeHost protocol, typed device/dtype, one config read.

* Every registered wrapper is a :class:`~voicehub.core.RuntimeHost`; an
  :class:`~voicehub.optimization.OptimizationHost` built on the protocol alone drives the real Silero
  VAD (load, apply, restore) and the segments on real speech come back unchanged.
* ``device`` and ``dtype`` are parsed once, where the user passes them; the wrapper holds the typed values.
* ``AutoModel.from_pretrained(directory)`` reads ``config.json`` once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import voicehub
from voicehub.core import Device, DType, RuntimeBundle, RuntimeHost, RuntimeState
from voicehub.optimization import OptimizationHost

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[3]
SPEECH = ROOT / "tests" / "data" / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav"


def _bounds(model: Any) -> list[tuple[int, int]]:
    return [(s.start_sample, s.end_sample) for s in model.detect(SPEECH).segments]


@pytest.mark.parametrize("model_type", [spec.model_type for spec in voicehub.list_model_specs()])
def test_every_registered_wrapper_is_a_runtime_host(model_type: str) -> None:
    model = voicehub.AutoModel.from_pretrained(model_type=model_type, device="cpu")
    assert isinstance(model, RuntimeHost)
    assert model.state is RuntimeState.CREATED and model.runtime is None


def test_an_optimization_host_drives_silero_through_the_protocol_alone() -> None:
    silero = voicehub.AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    before = _bounds(silero)
    assert before == [(3616, 46048)]  # one segment in this LibriVox clip
    silero.unload()
    host = OptimizationHost(silero)  # a second host over the same wrapper, knowing only the protocol
    result = host.apply(("eval-mode", "threads"), architecture=silero.architecture_spec())
    assert silero.state is RuntimeState.INFERENCE and isinstance(silero.runtime, RuntimeBundle)
    assert result.model is silero.runtime.module and result.context.architecture == "silero"
    assert _bounds(silero) == before
    host.restore()
    assert host.active() is None and _bounds(silero) == before
    failing = voicehub.AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    with pytest.raises(voicehub.VoiceHubError, match="supports inference mode, not 'training'"):
        OptimizationHost(failing).apply("inference-mode", mode="training")
    assert failing.state is RuntimeState.CREATED  # refused before the runtime was loaded


def test_device_and_dtype_are_parsed_once_into_typed_values(monkeypatch: pytest.MonkeyPatch) -> None:
    import voicehub._model_files
    import voicehub.modeling

    parsed: list[object] = []
    for module in (voicehub._model_files, voicehub.modeling):  # every module that parses a dtype
        original = module.normalize_dtype

        def spy(value: Any, original: Any = original) -> DType:
            if not isinstance(value, DType):
                parsed.append(value)  # a string (or torch dtype) being parsed, not a typed value passed on
            result: DType = original(value)
            return result

        monkeypatch.setattr(module, "normalize_dtype", spy)
    model = voicehub.AutoModel.from_pretrained(model_type="vad_silero", device="CPU", dtype="bf16")
    assert parsed == ["bf16"]
    assert model.device == "cpu" and isinstance(model.device, Device)
    model.load()
    assert str(next(model.runtime.module.parameters()).dtype) == "torch.bfloat16"


def test_from_pretrained_on_a_saved_directory_reads_config_json_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = voicehub.AutoModel.from_pretrained(model_type="vad_webrtc").save_pretrained(tmp_path / "webrtc")
    reads: list[str] = []
    read_text = Path.read_text

    def counting(self: Path, *args: Any, **kwargs: Any) -> str:
        if self.name == "config.json":
            reads.append(str(self))
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counting)
    model = voicehub.AutoModel.from_pretrained(saved)
    assert reads == [str(saved / "config.json")]
    assert model.model_type == "vad_webrtc" and model.config.aggressiveness == 3
