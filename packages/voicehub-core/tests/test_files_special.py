"""Writers write into special files (devices, FIFOs, pipes) and replace only regular files; a saved
directory is replaced as a whole; leftovers of a killed write are cleaned by the next one."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from voicehub.core import OutputPathError, write_directory, write_text_atomic
from voicehub.core import files as files_module

needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mknod needs root")


@needs_root
def test_a_character_device_is_written_into_not_replaced(tmp_path: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the same device as /dev/null
    assert write_text_atomic(null, "SPEAKER x 1 0.000 1.000 <NA> <NA> speech <NA> <NA>\n") == null
    assert stat.S_ISCHR(null.stat().st_mode)
    assert sorted(item.name for item in tmp_path.iterdir()) == ["null"]


@needs_root
def test_a_full_device_gives_a_named_error_and_stays_a_device(tmp_path: Path) -> None:
    full = tmp_path / "full"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # the same device as /dev/full
    with pytest.raises(OutputPathError, match="special file"):
        write_text_atomic(full, "x" * 100)
    assert stat.S_ISCHR(full.stat().st_mode)


def _read_all(path: str, into: list[bytes]) -> None:
    with open(path, "rb") as handle:
        into.append(handle.read())


def test_a_fifo_receives_the_content_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "out.rttm"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=_read_all, args=(str(fifo), received))
    reader.start()
    write_text_atomic(fifo, "hello fifo\n")
    reader.join(timeout=10)
    assert received == [b"hello fifo\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_pipe_named_by_its_descriptor_is_written(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()  # what `--rttm >(cat)` or `--rttm /dev/stdout` gives a program
    try:
        write_text_atomic(f"/dev/fd/{write_end}", "through the pipe\n")
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as handle:
        assert handle.read() == b"through the pipe\n"


def test_leftovers_of_a_killed_write_are_removed_unless_in_use(tmp_path: Path) -> None:
    (tmp_path / ".out.txt.k3j2.partial").write_text("half, from an older writer")
    (tmp_path / ".out.txt.999999999.k3j2.partial").write_text("its writer is gone")
    in_use = tmp_path / ".out.txt.1.zz9.partial"  # process 1 always runs: a write in progress
    in_use.write_text("another writer")
    (tmp_path / ".other.txt.aa.partial").write_text("not ours")
    write_text_atomic(tmp_path / "out.txt", "new")
    assert sorted(item.name for item in tmp_path.iterdir()) == [".other.txt.aa.partial", in_use.name, "out.txt"]


def test_a_staging_directory_in_use_is_kept(tmp_path: Path) -> None:
    import fcntl

    staging = tmp_path / ".model.voicehub-staging-abc"
    staging.mkdir()
    handle = os.open(staging, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _save(tmp_path / "model", 1)
        assert staging.is_dir()
    finally:
        os.close(handle)
    _save(tmp_path / "model", 2)
    assert not staging.exists()


_KILLED_SAVE = """
import os, signal, sys
from pathlib import Path
from voicehub.core import write_directory

def write(staging: Path) -> None:
    (staging / "model.safetensors").write_bytes(b"new weights" * 1000)
    (staging / "config.json").write_text('{"version": 2}')
    os.kill(os.getpid(), signal.SIGKILL)

write_directory(sys.argv[1], write, record=True)
"""


def _save(directory: Path, version: int) -> None:
    def write(staging: Path) -> None:
        (staging / "model.safetensors").write_bytes(f"weights {version}".encode())
        (staging / "config.json").write_text(f'{{"version": {version}}}')

    write_directory(directory, write, record=True)


def test_a_killed_save_leaves_the_old_directory_and_the_next_save_cleans_up(tmp_path: Path) -> None:
    saved = tmp_path / "model"
    _save(saved, 1)
    (saved / "notes.txt").write_text("user file")
    result = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(saved)], check=False)
    assert result.returncode == -signal.SIGKILL
    leftovers = [item.name for item in tmp_path.iterdir() if item.name != "model"]
    assert leftovers and all(name.startswith(".model.voicehub-staging-") for name in leftovers)
    assert (saved / "config.json").read_text() == '{"version": 1}'
    assert (saved / "model.safetensors").read_bytes() == b"weights 1"
    _save(saved, 2)
    assert sorted(item.name for item in tmp_path.iterdir()) == ["model"]
    assert (saved / "config.json").read_text() == '{"version": 2}'
    assert (saved / "model.safetensors").read_bytes() == b"weights 2"
    assert (saved / "notes.txt").read_text() == "user file"  # a merge keeps the user's own entries


@pytest.mark.parametrize("atomic_exchange", [True, False], ids=["renameat2", "two-renames"])
def test_a_save_interrupted_between_moves_never_mixes_old_and_new_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, atomic_exchange: bool
) -> None:
    saved = tmp_path / "model"
    _save(saved, 1)
    moves: list[str] = []

    def crash_on_second_move(real: object) -> object:
        def move(source: str, destination: str) -> None:
            moves.append(os.fspath(destination))
            if len(moves) == 2:
                raise OSError(5, "simulated crash between two moves")
            real(source, destination)  # type: ignore[operator]

        return move

    monkeypatch.setattr(files_module.os, "rename", crash_on_second_move(os.rename))
    monkeypatch.setattr(files_module.os, "replace", crash_on_second_move(os.replace))
    if not atomic_exchange:
        monkeypatch.setattr(files_module, "_exchange", lambda first, second: False)
    with contextlib.suppress(OutputPathError):
        _save(saved, 2)
    monkeypatch.undo()
    config, weights = (saved / "config.json").read_text(), (saved / "model.safetensors").read_bytes()
    assert (config, weights) in {('{"version": 1}', b"weights 1"), ('{"version": 2}', b"weights 2")}


def test_a_special_file_as_a_directory_destination_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match="not a directory"):
        write_directory(fifo, lambda staging: None)
