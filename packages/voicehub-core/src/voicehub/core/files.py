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
* A directory of several files (a saved model, a checkpoint, a scoring back-end) is written by
  :func:`write_directory` as one transaction: into a staging directory beside it, then moved into
  place, merged with what is there or replacing it as a whole.

Failures are :class:`~voicehub.core.errors.OutputPathError` naming the destination.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from voicehub.core.errors import OutputPathError

CONFIG_FILE_NAME = "config.json"
"""File holding a config (strict JSON) inside a saved directory; written last, so a directory that
has one is complete."""

WEIGHTS_FILE_NAME = "model.safetensors"
"""File holding a model's state dict inside a saved directory (safetensors format)."""

SAVED_ENTRIES_FILE_NAME = ".voicehub-saved.json"
"""Hidden file in which :func:`write_directory` (with ``record=True``) lists the entries it wrote, so
that the next write into the same directory removes the ones it no longer writes."""


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


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _recorded_entries(directory: Path) -> list[str]:
    """The entry names an earlier ``write_directory(..., record=True)`` listed (none if unreadable)."""
    try:
        listed = json.loads((directory / SAVED_ENTRIES_FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(listed, list):
        return []
    return [name for name in listed if isinstance(name, str) and "/" not in name and name not in ("", ".", "..")]


def _merge_into(staging: Path, target: Path, *, record: bool) -> None:
    """Move the entries of ``staging`` into the existing directory ``target`` (``config.json`` last)."""
    written = sorted(item.name for item in staging.iterdir() if item.name != SAVED_ENTRIES_FILE_NAME)
    stale = sorted(set(_recorded_entries(target)) - set(written)) if record else []
    order = sorted(staging.iterdir(), key=lambda item: (item.name == CONFIG_FILE_NAME, item.name))
    for item in order:
        destination = target / item.name
        if destination.is_dir() and not destination.is_symlink():
            retired = Path(tempfile.mkdtemp(prefix=f".{item.name}.voicehub-old-", dir=target))
            os.replace(destination, retired / item.name)
            os.replace(item, destination)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(item, destination)
    for name in stale:
        _remove(target / name)


def _swap_in(staging: Path, target: Path) -> None:
    """Make ``staging`` the directory ``target``: rename the old one aside, rename ``staging`` in,
    remove the old one; if renaming ``staging`` in fails, the old directory is put back."""
    retired = target.with_name(f".{target.name}.voicehub-old-{uuid.uuid4().hex}")
    os.rename(target, retired)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(retired, target)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def write_directory(
    path: str | os.PathLike[str],
    write: Callable[[Path], object],
    *,
    what: str = "output directory",
    replace: bool = False,
    replaceable: Collection[str] | None = None,
    record: bool = False,
) -> Path:
    """Write a directory of files as one transaction: staged beside ``path``, then moved into place.

    ``write(staging)`` fills a new, empty staging directory created next to ``path`` (on the same
    file system, so the moves below are renames). Then, when ``path`` does not exist, the staging
    directory is renamed to it; otherwise:

    * ``replace=False`` (merge): each written entry replaces the entry of the same name in ``path``
      (a directory entry as a whole); ``config.json`` is moved last, so a reader that finds it finds
      the files it describes. Other entries of ``path`` are kept, except, with ``record=True``,
      those an earlier recorded write listed and this one does not write (a detached part must
      not come back).
    * ``replace=True``: the staging directory replaces ``path`` as a whole (the old directory is
      renamed aside, the new one renamed in, the old one removed; a failed rename puts the old
      one back): ``path`` holds either the old content or the complete new one, never a mix. A
      symbolic link to a directory is kept and the directory it points to is replaced.

    Missing parents are created (and removed again on failure); the staging directory is always
    removed; files and directories get ordinary modes (:func:`normalize_modes`). A failure leaves
    ``path`` as it was.

    Args:
        path: the destination directory.
        write: called with the staging directory; it writes the complete content there.
        what: how messages name the destination (``"PLDA back-end directory"``).
        replace: replace the whole directory instead of merging into it.
        replaceable: with ``replace``, the only entry names an existing directory may hold (its
            other entries would be deleted, so they make the write fail first); ``None`` allows any.
        record: list the written entries in ``.voicehub-saved.json`` (merge only), so the next
            recorded write removes what it no longer writes.

    Returns:
        The destination (``~`` expanded; a symbolic link resolved when ``replace``).

    Raises:
        OutputPathError: naming ``path`` when it is a file, lies under a file, holds entries other
            than ``replaceable``, or cannot be written (checked before ``write`` runs), or when a
            move fails; nothing is changed.
        Other errors raised by ``write`` propagate unchanged, with the same clean-up.
    """
    target = check_output_directory(path, what=what)
    if replace and target.is_symlink():
        target = target.resolve()
    if replace and replaceable is not None and target.is_dir():
        foreign = sorted(item.name for item in target.iterdir() if item.name not in replaceable)
        if foreign:
            raise OutputPathError(
                f"{what} {target}: holds {', '.join(foreign[:5])}{' ...' if len(foreign) > 5 else ''}, which "
                f"writing would delete (the directory is replaced as a whole); write into a new directory, or "
                f"one holding only {', '.join(sorted(replaceable))}",
                path=target,
            )
    with created_parents(target.parent, what=what, destination=target):
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.voicehub-staging-", dir=target.parent))
        except OSError as err:
            raise OutputPathError(f"{what} {target}: cannot write ({err.strerror or err})", path=target) from err
        try:
            write(staging)
            if record and not replace:
                names = sorted(item.name for item in staging.iterdir())
                (staging / SAVED_ENTRIES_FILE_NAME).write_text(json.dumps(names) + "\n", encoding="utf-8")
            normalize_modes(staging)
            if not target.exists():
                os.rename(staging, target)
            elif replace:
                _swap_in(staging, target)
            else:
                _merge_into(staging, target, record=record)
        except OutputPathError:
            raise
        except OSError as err:
            raise OutputPathError(f"{what} {target}: cannot write ({err.strerror or err})", path=target) from err
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


__all__ = [
    "CONFIG_FILE_NAME",
    "SAVED_ENTRIES_FILE_NAME",
    "WEIGHTS_FILE_NAME",
    "atomic_write",
    "check_output_directory",
    "check_output_file",
    "created_parents",
    "default_directory_mode",
    "default_file_mode",
    "normalize_modes",
    "write_bytes_atomic",
    "write_directory",
    "write_text_atomic",
]
