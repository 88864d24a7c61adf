"""Atomic checkpoints: a save killed at any point is never picked up; the previous one still loads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import BinaryIO

import pytest
import torch

from voicehub.training import CheckpointStore, TrainingCheckpointError
from voicehub.training.checkpoints import MANIFEST_NAME, STAGING_PREFIX


def _tensor_writer(value: torch.Tensor) -> object:
    def write(file: BinaryIO) -> None:
        torch.save({"weight": value}, file)

    return write


def test_save_writes_a_verified_step_directory(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "checkpoints")
    checkpoint = store.save(3, {"model.pt": _tensor_writer(torch.arange(4.0))})  # type: ignore[dict-item]
    assert checkpoint.path.name == "step-00000003" and checkpoint.step == 3
    assert sorted(p.name for p in checkpoint.path.iterdir()) == ["manifest.json", "model.pt"]
    assert torch.equal(torch.load(checkpoint.file("model.pt"), weights_only=True)["weight"], torch.arange(4.0))
    assert store.latest() == checkpoint
    assert not [p for p in store.directory.iterdir() if p.name.startswith(STAGING_PREFIX)]


def test_altered_or_unfinished_checkpoints_are_skipped(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    first = store.save(1, {"model.pt": _tensor_writer(torch.zeros(3))})  # type: ignore[dict-item]
    second = store.save(2, {"model.pt": _tensor_writer(torch.ones(3))})  # type: ignore[dict-item]
    with (second.path / "model.pt").open("r+b") as file:  # flip one byte of the newest
        file.seek(-1, os.SEEK_END)
        last = file.read(1)
        file.seek(-1, os.SEEK_END)
        file.write(bytes([last[0] ^ 0xFF]))
    with pytest.raises(TrainingCheckpointError, match="does not match its recorded SHA-256"):
        store.verify(second.path)
    assert store.latest() == first
    (tmp_path / "step-00000009").mkdir()  # a directory without a manifest
    (tmp_path / "step-00000009" / "model.pt").write_bytes(b"x")
    with pytest.raises(
        TrainingCheckpointError, match=r"no readable manifest.json \(.*No such file.*\); the save did not finish"
    ):
        store.verify(tmp_path / "step-00000009")
    assert store.latest() == first
    store.prune(keep=1)
    assert [p.name for p in store.candidates()] == ["step-00000001"]


def test_reserved_file_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TrainingCheckpointError, match="reserved"):
        CheckpointStore(tmp_path).save(1, {MANIFEST_NAME: _tensor_writer(torch.zeros(1))})  # type: ignore[dict-item]


CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    import torch
    from voicehub.training import CheckpointStore

    directory, ready = Path(sys.argv[1]), Path(sys.argv[2])
    store = CheckpointStore(directory)
    real_fsync = os.fsync

    def fsync_then_hang(fd):
        real_fsync(fd)
        ready.write_text("first file synced")
        time.sleep(600)

    os.fsync = fsync_then_hang  # the save of step 2 stops after its first file; the parent kills -9 here
    big = torch.arange(2_000_000, dtype=torch.float32)
    store.save(2, {"model.pt": lambda f: torch.save({"weight": big}, f),
                   "optimizer.pt": lambda f: torch.save({"state": big}, f)})
    """
)


def test_kill_9_during_save_leaves_the_previous_checkpoint_loadable(tmp_path: Path) -> None:
    directory = tmp_path / "checkpoints"
    store = CheckpointStore(directory)
    first = store.save(1, {"model.pt": _tensor_writer(torch.full((5,), 7.0))})  # type: ignore[dict-item]
    ready = tmp_path / "ready"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(directory), str(ready)])
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert child.poll() is None, "the saving process ended before it was killed"
            assert time.monotonic() < deadline, "the saving process never reached its first fsync"
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    staging = [p for p in directory.iterdir() if p.name.startswith(STAGING_PREFIX)]
    assert len(staging) == 1 and (staging[0] / "model.pt").is_file()  # the killed save's leftovers
    assert not (directory / "step-00000002").exists()
    latest = CheckpointStore(directory).latest()
    assert latest == first
    assert torch.equal(torch.load(latest.file("model.pt"), weights_only=True)["weight"], torch.full((5,), 7.0))
    store.save(3, {"model.pt": _tensor_writer(torch.zeros(1))})  # type: ignore[dict-item]
    assert not [p for p in directory.iterdir() if p.name.startswith(STAGING_PREFIX)]  # cleaned by the next save
