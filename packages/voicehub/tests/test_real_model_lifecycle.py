"""The shared lifecycle on a real integration: ``vad_silero`` with the silero-vad wheel's weights.

These complement the extension-wrapper tests with the built-in default VAD: concurrency,
cross-mode guards, save/reload and task separation all on real weights and real speech.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import SPEECH_WAV
from voicehub import (
    AutoModel,
    AutoModelForSpeechRecognition,
    AutoModelForVoiceActivityDetection,
    get_default_model_spec,
    pipeline,
)
from voicehub.core import LifecycleError, RuntimeState, TaskMismatchError, VADOutput
from voicehub.voice_activity import PreTrainedVADModel


def _bounds(output: VADOutput) -> list[tuple[int, int]]:
    return [(s.start_sample, s.end_sample) for s in output.segments]


@pytest.fixture
def silero() -> Any:
    return AutoModelForVoiceActivityDetection.from_pretrained(model_type="vad_silero", device="cpu")


def test_the_default_vad_is_silero_with_offline_weights() -> None:
    spec = get_default_model_spec("vad")
    assert spec.model_type == "vad_silero"
    assert spec.default_source is not None and spec.default_source.is_available_offline()


def test_eight_threads_on_first_inference_load_silero_exactly_once(
    silero: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper_class = type(silero)
    original = wrapper_class._load_runtime
    calls: list[int] = []
    calls_lock = threading.Lock()

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        with calls_lock:
            calls.append(threading.get_ident())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(wrapper_class, "_load_runtime", counting)
    barrier = threading.Barrier(8)
    results: list[VADOutput] = []
    errors: list[BaseException] = []

    def worker() -> None:
        barrier.wait()
        try:
            results.append(silero.detect(SPEECH_WAV))
        except BaseException as err:  # pragma: no cover - reported by the assertion
            errors.append(err)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert len(calls) == 1
    assert len(results) == 8
    reference = _bounds(results[0])
    assert reference  # the LibriVox clip holds speech
    assert all(_bounds(result) == reference for result in results)
    # Speech covers most of this 7.1 s read-aloud clip and starts within its first half second.
    assert results[0].segments[0].start_s < 0.5
    assert results[0].speech_duration_s > 5.0


def test_inference_plan_blocks_training_on_silero(silero: Any) -> None:
    silero.apply_optimization_plan(("eval-mode",), mode="inference")
    with pytest.raises(LifecycleError, match="restore_optimization_plan"):
        silero.load_for_training()
    silero.restore_optimization_plan("inference")
    silero.load_for_training()
    assert silero.state is RuntimeState.TRAINING and silero.runtime.module.training
    with pytest.raises(LifecycleError, match="loaded for training"):
        silero.detect(SPEECH_WAV)
    silero.load()
    assert not silero.runtime.module.training


def test_silero_save_pretrained_and_reload_give_identical_segments(silero: Any, tmp_path: Path) -> None:
    before = silero.detect(SPEECH_WAV, return_probabilities=True)
    saved = silero.save_pretrained(tmp_path / "silero")
    reloaded = AutoModel.from_pretrained(saved, device="cpu")
    assert type(reloaded) is type(silero)
    after = reloaded.detect(SPEECH_WAV, return_probabilities=True)
    assert _bounds(after) == _bounds(before)
    assert before.probabilities is not None and after.probabilities is not None
    assert float(abs(before.probabilities - after.probabilities).max()) == 0.0


def test_pipeline_runs_the_task_default() -> None:
    vad = pipeline("vad", device="cpu")
    assert isinstance(vad.model, PreTrainedVADModel) and vad.model.model_type == "vad_silero"
    assert _bounds(vad(SPEECH_WAV)) == _bounds(vad.model.detect(SPEECH_WAV))


def test_cross_task_load_of_silero_fails_before_its_module_is_imported() -> None:
    probe = """
import json, sys
from voicehub import AutoModelForSpeechRecognition
from voicehub.core import TaskMismatchError
try:
    AutoModelForSpeechRecognition.from_pretrained(model_type="silero-vad")
    message = None
except TaskMismatchError as err:
    message = str(err)
loaded = sorted(m for m in sys.modules if m.startswith("voicehub.models.vad_silero"))
print(json.dumps({"message": message, "loaded": loaded, "torch": "torch" in sys.modules}))
"""
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert "use AutoModelForVoiceActivityDetection" in answer["message"]
    assert "voicehub.models.vad_silero.wrapper" not in answer["loaded"]
    assert answer["torch"] is False
    with pytest.raises(TaskMismatchError):
        AutoModelForSpeechRecognition.from_pretrained(model_type="vad_silero")


# ------------------------------------------------------------------ save_pretrained destinations and modes
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_save_pretrained_writes_ordinary_modes_and_reloads_the_same_segments(silero: Any, tmp_path: Path) -> None:
    reference = silero.detect(SPEECH_WAV)
    previous = os.umask(0o027)
    try:
        saved = silero.save_pretrained(tmp_path / "new" / "silero")
    finally:
        os.umask(previous)
    names = [".voicehub-saved.json", "config.json", "inference_options.json", "model.safetensors"]
    assert sorted(p.name for p in saved.iterdir()) == names
    assert {p.name: p.stat().st_mode & 0o777 for p in saved.iterdir()} == dict.fromkeys(names, 0o640)
    assert saved.stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o750
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["silero"]  # no staging directory left
    reloaded = AutoModel.from_pretrained(saved, device="cpu")
    assert _bounds(reloaded.detect(SPEECH_WAV)) == _bounds(reference) == [(5152, 110560)]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("{speech}", "exists and is not a directory"),
        ("{speech}/sub", "is not a directory, so nothing can be created under it"),
        ("/proc/voicehub-saved", "cannot create files in /proc"),
    ],
)
def test_save_pretrained_refuses_a_bad_destination_with_a_voicehub_error_and_creates_nothing(
    silero: Any, tmp_path: Path, where: str, message: str
) -> None:
    from voicehub.core.errors import OutputPathError, VoiceHubError

    speech = tmp_path / "speech.wav"
    speech.write_bytes(SPEECH_WAV.read_bytes())
    with pytest.raises(OutputPathError, match=message) as caught:
        silero.save_pretrained(where.format(speech=speech))
    assert isinstance(caught.value, VoiceHubError) and isinstance(caught.value, OSError)
    assert [p.name for p in tmp_path.iterdir()] == ["speech.wav"]
    assert speech.read_bytes() == SPEECH_WAV.read_bytes()
    assert not silero.is_loaded  # checked before the weights were loaded
