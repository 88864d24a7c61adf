"""``voicehub synthesize`` and the Python API run the same code (issue #29): for the same text, seed
and thread count, the command's audio is bit for bit the API's. The command is run as users run it,
a fresh process of the installed ``voicehub`` script, in this process's environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import voicehub
from voicehub.cli.synthesize import pcm16
from voicehub.models.tts_vits.wrapper import VITSTTSModel

pytestmark = pytest.mark.usefixtures("two_intra_op_threads")


@pytest.fixture(scope="module")
def tts() -> VITSTTSModel:
    model = voicehub.AutoModelForTextToSpeech.from_pretrained(device="cpu", lazy_load=False)
    assert isinstance(model, VITSTTSModel)
    return model


def _command_pcm(text: str, seed: int, threads: int) -> bytes:
    """The command's 16-bit PCM (``--output-raw``), sentence by sentence as ``stream()`` yields them."""
    executable = Path(sys.executable).with_name("voicehub")
    result = subprocess.run(
        [str(executable), "synthesize", text, "--output-raw", "--seed", str(seed), "--threads", str(threads)],
        capture_output=True,
        timeout=300,
        env=os.environ | {"HF_HUB_OFFLINE": "1"},
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


@pytest.mark.parametrize(
    ("text", "seed"),
    [("The quick brown fox jumps over the lazy dog.", 3), ("First sentence here. A second, longer one follows it!", 4)],
    ids=["one sentence", "two sentences"],
)
def test_the_command_gives_the_apis_audio_bit_for_bit(tts: VITSTTSModel, text: str, seed: int) -> None:
    """Two threads, as the test process runs: the PCM the command writes equals the API's audio
    through the same conversion, byte for byte (a float difference of one part in 1e5 would flip
    some of the ~50,000 samples' 16-bit values)."""
    streamed = np.concatenate([chunk.audio for chunk in tts.stream(text, seed=seed)])
    command = _command_pcm(text, seed, threads=2)
    assert len(command) == 2 * streamed.shape[0] > 2 * 22050
    assert command == pcm16(streamed)
    if "." not in text[:-1]:  # one sentence: generate() runs the same single call as the stream's first chunk
        assert command == pcm16(tts.generate(text, seed=seed).audio)
