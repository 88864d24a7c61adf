"""Writing files safely: check destinations before work, write atomically, ordinary modes.

Every VoiceHub writer (configs, audio, RTTM, checkpoints, ``save_pretrained``) goes through
this module:

* A destination is checked *before* any expensive work (decoding audio, loading weights): its
  nearest existing ancestor must be a directory in which a file can actually be created. A
  probe file is created and removed, which also catches pseudo file systems such as ``/proc``
  and read-only mounts whatever the process's privileges (``os.access`` does not).
* Content is written to a temporary file beside the destination and renamed over it with
  :func:`os.replace` (atomic on POSIX and Windows): the destination holds either its old
  content or the complete new one. A symbolic link is written through to its target.
* Missing parent directories are created only at write time and removed again if the write
  fails, so a failure leaves nothing new behind.
* Files get the mode a plain ``open()`` would give (``0o666 & ~umask``, or the mode of the file
  they replace) and directories ``0o777 & ~umask``, not the ``0o600`` of :mod:`tempfile`.

Failures are :class:`~voicehub.core.errors.OutputPathError` naming the destination.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from voicehub.core.errors import OutputPathError


def _umask() -> int:
    try:  # Linux >= 4.7: read it without changing it (os.umask is process-wide, not thread-safe)
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def default_file_mode() -> int:
    """``0o666 & ~umask``: the mode ``open(path, "w")`` gives a new file."""
    return 0o666 & ~_umask()


def default_directory_mode() -> int:
    """``0o777 & ~umask``: the mode ``mkdir`` gives a new directory."""
    return 0o777 & ~_umask()


def _nearest_existing(path: Path) -> Path:
    current = path
    while not current.exists() and not current.is_symlink():
        if current.parent == current:
            break
        current = current.parent
    return current


def _probe_writable(directory: Path, destination: Path, what: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".voicehub-probe-", dir=directory)
    except OSError as err:
        raise OutputPathError(
            f"{what} {destination}: cannot create files in {directory} ({err.strerror or err}); "
            f"choose a writable directory",
            path=destination,
        ) from err
    os.close(fd)
    Path(probe).unlink(missing_ok=True)


def _check_ancestors(target: Path, what: str, *, create_parents: bool) -> None:
    existing = _nearest_existing(target.parent)
    if not existing.is_dir():
        raise OutputPathError(
            f"{what} {target}: {existing} is not a directory, so nothing can be created under it; choose another path",
            path=target,
        )
    if existing != target.parent and not create_parents:
        raise OutputPathError(
            f"{what} {target}: the directory {target.parent} does not exist; create it first", path=target
        )
    _probe_writable(existing, target, what)


def check_output_file(path: str | os.PathLike[str], *, what: str = "output file", create_parents: bool = True) -> Path:
    """Check that ``path`` can be written as a file, before any expensive work.

    Args:
        path: the destination file; a symbolic link is resolved to its target.
        what: how messages name it (``"--rttm file"``).
        create_parents: allow missing parent directories (created at write time).

    Returns:
        The destination, ``~`` expanded and symbolic links resolved.

    Raises:
        OutputPathError: if the path is empty or a directory, an ancestor is a file, a parent
            is missing (and ``create_parents`` is false), or the nearest existing directory
            does not accept new files.
    """
    if not os.fspath(path):
        raise OutputPathError(f"{what}: the path is empty; pass a file name", path="")
    target = Path(path).expanduser()
    if target.is_symlink() or target.exists():
        target = target.resolve()
    if target.is_dir():
        raise OutputPathError(f"{what} {target} is a directory; pass a file path inside it", path=target)
    _check_ancestors(target, what, create_parents=create_parents)
    return target


def check_output_directory(path: str | os.PathLike[str], *, what: str = "output directory") -> Path:
    """Check that ``path`` is, or can be created as, a directory to write into.

    Returns:
        ``path`` with ``~`` expanded.

    Raises:
        OutputPathError: if ``path`` is a file, an ancestor is a file, or the directory (or its
            nearest existing ancestor) does not accept new files.
    """
    if not os.fspath(path):
        raise OutputPathError(f"{what}: the path is empty; pass a directory name", path="")
    target = Path(path).expanduser()
    if (target.exists() or target.is_symlink()) and not target.is_dir():
        raise OutputPathError(
            f"{what} {target} exists and is not a directory; pass a new or existing directory path", path=target
        )
    if target.is_dir():
        _probe_writable(target, target, what)
        return target
    _check_ancestors(target, what, create_parents=True)
    return target


@contextlib.contextmanager
def created_parents(directory: Path, *, what: str, destination: Path) -> Iterator[list[Path]]:
    """Create ``directory`` and its missing ancestors; remove those created if the block fails.

    Yields:
        The directories that were created, outermost first.

    Raises:
        OutputPathError: if a directory cannot be created.
    """
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    missing.reverse()
    made: list[Path] = []
    try:
        for item in missing:
            try:
                item.mkdir()
            except FileExistsError:
                continue
            except OSError as err:
                raise OutputPathError(
                    f"{what} {destination}: cannot create directory {item} ({err.strerror or err})", path=destination
                ) from err
            made.append(item)
        yield made
    except BaseException:
        for item in reversed(made):
            with contextlib.suppress(OSError):
                item.rmdir()
        raise


def atomic_write(
    path: str | os.PathLike[str],
    write: Callable[[Path], object],
    *,
    what: str = "output file",
    create_parents: bool = True,
) -> Path:
    """Write a file through a temporary file beside it and an atomic rename.

    Args:
        path: the destination file.
        write: called with a temporary path in the destination's directory; it must write the
            complete file there (e.g. ``lambda tmp: tmp.write_bytes(data)``).
        what: how messages name the destination.
        create_parents: create missing parent directories (removed again on failure); pass
            ``False`` to refuse a missing directory.

    Returns:
        The destination path (symbolic links resolved).

    Raises:
        OutputPathError: for a bad destination or an ``OSError`` while writing; the old file,
            if any, is kept and no temporary file is left behind. Other errors raised by
            ``write`` propagate unchanged, with the same clean-up.
    """
    target = check_output_file(path, what=what, create_parents=create_parents)
    with created_parents(target.parent, what=what, destination=target):
        try:
            mode = target.stat().st_mode & 0o7777 if target.is_file() else default_file_mode()
            fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
            os.close(fd)
        except OSError as err:
            raise OutputPathError(f"{what} {target}: cannot write ({err.strerror or err})", path=target) from err
        temporary = Path(name)
        try:
            write(temporary)
            os.chmod(temporary, mode)
            os.replace(temporary, target)
        except OutputPathError:
            raise
        except OSError as err:
            raise OutputPathError(f"{what} {target}: cannot write ({err.strerror or err})", path=target) from err
        finally:
            temporary.unlink(missing_ok=True)
    return target


def write_text_atomic(
    path: str | os.PathLike[str], text: str, *, what: str = "output file", create_parents: bool = True
) -> Path:
    """Write UTF-8 text atomically (see :func:`atomic_write`)."""
    return atomic_write(
        path, lambda tmp: tmp.write_text(text, encoding="utf-8"), what=what, create_parents=create_parents
    )


def write_bytes_atomic(
    path: str | os.PathLike[str], data: bytes, *, what: str = "output file", create_parents: bool = True
) -> Path:
    """Write bytes atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_bytes(data), what=what, create_parents=create_parents)


def normalize_modes(root: Path) -> None:
    """Give ``root`` and everything under it the modes of ordinary new files and directories."""
    file_mode, directory_mode = default_file_mode(), default_directory_mode()
    os.chmod(root, directory_mode)
    for current, directories, files in os.walk(root):
        for name in directories:
            os.chmod(Path(current) / name, directory_mode)
        for name in files:
            item = Path(current) / name
            if not item.is_symlink():
                os.chmod(item, file_mode)


__all__ = [
    "atomic_write",
    "check_output_directory",
    "check_output_file",
    "created_parents",
    "default_directory_mode",
    "default_file_mode",
    "normalize_modes",
    "write_bytes_atomic",
    "write_text_atomic",
]
