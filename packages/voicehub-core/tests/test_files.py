"""Atomic writes: complete file or old file, normal modes, clear errors before work."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from voicehub.core import OutputPathError, atomic_write, check_output_file, write_text_atomic


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def test_new_files_get_the_mode_open_would_give(tmp_path: Path) -> None:
    path = write_text_atomic(tmp_path / "out.txt", "hello\n")
    assert path.read_text() == "hello\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask()


def test_replacing_keeps_the_existing_mode_and_writes_through_symlinks(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("old")
    os.chmod(target, 0o600)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    assert write_text_atomic(link, "new") == target
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_failing_writer_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("old")

    def broken(tmp: Path) -> None:
        tmp.write_text("half")
        raise RuntimeError("encoder failed")

    with pytest.raises(RuntimeError, match="encoder failed"):
        atomic_write(target, broken)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: root / "missing" / "out.rttm", "does not exist; create it first"),
        (lambda root: root, "is a directory; pass a file path inside it"),
        (lambda root: Path("/proc/voicehub-test.rttm"), "cannot create files in /proc"),
        (lambda root: "", "the path is empty"),
    ],
)
def test_bad_destinations_are_refused_before_any_work(tmp_path: Path, make: object, message: str) -> None:
    destination = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(OutputPathError, match=message):
        check_output_file(destination, create_parents=False)
    with pytest.raises(OutputPathError, match=message):
        write_text_atomic(destination, "x", create_parents=False)
    assert isinstance(OutputPathError("x", path="y"), OSError)


def test_a_failed_write_removes_the_parents_it_created(tmp_path: Path) -> None:
    def broken(tmp: Path) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputPathError, match=r"cannot write \(No space left on device\)"):
        atomic_write(tmp_path / "new" / "deeper" / "out.bin", broken)
    assert list(tmp_path.iterdir()) == []


def test_parents_are_created_unless_refused(tmp_path: Path) -> None:
    path = write_text_atomic(tmp_path / "a" / "b" / "out.txt", "x")
    assert path.read_text() == "x"
    with pytest.raises(OutputPathError, match="does not exist; create it first"):
        write_text_atomic(tmp_path / "c" / "out.txt", "x", create_parents=False)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputPathError, match="is not a directory"):
        write_text_atomic(blocker / "out.txt", "x")


def test_write_directory_merges_replaces_and_leaves_nothing_on_failure(tmp_path: Path) -> None:
    import json

    from voicehub.core.files import SAVED_ENTRIES_FILE_NAME, write_directory

    def files(names: dict[str, str]) -> Callable[[Path], None]:
        def write(staging: Path) -> None:
            for name, text in names.items():
                (staging / name).write_text(text)

        return write

    target = tmp_path / "new" / "saved"
    assert write_directory(target, files({"a.txt": "1", "config.json": "{}"}), record=True) == target
    assert json.loads((target / SAVED_ENTRIES_FILE_NAME).read_text()) == ["a.txt", "config.json"]
    (target / "mine.txt").write_text("keep")
    write_directory(target, files({"b.txt": "2", "config.json": "{}"}), record=True)  # merge: a.txt was ours
    assert sorted(p.name for p in target.iterdir()) == [SAVED_ENTRIES_FILE_NAME, "b.txt", "config.json", "mine.txt"]

    def broken(staging: Path) -> None:
        (staging / "b.txt").write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputPathError, match=r"saved: cannot write \(No space left on device\)"):
        write_directory(target, broken, record=True)
    assert (target / "b.txt").read_text() == "2" and sorted(p.name for p in target.parent.iterdir()) == ["saved"]
    with pytest.raises(OutputPathError, match=r"holds \.voicehub-saved\.json, b\.txt, config\.json, mine\.txt"):
        write_directory(target, files({"x.h5": ""}), replace=True, replaceable=("x.h5",))
    replaced = tmp_path / "backend"
    write_directory(replaced, files({"x.h5": "old", "y.h5": "old"}), replace=True, replaceable=("x.h5", "y.h5"))
    write_directory(replaced, files({"x.h5": "new"}), replace=True, replaceable=("x.h5", "y.h5"))
    assert [p.name for p in replaced.iterdir()] == ["x.h5"] and (replaced / "x.h5").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backend", "new"]  # no staging directory left


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names synced descriptors through /proc")
def test_atomic_write_syncs_the_file_before_the_rename_and_the_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def recording_fsync(fd: int) -> None:  # records, then really syncs
        events.append(("fsync", _fd_path(fd)))
        real_fsync(fd)

    def recording_replace(source: str, destination: str) -> None:
        events.append(("replace", os.fspath(source)))
        real_replace(source, destination)

    target = tmp_path / "out.txt"
    target.write_text("old")
    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    write_text_atomic(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "new"
    [(_, temporary)] = [event for event in events if event[0] == "replace"]
    assert Path(temporary).parent == tmp_path and Path(temporary).name.startswith(".out.txt.")
    assert events == [("fsync", temporary), ("replace", temporary), ("fsync", str(tmp_path))]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names synced descriptors through /proc")
def test_write_directory_syncs_every_staged_file_before_the_move_and_the_parent_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from voicehub.core import write_directory

    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(_fd_path(fd))
        real_fsync(fd)

    def write(staging: Path) -> None:
        (staging / "model.safetensors").write_bytes(b"weights")
        (staging / "sub").mkdir()
        (staging / "sub" / "config.json").write_text("{}")

    monkeypatch.setattr(os, "fsync", recording_fsync)
    saved = write_directory(tmp_path / "model", write)
    monkeypatch.undo()
    staging = Path(synced[0]).parent.parent
    assert staging.name.startswith(".model.voicehub-staging-")
    assert synced == [
        str(staging / "sub" / "config.json"),
        str(staging / "sub"),
        str(staging / "model.safetensors"),
        str(staging),
        str(tmp_path),
    ]
    assert (saved / "sub" / "config.json").read_text() == "{}"


def test_atomic_write_refuses_a_special_file_when_asked_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    fifo = tmp_path / "summary.json"
    os.mkfifo(fifo)
    called: list[Path] = []
    with pytest.raises(OutputPathError, match=r"summary.json: is a special file \(pipe, FIFO or device\)") as caught:
        atomic_write(fifo, called.append, what="batch summary", refuse_special_files=True)
    assert "choose a regular file path" in str(caught.value) and caught.value.path == str(fifo)
    assert called == [] and stat.S_ISFIFO(fifo.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_atomic_write_never_renames_over_a_special_file_that_appears_while_writing(tmp_path: Path) -> None:
    target = tmp_path / "out.rttm"

    def write_while_a_fifo_takes_the_name(temporary: Path) -> None:
        temporary.write_text("SPEAKER x 1 0.000 1.000 <NA> <NA> speech <NA> <NA>\n")
        os.mkfifo(target)

    with pytest.raises(OutputPathError, match=r"out.rttm: is now a special file .* never replaces"):
        atomic_write(target, write_while_a_fifo_takes_the_name)
    assert stat.S_ISFIFO(target.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.rttm"]  # the temporary file is gone


def test_atomic_write_removes_its_temporary_file_on_any_exception(tmp_path: Path) -> None:
    target = tmp_path / "keep.bin"
    target.write_bytes(b"old")

    def interrupted(temporary: Path) -> None:
        temporary.write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, interrupted)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.bin"]


def test_atomic_write_refuses_a_flag_that_is_not_a_bool(tmp_path: Path) -> None:
    from voicehub.core import ArgumentTypeError

    with pytest.raises(ArgumentTypeError, match="refuse_special_files must be True or False, got 'yes'"):
        write_text_atomic(tmp_path / "x.txt", "x", refuse_special_files="yes")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


_HELD_AT_COMMIT = """
import sys, time
from pathlib import Path
from voicehub.core.files import COMMIT_AUDIT_EVENT, write_text_atomic

