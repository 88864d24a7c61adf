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
