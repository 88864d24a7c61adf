"""Applying and restoring an optimization plan while other threads run ``detect()`` on a real
``vad_silero``: a change waits for running calls and new calls wait for it; no thread ever sees a
half-converted module (a raw torch dtype error), and every result matches the float32 one or the
bfloat16 one."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from voicehub.core import load_audio
from voicehub.models.vad_silero.wrapper import SileroVADModel

ROOT = Path(__file__).resolve().parents[3]
SPEECH = load_audio(ROOT / "tests" / "data" / "silero" / "test.wav").samples[: 16000 * 2]
BFLOAT16_TOLERANCE = 0.08  # max probability difference of the dtype pass (test_vad_optimization.py)


def test_plan_changes_wait_for_running_detect_calls_and_calls_wait_for_changes() -> None:
    model = SileroVADModel.from_pretrained(device="cpu")
    reference = model.detect(SPEECH, sample_rate=16000, return_probabilities=True).probabilities
    assert reference is not None and reference.max() > 0.9  # speech is found
    errors: list[BaseException] = []
    differences: list[float] = []
    stop = threading.Event()

    def worker() -> None:
        while not stop.is_set():
            try:
                output = model.detect(SPEECH, sample_rate=16000, return_probabilities=True)
            except BaseException as err:  # every failure is the finding
                errors.append(err)
                return
            assert output.probabilities is not None
            differences.append(float(np.abs(output.probabilities - reference).max()))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(4):
            model.apply_optimization_plan(("dtype",), mode="inference")
            model.restore_optimization_plan("inference")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert not errors, [f"{type(e).__name__}: {e}" for e in errors[:3]]
    assert len(differences) >= 3
    assert max(differences) <= BFLOAT16_TOLERANCE
    assert model.active_optimization("inference") is None
    final = model.detect(SPEECH, sample_rate=16000, return_probabilities=True).probabilities
    assert final is not None and np.array_equal(final, reference)