target, seen = Path(sys.argv[1]), Path(sys.argv[2])

def hold(event, args):
    if event == COMMIT_AUDIT_EVENT:
        temporary, destination = args
        seen.write_text(f"{temporary}\\n{destination}\\n{Path(temporary).read_text()}\\n{target.read_text()}")
        time.sleep(60)

sys.addaudithook(hold)
write_text_atomic(target, "new complete content")
"""


def test_atomic_write_commit_event_comes_with_the_complete_temporary_and_the_old_target(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    target, seen = tmp_path / "out.txt", tmp_path.parent / f"{tmp_path.name}-seen"
    target.write_text("old")
    child = subprocess.Popen([sys.executable, "-c", _HELD_AT_COMMIT, str(target), str(seen)])
    try:
        deadline = time.monotonic() + 60
        while not seen.exists() or seen.read_text().count("\n") < 3:
            assert child.poll() is None and time.monotonic() < deadline, "the write never reached its commit"
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    temporary, destination, new, old = seen.read_text().split("\n")
    assert (destination, new, old) == (str(target), "new complete content", "old")
    assert Path(temporary).parent == tmp_path and target.read_text() == "old"
    write_text_atomic(target, "next")  # the killed write's temporary file is removed by the next write
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"] and target.read_text() == "next"
