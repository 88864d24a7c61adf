"""Writing files safely: check destinations before work, write atomically and durably, ordinary modes.

Every VoiceHub writer (configs, audio, RTTM, checkpoints, ``save_pretrained``, training
checkpoints, batch output parts and summaries) goes through this module, and every one follows
the same transaction:

* A destination is checked *before* any expensive work (decoding audio, loading weights): its
  nearest existing ancestor must be a directory in which a file can actually be created. A
  probe file is created and removed, which also catches pseudo file systems such as ``/proc``
  and read-only mounts whatever the process's privileges (``os.access`` does not).
* A file is written by :func:`atomic_write`: into a temporary file beside the destination
  (``.NAME.PID.RANDOM.partial``), which is ``fsync``-ed, renamed over the destination with
  :func:`os.replace` (atomic on POSIX and Windows), after which the directory is ``fsync``-ed.
  The destination holds either its old content or the complete new one, after a crash, a
  ``kill -9`` or a power loss alike. A symbolic link is written through to its target.
* A directory of several files (a saved model, a training checkpoint, a scoring back-end) is
  written by :func:`write_directory` under the same rule: into a staging directory beside it,
  every file and directory in it ``fsync``-ed, then moved into place (merged with what is there
  or replacing it as a whole) and the parent directory ``fsync``-ed.
* Only regular files are replaced. A destination that exists and is a special file (a pipe, a
  FIFO, a character or block device, e.g. ``/dev/stdout``, ``/dev/null`` or a shell's
  ``>(command)``) is never renamed over: by default the content is produced in a private
  temporary directory and then copied *into* the special file, which stays what it was; with
  ``refuse_special_files=True`` (writers whose destination must be a regular file, such as a
  batch job's parts) the write is refused with :class:`~voicehub.core.errors.OutputPathError`.
* Temporary files and staging directories left by a killed write (``.NAME.*.partial``,
  ``.NAME.voicehub-*``) are hidden, never match an output name, and are removed by the next
  write to the same destination; one that another process still writes (its PID runs, or it
  holds an advisory lock on the staging directory) is left alone. A failing write removes its
  own temporary file or staging directory whatever the exception.
* Missing parent directories are created only at write time and removed again if the write
  fails, so a failure leaves nothing new behind.
* Files get the mode a plain ``open()`` would give (``0o666 & ~umask``, or the mode of the file
  they replace) and directories ``0o777 & ~umask``, not the ``0o600`` of :mod:`tempfile`.

Just before the rename that commits a write, both transactions raise the audit event
``voicehub.core.files.commit`` with the arguments ``(temporary, destination)`` (paths as
strings; :func:`sys.audit`), so a test or a tracer can observe, or hold, a write at that point.

Failures are :class:`~voicehub.core.errors.OutputPathError` naming the destination.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import sys
import tempfile
import uuid
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from voicehub.core.errors import OutputPathError, check_flag

CONFIG_FILE_NAME = "config.json"
"""File holding a config (strict JSON) inside a saved directory; written last, so a directory that
has one is complete."""

WEIGHTS_FILE_NAME = "model.safetensors"
"""File holding a model's state dict inside a saved directory (safetensors format)."""

COMMIT_AUDIT_EVENT = "voicehub.core.files.commit"
"""The :func:`sys.audit` event raised just before a write is renamed into place, with the arguments
``(temporary, destination)``."""

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


