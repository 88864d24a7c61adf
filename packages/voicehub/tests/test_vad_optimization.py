"""Optimization passes and bfloat16 on ``vad_silero``, as the architecture declares them: measured on real speech."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub.architectures.silero.registration import ARCHITECTURE
from voicehub.core import VADOutput, load_audio
from voicehub.models.vad_silero.wrapper import SileroVADModel

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")

ROOT = Path(__file__).resolve().parents[3]
SPEECH = load_audio(ROOT / "tests" / "data" / "silero" / "test.wav").samples[: 16000 * 30]
CHUNK_S = 0.032


@pytest.fixture(scope="module")
def reference() -> VADOutput:
    output: VADOutput = SileroVADModel.from_pretrained().detect(SPEECH, sample_rate=16000, return_probabilities=True)
    assert len(output.segments) >= 8
    return output


def _compare(output: VADOutput, reference: VADOutput) -> tuple[float, float]:
    """(max probability difference, max boundary shift in seconds); segment counts must agree."""
    assert output.probabilities is not None and reference.probabilities is not None
    assert len(output.segments) == len(reference.segments)
    shift = max(
        max(abs(a.start_s - b.start_s), abs(a.end_s - b.end_s))
        for a, b in zip(output.segments, reference.segments, strict=True)
    )
    return float(np.abs(output.probabilities - reference.probabilities).max()), shift


@pytest.mark.parametrize(
    ("plan", "max_difference", "max_shift_s"),
    [
        (("eval-mode", "inference-mode", "threads"), 0.0, 0.0),
        (("dtype",), 0.08, CHUNK_S),  # bfloat16
        (("int8-dynamic",), 0.1, CHUNK_S),  # the LSTM in int8
    ],
)
def test_vad_silero_declared_passes_keep_segments(
    reference: VADOutput, plan: tuple[str, ...], max_difference: float, max_shift_s: float
) -> None:
    assert set(plan) <= set(ARCHITECTURE.optimization_passes)
    model = SileroVADModel.from_pretrained()
    model.apply_optimization_plan(plan, mode="inference")
    try:
        output = model.detect(SPEECH, sample_rate=16000, return_probabilities=True)
        session = model.stream(16000)
        events = session.push(SPEECH[: 16000 * 5]) + session.flush()
    finally:
        model.restore_optimization_plan("inference")
    difference, shift = _compare(output, reference)
    assert difference <= max_difference and shift <= max_shift_s + 1e-9, (difference, shift)
    assert [e.kind for e in events][:2] == ["start", "end"]
    restored = model.detect(SPEECH, sample_rate=16000, return_probabilities=True)
    assert _compare(restored, reference) == (0.0, 0.0)


def test_vad_silero_runs_in_bfloat16_when_asked(reference: VADOutput) -> None:
    assert "bfloat16" in ARCHITECTURE.dtypes
    model = SileroVADModel.from_pretrained(dtype="bfloat16")
    output = model.detect(SPEECH, sample_rate=16000, return_probabilities=True)
    assert next(model.runtime.module.parameters()).dtype == torch.bfloat16
    difference, shift = _compare(output, reference)
    assert difference < 0.08 and shift <= CHUNK_S + 1e-9


def test_vad_silero_threads_pass_wraps_the_streaming_path_and_keeps_its_events() -> None:
    model = SileroVADModel.from_pretrained(device="cpu")

    def stream_events() -> list[tuple[str, int]]:
        session = model.stream(16000)
        events = []
        for start in range(0, SPEECH.shape[0], 4000):
            events += session.push(SPEECH[start : start + 4000])
        return [(e.kind, e.sample) for e in [*events, *session.flush()]]

    reference = stream_events()
    assert len(reference) >= 16
    runtime = model.load().runtime.module
    assert runtime.optimization_execution_methods() == ("forward", "step", "step_chunks")
    result = model.apply_optimization_plan("threads", mode="inference")
    try:
        entry = result.manifest()["passes"][0]["metadata"]
        assert entry["outcome"] == "configured"
        assert entry["wrapped_methods"] == ["forward", "step", "step_chunks"]
        calls: list[int] = []
        wrapped = runtime.step_chunks
        assert "step_chunks" in vars(runtime)  # an instance attribute over the method

        def counting(*args: object, **kwargs: object) -> object:
            calls.append(torch.get_num_threads())
            return wrapped(*args, **kwargs)

        runtime.step_chunks = counting
        try:
            assert stream_events() == reference
        finally:
            runtime.step_chunks = wrapped
        assert len(calls) > 100
    finally:
        model.restore_optimization_plan("inference")
    assert "step_chunks" not in vars(runtime) and "step" not in vars(runtime)
    assert stream_events() == reference
