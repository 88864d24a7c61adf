"""SIGTERM during a write: the command's cleanup runs (no staging file left, the old file kept)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


@pytest.mark.slow
def test_sigterm_mid_write_leaves_no_staging_file_and_keeps_the_old_output(tmp_path: Path) -> None:
    target = tmp_path / "keep.wav"
    target.write_bytes(b"previous content")
    text = " ".join(f"This is sentence number {n} of a long text that takes a while." for n in range(60))
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_WAIT_POLICY="PASSIVE")
    command = [sys.executable, "-m", "voicehub", "synthesize", text, "-o", str(target), "--threads", "1"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not list(tmp_path.glob(".keep.wav.*.partial")):
            assert process.poll() is None, f"finished before it was stopped: {process.stderr.read()!r}"  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "no staging file appeared"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
    assert target.read_bytes() == b"previous content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.wav"]