def is_special_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` exists (symbolic links followed) and is neither a regular file nor a directory.

    Pipes, FIFOs, sockets and character or block devices (``/dev/stdout``, ``/dev/null``, a shell's
    ``>(command)`` as ``/dev/fd/63``) are special: writers write into them, never rename over them.
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


try:  # advisory locks mark a temporary file or staging directory as in use (POSIX only)
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows: leftovers are not cleaned up
    _fcntl = None  # type: ignore[assignment]


def _hold_lock(path: Path) -> int | None:
    """Open ``path`` and take an exclusive advisory lock on it; the caller closes the descriptor."""
    if _fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _release_lock(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _writer_alive(file_name: str, name: str) -> bool:
    """Whether the process that made the temporary file ``.NAME.PID.RANDOM.partial`` still runs."""
    pid_text = file_name[len(name) + 2 :].split(".", 1)[0]
    if not pid_text.isdigit():
        return False  # not made by this scheme (an older VoiceHub): nobody writes it any more
    pid = int(pid_text)
    if pid == os.getpid():
        return True  # another thread of this process may be writing it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by another user
    return True


def remove_leftovers(directory: Path, name: str) -> list[Path]:
    """Remove what a killed write to ``directory / name`` left: ``.NAME.*.partial``, ``.NAME.voicehub-*``.

    A temporary file whose writer (the PID in its name) still runs is kept, as is a staging
    directory that a running write holds (an advisory ``flock`` on the directory; files are
    not locked, since writers such as HDF5 lock the files they write), and everything on
    systems without ``fcntl`` (Windows). Errors are ignored: clean-up never fails a write.

    Returns:
        The entries removed.
    """
    if _fcntl is None or not name:
        return []
    removed: list[Path] = []
    try:
        candidates = [
            item
            for item in directory.iterdir()
            if item.name.startswith(f".{name}.")
            and (item.name.endswith(".partial") or item.name.startswith(f".{name}.voicehub-"))
            and not item.is_symlink()
        ]
    except OSError:
        return []
    for item in candidates:
        if not item.is_dir():
            if not _writer_alive(item.name, name):
                with contextlib.suppress(OSError):
                    item.unlink()
                    removed.append(item)
            continue
        fd = _hold_lock(item)
        if fd is None:
            continue  # in use by a running write, or gone
        try:
            _remove(item)
            removed.append(item)
        finally:
            _release_lock(fd)
    return removed


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
        The destination, ``~`` expanded and symbolic links resolved; a special file (see
        :func:`is_special_file`) is returned as given, since it is written into, not replaced
        (``/dev/stdout`` resolves to a name such as ``pipe:[1234]`` that cannot be opened).

    Raises:
        OutputPathError: if the path is empty or a directory, an ancestor is a file, a parent
            is missing (and ``create_parents`` is false), the nearest existing directory
            does not accept new files, or a special file cannot be opened for writing.
    """
    if not os.fspath(path):
        raise OutputPathError(f"{what}: the path is empty; pass a file name", path="")
    target = Path(path).expanduser()
    if is_special_file(target):
        if not os.access(target, os.W_OK):
            raise OutputPathError(
                f"{what} {target}: a special file (pipe or device) that this process may not write; "
                f"choose a writable file",
                path=target,
            )
        return target
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


_NO_SYNC_ERRNOS = frozenset({22, 95})  # EINVAL, EOPNOTSUPP: a file system that cannot sync this kind of file


def _sync(path: Path, *, directory: bool) -> None:
    """``fsync`` a file or a directory by path (directories on POSIX only: Windows cannot open them)."""
    if directory and os.name != "posix":
        return
    flags = os.O_RDONLY if os.name == "posix" else os.O_RDWR  # Windows syncs only writable handles
    if directory:
        flags |= getattr(os, "O_DIRECTORY", 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in _NO_SYNC_ERRNOS:
            raise
    finally:
        os.close(fd)


def _sync_tree(root: Path) -> None:
    """``fsync`` every regular file and directory under ``root`` (``root`` last), symbolic links skipped."""
    for current, _, files in os.walk(root, topdown=False):
        for name in files:
            item = Path(current) / name
            if not item.is_symlink() and item.is_file():
                _sync(item, directory=False)
        _sync(Path(current), directory=True)


def _sync_new_entries(directory: Path, made: list[Path]) -> None:
    """``fsync`` ``directory`` and, for parents this write created, the directories that hold them."""
    for item in [directory, *(created.parent for created in made)]:
        _sync(item, directory=True)


def _commit_file(temporary: Path, target: Path, *, what: str) -> None:
    """Rename the complete, synced ``temporary`` over ``target``, refusing to replace a special file."""
    if is_special_file(target):  # it became one after the checks (a FIFO made meanwhile): never replace it
        raise OutputPathError(
            f"{what} {target}: is now a special file (pipe, FIFO or device), which a write never replaces with a "
            f"regular file; remove it or choose a regular file path",
            path=target,
        )
    sys.audit(COMMIT_AUDIT_EVENT, os.fspath(temporary), os.fspath(target))
    os.replace(temporary, target)


def atomic_write(
    path: str | os.PathLike[str],
    write: Callable[[Path], object],
    *,
    what: str = "output file",
    create_parents: bool = True,
    refuse_special_files: bool = False,
) -> Path:
    """Write a file in one durable transaction: temporary file beside it, ``fsync``, rename, ``fsync`` of the directory.

    This is the one file-writing transaction of VoiceHub (see the module docstring). In order:
    the destination is checked (:func:`check_output_file`); missing parents are created; leftovers
    of killed writes to the same destination are removed (:func:`remove_leftovers`); ``write``
    fills a temporary file ``.NAME.PID.RANDOM.partial`` in the destination's directory; the file
    gets its final mode and is ``fsync``-ed; it is renamed over the destination
    (:func:`os.replace`, after the audit event :data:`COMMIT_AUDIT_EVENT`); the directory (and
    the directories holding any parent this write created) is ``fsync``-ed. A process killed at
    any point leaves the destination absent or with its old complete content, never part of the
    new one; the temporary file it may leave is hidden and removed by the next write.

    Args:
        path: the destination file.
        write: called with a temporary path in the destination's directory; it must write the
            complete file there (e.g. ``lambda tmp: tmp.write_bytes(data)``) and close it.
        what: how messages name the destination (``"--rttm file"``).
        create_parents: create missing parent directories (removed again on failure); pass
            ``False`` to refuse a missing directory.
        refuse_special_files: refuse a destination that is a special file (pipe, FIFO, device:
            :func:`is_special_file`) instead of writing into it.

    A special file is never replaced by a regular file. Unless ``refuse_special_files``, the
    content is written to a temporary file in a private temporary directory (under the file's
    own name, so writers that choose a format by suffix still can), then copied into it; that
    copy is not synced (pipes and devices have nothing to sync).

    Returns:
        The destination path (symbolic links resolved, except for a special file).

    Raises:
        OutputPathError: for a bad destination, a special file with ``refuse_special_files``
            (or one that appears at the destination while writing), or an ``OSError`` while
            writing, syncing or renaming; the old file, if any, is kept and no temporary file is
            left behind. Other errors raised by ``write`` (and ``KeyboardInterrupt``) propagate
            unchanged, with the same clean-up.
        ArgumentTypeError: if ``refuse_special_files`` is not a ``bool``.
    """
    refuse = check_flag(refuse_special_files, name="refuse_special_files")
    target = check_output_file(path, what=what, create_parents=create_parents)
    if is_special_file(target):
        if refuse:
            raise OutputPathError(
                f"{what} {target}: is a special file (pipe, FIFO or device), not a regular file; it is not "
                f"replaced and this output is not written into it: choose a regular file path",
                path=target,
            )
        _write_into_special(target, write, what=what)
        return target
    with created_parents(target.parent, what=what, destination=target) as made:
        remove_leftovers(target.parent, target.name)
        try:
            mode = target.stat().st_mode & 0o7777 if target.is_file() else default_file_mode()
            fd, name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".partial", dir=target.parent)
            os.close(fd)
        except OSError as err:
            raise OutputPathError(f"{what} {target}: cannot write ({err.strerror or err})", path=target) from err
        temporary = Path(name)
        try:
            write(temporary)
            os.chmod(temporary, mode)
            _sync(temporary, directory=False)
            _commit_file(temporary, target, what=what)
            _sync_new_entries(target.parent, made)
        except OutputPathError:
            raise
        except OSError as err:
            raise OutputPathError(f"{what} {target}: cannot write ({err.strerror or err})", path=target) from err
        finally:
            temporary.unlink(missing_ok=True)
    return target


def _write_into_special(target: Path, write: Callable[[Path], object], *, what: str) -> None:
    """Produce the content in a private temporary directory, then copy it into the special file ``target``."""
    with tempfile.TemporaryDirectory(prefix="voicehub-write-") as scratch:
        temporary = Path(scratch) / (target.name or "output")
        try:
            write(temporary)
            with temporary.open("rb") as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink)
        except OutputPathError:
            raise
        except OSError as err:
            raise OutputPathError(
                f"{what} {target}: cannot write into this special file ({err.strerror or err})", path=target
            ) from err


def write_text_atomic(
    path: str | os.PathLike[str],
    text: str,
    *,
    what: str = "output file",
    create_parents: bool = True,
    refuse_special_files: bool = False,
) -> Path:
    """Write UTF-8 text atomically and durably (:func:`atomic_write`, whose arguments and errors these are)."""
    return atomic_write(
        path,
        lambda tmp: tmp.write_text(text, encoding="utf-8"),
        what=what,
        create_parents=create_parents,
        refuse_special_files=refuse_special_files,
    )


def write_bytes_atomic(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    what: str = "output file",
    create_parents: bool = True,
    refuse_special_files: bool = False,
) -> Path:
    """Write bytes atomically and durably (:func:`atomic_write`, whose arguments and errors these are)."""
    return atomic_write(
        path,
        lambda tmp: tmp.write_bytes(data),
        what=what,
        create_parents=create_parents,
        refuse_special_files=refuse_special_files,
    )


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


def _is_leftover(name: str) -> bool:
    """Whether an entry name is a temporary file or staging directory of an interrupted write."""
    return name.startswith(".") and (name.endswith(".partial") or ".voicehub-" in name)


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def _carry_over(target: Path, staging: Path, *, record: bool) -> None:
    """Add to ``staging`` the entries of ``target`` that this write keeps (hard links, not copies).

    Kept: every entry that ``staging`` does not hold, except, with ``record``, those an earlier
    recorded write listed (it wrote them and this one no longer does), and leftovers of an
    interrupted write.
    """
    written = {item.name for item in staging.iterdir()}
    stale = set(_recorded_entries(target)) if record else set()
    for item in sorted(target.iterdir()):
        name = item.name
        if name in written or name in stale or name == SAVED_ENTRIES_FILE_NAME or _is_leftover(name):
            continue
        destination = staging / name
        if item.is_symlink():
            os.symlink(os.readlink(item), destination)
        elif item.is_dir():
            shutil.copytree(item, destination, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(os.fspath(item), os.fspath(destination))


_RENAME_EXCHANGE = 2  # linux/fs.h


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically with Linux ``renameat2(RENAME_EXCHANGE)``; ``False`` where unsupported."""
    import ctypes
    import ctypes.util
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), _RENAME_EXCHANGE)
    if result == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: file system or kernel without the flag
        return False
    raise OSError(errno, os.strerror(errno), os.fspath(second))


def _swap_in(staging: Path, target: Path) -> None:
    """Make ``staging`` the directory ``target`` and remove the old one.

    On Linux the two directories are exchanged in one atomic ``renameat2`` call, so ``target``
    always names a complete directory, old or new, even if the process is killed. Elsewhere the
    old one is renamed aside and ``staging`` renamed in (a failed rename puts the old one back;
    a kill between the two renames leaves the old one as ``.NAME.voicehub-old-*`` beside it).
    """
    if _exchange(staging, target):
        shutil.rmtree(staging, ignore_errors=True)  # now the old directory
        return
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
    """Write a directory of files as one durable transaction: staged beside ``path``, synced, moved into place.

    ``write(staging)`` fills a new, empty staging directory created next to ``path`` (on the same
    file system, so the moves below are renames). Then, when ``path`` does not exist, the staging
    directory is renamed to it; otherwise:

    * ``replace=False`` (merge): each written entry replaces the entry of the same name in ``path``
      (a directory entry as a whole). Other entries of ``path`` are kept, except, with
      ``record=True``, those an earlier recorded write listed and this one does not write (a
      detached part must not come back). The kept entries are hard-linked into the staging
      directory, which then replaces ``path`` as a whole, so a reader (or a process killed
      midway) never sees new files next to old ones.
    * ``replace=True``: the staging directory replaces ``path`` as a whole; entries of ``path``
      are not kept.

    The swap is one atomic ``renameat2(RENAME_EXCHANGE)`` on Linux (elsewhere: the old directory
    renamed aside, the new one renamed in, a failed rename putting the old one back): ``path``
    holds either the old content or the complete new one, never a mix. A symbolic link to a
    directory is kept and the directory it points to is replaced. Staging directories left by a
    killed write to the same ``path`` (``.NAME.voicehub-*`` beside it) are removed first.

    Durability follows :func:`atomic_write`'s rule: every file and directory in the staging
    directory is ``fsync``-ed, the audit event :data:`COMMIT_AUDIT_EVENT` is raised, the staging
    directory is moved into place, and the parent directory is ``fsync``-ed.

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
    if target.is_symlink():
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
    with created_parents(target.parent, what=what, destination=target) as made:
        remove_leftovers(target.parent, target.name)
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.voicehub-staging-", dir=target.parent))
        except OSError as err:
            raise OutputPathError(f"{what} {target}: cannot write ({err.strerror or err})", path=target) from err
        lock = _hold_lock(staging)
        try:
            write(staging)
            if record and not replace:
                names = sorted(item.name for item in staging.iterdir())
                (staging / SAVED_ENTRIES_FILE_NAME).write_text(json.dumps(names) + "\n", encoding="utf-8")
            normalize_modes(staging)
            exists = target.exists()
            if exists and not replace:
                _carry_over(target, staging, record=record)
            _sync_tree(staging)
            sys.audit(COMMIT_AUDIT_EVENT, os.fspath(staging), os.fspath(target))
            if not exists:
                os.rename(staging, target)
            else:
                _swap_in(staging, target)
            _sync_new_entries(target.parent, made)
        except OutputPathError:
            raise
        except OSError as err:
            raise OutputPathError(f"{what} {target}: cannot write ({err.strerror or err})", path=target) from err
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            _release_lock(lock)
    return target


__all__ = [
    "COMMIT_AUDIT_EVENT",
    "CONFIG_FILE_NAME",
    "SAVED_ENTRIES_FILE_NAME",
    "WEIGHTS_FILE_NAME",
    "atomic_write",
    "check_output_directory",
    "check_output_file",
    "created_parents",
    "default_directory_mode",
    "default_file_mode",
    "is_special_file",
    "normalize_modes",
    "remove_leftovers",
    "write_bytes_atomic",
    "write_directory",
    "write_text_atomic",
]
