"""Atomic file output: a destination holds either its old content or the complete new one.

Every VoiceHub writer goes through :func:`atomic_write`: the content is written to a temporary
file beside the destination, flushed, given the mode a plain ``open()`` would give
(``0o666 & ~umask``, or the existing file's mode when it is replaced), and renamed over the
destination with :func:`os.replace` (atomic on POSIX and Windows). A symbolic link is written
through to its target. Destinations are checked before any work is done, and failures are
reported as :class:`~voicehub.core.errors.OutputPathError` naming the destination.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from voicehub.core.errors import OutputPathError


def _default_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def check_output_path(path: str | os.PathLike[str], *, create_parents: bool = False) -> Path:
    """Check that ``path`` can be written as a file, before any expensive work.

    Args:
        path: the destination file; a symbolic link is resolved to its target.
        create_parents: create missing parent directories instead of refusing them.

    Returns:
        The resolved destination path.

    Raises:
        OutputPathError: if the path is empty, is a directory, its parent is missing (and
            ``create_parents`` is false), is not a directory, or is not writable.
    """
    if not os.fspath(path):
        raise OutputPathError("output path is empty; pass a file name", path="")
    target = Path(path).expanduser()
    if target.is_symlink() or target.exists():
        target = target.resolve()
    if target.is_dir():
        raise OutputPathError(f"{target}: is a directory; pass a file path inside it", path=target)
    parent = target.parent
    if not parent.exists():
        if not create_parents:
            raise OutputPathError(f"{target}: the directory {parent} does not exist; create it first", path=target)
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OutputPathError(
                f"{target}: cannot create directory {parent}: {err.strerror or err}", path=target
            ) from err
    if not parent.is_dir():
        raise OutputPathError(f"{target}: {parent} is not a directory", path=target)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"{target}: the directory {parent} is not writable", path=target)
    return target


def atomic_write(
    path: str | os.PathLike[str],
    write: Callable[[Path], object],
    *,
    create_parents: bool = True,
) -> Path:
    """Write a file atomically.

    Args:
        path: the destination file.
        write: called with a temporary path in the destination's directory; it must create
            that file completely (e.g. ``lambda tmp: tmp.write_bytes(data)``).
        create_parents: create missing parent directories (the default, as ``save_pretrained``
            does); pass ``False`` to refuse a missing directory.

    Returns:
        The destination path (symbolic links resolved).

    Raises:
        OutputPathError: if the destination cannot be written; the old file, if any, is kept
            and no temporary file is left behind. Errors raised by ``write`` propagate
            unchanged, with the same clean-up.
    """
    target = check_output_path(path, create_parents=create_parents)
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else _default_file_mode()
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    except OSError as err:
        raise OutputPathError(f"{target}: cannot write in {target.parent}: {err.strerror or err}", path=target) from err
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OutputPathError):
            raise
        raise OutputPathError(f"{target}: cannot write: {err.strerror or err}", path=target) from err
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str, *, create_parents: bool = True) -> Path:
    """Write UTF-8 text atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), create_parents=create_parents)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes, *, create_parents: bool = True) -> Path:
    """Write bytes atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_bytes(data), create_parents=create_parents)


__all__ = ["atomic_write", "check_output_path", "write_bytes_atomic", "write_text_atomic"]
