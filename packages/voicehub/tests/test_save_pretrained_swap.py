"""``save_pretrained`` over an existing directory replaces it as a whole; a save killed midway leaves
the old directory loadable, its staging leftovers are ignored by the loader and removed by the next save."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from voicehub import AutoModel
from voicehub.core import load_audio
from voicehub.models.vad_silero.wrapper import SileroVADModel

ROOT = Path(__file__).resolve().parents[3]
SPEECH = load_audio(ROOT / "tests" / "data" / "silero" / "test.wav").samples[: 16000 * 3]

_KILLED_SAVE = """
import os, signal, sys
from voicehub.models.vad_silero.wrapper import SileroVADModel

model = SileroVADModel.from_pretrained(device="cpu")
original = model._save_weights

def save_then_die(runtime, directory):
    original(runtime, directory)  # the new weights are staged, then the process is killed
    os.kill(os.getpid(), signal.SIGKILL)

model._save_weights = save_then_die
model.save_pretrained(sys.argv[1])
"""


@pytest.mark.slow
def test_a_killed_save_pretrained_keeps_the_old_directory_and_the_next_save_cleans_up(tmp_path: Path) -> None:
    model = SileroVADModel.from_pretrained(device="cpu")
    saved = model.save_pretrained(tmp_path / "vad")
    (saved / "notes.txt").write_text("kept")
    before = {item.name: item.read_bytes() for item in saved.iterdir()}
    killed = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(saved)], check=False)
    assert killed.returncode == -signal.SIGKILL
    leftovers = sorted(item.name for item in tmp_path.iterdir() if item.name != "vad")
    assert leftovers and all(name.startswith(".vad.voicehub-") for name in leftovers)
    assert {item.name: item.read_bytes() for item in saved.iterdir()} == before
    reference = model.detect(SPEECH, sample_rate=16000, return_probabilities=True).probabilities
    reloaded = AutoModel.from_pretrained(str(saved), device="cpu")
    assert np.array_equal(
        reloaded.detect(SPEECH, sample_rate=16000, return_probabilities=True).probabilities, reference
    )
    model.save_pretrained(saved)
    assert sorted(item.name for item in tmp_path.iterdir()) == ["vad"]
    assert (saved / "notes.txt").read_text() == "kept"
