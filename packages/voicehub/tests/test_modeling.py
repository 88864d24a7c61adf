"""Task wrapper lifecycle on a real torch runtime and real speech.

The extension ``EnergyVAD`` (voicehub_test_extension.py) computes frame energies with a real
``torch.nn.Conv1d``; its results are compared with an independent NumPy computation.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import SPEECH_WAV
from voicehub.core import (
    CheckpointError,
    InferenceOptionError,
    LifecycleError,
    OutputValidationError,
    RuntimeBundle,
    RuntimeState,
    SampleRateError,
    VADOutput,
    load_audio,
)
from voicehub.errors import UnknownInferenceOptionError
from voicehub.modeling import OPTIONS_FILE_NAME, WEIGHTS_FILE_NAME
from voicehub.registry import CheckpointNotFoundError
from voicehub_test_extension import FRAME_SAMPLES, EnergyVAD, EnergyVADConfig, EnergyVADOptions, WrongOutputVAD

SILENCE_S = 1.0


def _padded_speech() -> np.ndarray:
    """Real speech with 1 s of digital silence before and after (16 kHz)."""
    speech = load_audio(SPEECH_WAV).samples
    silence = np.zeros(int(SILENCE_S * 16000), dtype=np.float32)
    return np.concatenate([silence, speech, silence])


def _numpy_loud_frames(samples: np.ndarray, threshold: float) -> np.ndarray:
    usable = samples[: samples.size // FRAME_SAMPLES * FRAME_SAMPLES].astype(np.float64)
    energy = (usable.reshape(-1, FRAME_SAMPLES) ** 2).mean(axis=1)
    return np.flatnonzero(energy > threshold)


def _model(kernel: Path, **kwargs: Any) -> EnergyVAD:
    return EnergyVAD.from_pretrained(kernel, device="cpu", **kwargs)


def test_construction_allocates_nothing_and_reads_no_file(tmp_path: Path) -> None:
    model = EnergyVAD.from_pretrained(tmp_path / "not-yet-written.pt", device="cpu")
    assert model.state is RuntimeState.CREATED
    assert model.runtime is None
    assert model.load_calls == 0
    with pytest.raises(CheckpointNotFoundError, match=r"not-yet-written\.pt"):
        model.load()
    assert model.state is RuntimeState.CREATED


def test_detect_matches_an_independent_numpy_energy_computation(mean_square_kernel: Path) -> None:
    samples = _padded_speech()
    model = _model(mean_square_kernel)
    output = model.detect(samples, sample_rate=16000, threshold=1e-3)
    assert isinstance(output, VADOutput)
    loud = _numpy_loud_frames(samples, 1e-3)
    assert output.segments[0].start_sample == loud[0] * FRAME_SAMPLES
    assert output.segments[-1].end_sample == (loud[-1] + 1) * FRAME_SAMPLES
    # The padding is silent, so speech starts at or after 1 s and ends before the last second.
    assert output.segments[0].start_s >= SILENCE_S
    assert output.segments[-1].end_s <= output.duration_s - SILENCE_S
    total_frames = sum(s.end_sample - s.start_sample for s in output.segments) // FRAME_SAMPLES
    assert total_frames == loud.size
    assert model.state is RuntimeState.INFERENCE
    assert model.runtime.module.training is False
    assert model.load_calls == 1


def test_inputs_path_tuple_array_and_batch_agree(mean_square_kernel: Path) -> None:
    model = _model(mean_square_kernel)
    samples = load_audio(SPEECH_WAV).samples
    from_path = model.detect(SPEECH_WAV)
    from_tuple = model.detect((samples, 16000))
    import torch

    from_tensor = model.detect(torch.from_numpy(samples.copy()), sample_rate=16000)
    batch = model.detect([SPEECH_WAV, (samples, 16000)])
    assert isinstance(batch, list) and len(batch) == 2
    reference = [(s.start_sample, s.end_sample) for s in from_path.segments]
    for output in (from_tuple, from_tensor, *batch):
        assert [(s.start_sample, s.end_sample) for s in output.segments] == reference
    assert batch[0].source == str(SPEECH_WAV)


def test_audio_at_another_rate_is_resampled_to_the_model_rate(mean_square_kernel: Path) -> None:
    model = _model(mean_square_kernel)
    samples = load_audio(SPEECH_WAV, target_sample_rate=8000).samples
    output = model.detect(samples, sample_rate=8000)
    assert output.sample_rate == 16000
    assert abs(output.duration_s - samples.size / 8000) < 1e-3
    with pytest.raises(SampleRateError, match="sample_rate=<Hz>"):
        model.detect(samples)


def test_unknown_option_is_a_type_error_raised_before_loading(mean_square_kernel: Path) -> None:
    model = _model(mean_square_kernel)
    with pytest.raises(UnknownInferenceOptionError) as info:
        model.detect(SPEECH_WAV, treshold=0.5)
    assert isinstance(info.value, TypeError)
    assert info.value.unknown == ("treshold",)
    assert info.value.known == ("min_gap_frames", "threshold")
    assert "valid options are ['min_gap_frames', 'threshold']" in str(info.value)
    with pytest.raises(InferenceOptionError, match="threshold must be > 0"):
        model.detect(SPEECH_WAV, threshold=-1.0)
    with pytest.raises(InferenceOptionError, match="expected int"):
        model.detect(SPEECH_WAV, min_gap_frames=1.5)
    assert model.load_calls == 0
    assert model.state is RuntimeState.CREATED


def test_options_change_the_result(mean_square_kernel: Path) -> None:
    model = _model(mean_square_kernel)
    strict = model.detect(SPEECH_WAV, threshold=1e-2)
    merged = model.detect(SPEECH_WAV, options=EnergyVADOptions(threshold=1e-2, min_gap_frames=8))
    assert len(merged.segments) < len(strict.segments)
    assert merged.segments[0].start_sample == strict.segments[0].start_sample
    assert merged.speech_duration_s >= strict.speech_duration_s


def test_eight_threads_trigger_exactly_one_load(mean_square_kernel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EnergyVAD, "load_delay_s", 0.2)
    model = _model(mean_square_kernel)
    barrier = threading.Barrier(8)
    results: list[Any] = []
    errors: list[BaseException] = []

    def worker() -> None:
        barrier.wait()
        try:
            results.append(model.detect(SPEECH_WAV))
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert model.load_calls == 1
    assert len(results) == 8
    first = [(s.start_sample, s.end_sample) for s in results[0].segments]
    assert all([(s.start_sample, s.end_sample) for s in r.segments] == first for r in results)


def test_failed_load_leaves_the_wrapper_retryable(mean_square_kernel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EnergyVAD, "fail_next_loads", 1)
    model = _model(mean_square_kernel)
    with pytest.raises(CheckpointError, match="simulated I/O failure"):
        model.detect(SPEECH_WAV)
    assert model.state is RuntimeState.CREATED and model.runtime is None
    output = model.detect(SPEECH_WAV)
    assert output.segments
    assert model.load_calls == 2


def test_wrong_output_type_is_refused(mean_square_kernel: Path) -> None:
    model = WrongOutputVAD.from_pretrained(mean_square_kernel, device="cpu")
    with pytest.raises(OutputValidationError, match=r"WrongOutputVAD\.detect returned dict; expected VADOutput"):
        model.detect(SPEECH_WAV)


def test_training_and_inference_transitions(mean_square_kernel: Path) -> None:
    model = _model(mean_square_kernel)
    model.load_for_training()
    assert model.state is RuntimeState.TRAINING
    assert model.runtime.module.training is True
    assert model.runtime.module.weight.requires_grad is True
    with pytest.raises(LifecycleError, match="call load\\(\\) to switch back"):
        model.detect(SPEECH_WAV)
    runtime = model.runtime.module
    model.load()
    assert model.runtime.module is runtime  # trained weights are kept
    assert model.state is RuntimeState.INFERENCE
    assert runtime.training is False and runtime.weight.requires_grad is False
    assert model.load_calls == 1
    model.unload()
    assert model.state is RuntimeState.CREATED and model.runtime is None


def test_active_inference_plan_blocks_training_until_restored(mean_square_kernel: Path) -> None:
    model = _model(mean_square_kernel)
    result = model.apply_optimization_plan(("eval-mode",), mode="inference")
    assert model.active_optimization("inference") is result
    with pytest.raises(LifecycleError, match="restore_optimization_plan"):
        model.load_for_training()
    assert model.state is RuntimeState.INFERENCE
    with pytest.raises(LifecycleError, match="cannot save"):
        model.save_pretrained(mean_square_kernel.parent / "saved")
    model.restore_optimization_plan("inference")
    model.load_for_training()
    assert model.state is RuntimeState.TRAINING


def test_active_training_plan_blocks_inference(mean_square_kernel: Path) -> None:
    model = _model(mean_square_kernel)
    model.apply_optimization_plan(("threads",), mode="training")
    assert model.state is RuntimeState.TRAINING
    with pytest.raises(LifecycleError, match="'training' mode"):
        model.load()
    model.restore_optimization_plan("training")
    model.load()
    assert model.state is RuntimeState.INFERENCE


def test_save_pretrained_and_reload_round_trip(mean_square_kernel: Path, tmp_path: Path) -> None:
    model = EnergyVAD.from_pretrained(
        mean_square_kernel, config=EnergyVADConfig(frame_samples=FRAME_SAMPLES), device="cpu"
    )
    model.default_options = model.resolve_options(threshold=5e-3, min_gap_frames=2)
    before = model.detect(SPEECH_WAV)
    saved = model.save_pretrained(tmp_path / "saved")
    assert sorted(p.name for p in saved.iterdir()) == sorted(
        [".voicehub-saved.json", "config.json", OPTIONS_FILE_NAME, WEIGHTS_FILE_NAME]
    )
    reloaded = EnergyVAD.from_pretrained(saved, device="cpu")
    assert reloaded.default_options == EnergyVADOptions(threshold=5e-3, min_gap_frames=2)
    after = reloaded.detect(SPEECH_WAV)
    assert [(s.start_sample, s.end_sample) for s in after.segments] == [
        (s.start_sample, s.end_sample) for s in before.segments
    ]
    import torch

    assert torch.equal(reloaded.runtime.module.weight, model.runtime.module.weight)


def test_save_pretrained_failure_writes_nothing(tmp_path: Path, mean_square_kernel: Path) -> None:
    model = _model(mean_square_kernel)
    model.load()
    model._runtime = RuntimeBundle(module=object())  # a module without state_dict(): the weights step fails
    target = tmp_path / "new" / "out"
    with pytest.raises(CheckpointError, match="override _save_weights"):
        model.save_pretrained(target)
    assert list(tmp_path.iterdir()) == [tmp_path / "mean_square.pt"]  # no target, no created parent, no staging
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="override _save_weights"):
        model.save_pretrained(existing)
    assert [p.name for p in existing.iterdir()] == ["keep.txt"]


def test_wrong_config_class_and_bad_device_are_refused_at_construction(mean_square_kernel: Path) -> None:
    from voicehub.core import ConfigError, DeviceError

    with pytest.raises(ConfigError, match="needs a EnergyVADConfig"):
        EnergyVAD(EnergyVADOptions())  # type: ignore[arg-type]
    with pytest.raises(DeviceError, match="unknown device 'gpu0'"):
        EnergyVAD.from_pretrained(mean_square_kernel, device="gpu0")


@pytest.mark.usefixtures("isolated_catalog")
def test_architecture_facts_gate_dtype_before_loading(mean_square_kernel: Path) -> None:
    from voicehub import AutoModelForVoiceActivityDetection
    from voicehub.models import load_builtin_architectures
    from voicehub.registry import ArchitectureSpec, UnsupportedByArchitectureError

    architectures = load_builtin_architectures()
    spec = ArchitectureSpec(
        architecture_id="test-energy",
        tasks=("vad",),
        devices=("cpu",),
        dtypes=("float32",),
    )
    architectures.register(spec)
    try:
        AutoModelForVoiceActivityDetection.register(EnergyVADConfig, EnergyVAD, architecture="test-energy")
        half = EnergyVAD.from_pretrained(mean_square_kernel, device="cpu", dtype="bfloat16")
        assert half.architecture_spec() is spec
        with pytest.raises(UnsupportedByArchitectureError, match="dtype 'bfloat16'; verified: float32"):
            half.detect(SPEECH_WAV)
        assert half.load_calls == 0 and half.state is RuntimeState.CREATED
        auto = EnergyVAD.from_pretrained(mean_square_kernel)  # "auto" settles on a verified device
        auto.load()
        assert auto.device == "cpu"
        result = auto.apply_optimization_plan("eval-mode")  # the optimization host reads the same facts
        assert result.context.architecture == "test-energy" and result.context.architecture_dtypes == ("float32",)
        result.restore()
    finally:
        architectures.unregister("test-energy")
