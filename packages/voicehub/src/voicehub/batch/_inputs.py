"""The inputs of a corpus job: a list of paths, a directory, a text file of paths or a JSONL manifest."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from voicehub.core.audio import AUDIO_FILE_SUFFIXES
from voicehub.errors import BatchInputError

PATH_LIST_SUFFIXES = (".txt", ".lst", ".list")
"""A file with one of these suffixes is a list of paths, one a line."""

MANIFEST_SUFFIXES = (".jsonl", ".ndjson")
"""A file with one of these suffixes is a JSONL manifest: one object a line with ``path`` (or ``audio_filepath``)."""

_MANIFEST_KEYS = ("path", "audio_filepath")

FINGERPRINT_BLOCK_BYTES = 65536
"""The fingerprint hashes this many bytes at the start and at the end of a file (64 KiB each)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FileFingerprint:
    """What a file held when a job read it: cheap to take, and changed by any usual edit.

    Attributes:
        size_bytes: the file's size in bytes.
        mtime_ns: its modification time, in nanoseconds since the epoch (``os.stat``).
        blocks_blake2b: hex BLAKE2b (16-byte digest) of its first and last
            :data:`FINGERPRINT_BLOCK_BYTES` bytes (the whole file when it is smaller than two blocks).
    """

    size_bytes: int
    mtime_ns: int
    blocks_blake2b: str

    def to_dict(self) -> dict[str, object]:
        """The fingerprint as the ``fingerprint`` column's struct value."""
        return {"size_bytes": self.size_bytes, "mtime_ns": self.mtime_ns, "blocks_blake2b": self.blocks_blake2b}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InputKey:
    """What identifies an input across runs: where the file is and what it held.

    Two paths that name the same file (relative and absolute, through a symbolic link) have the
    same ``resolved_path``; another file under the same name, or the same file changed, has
    another ``fingerprint``.

    Attributes:
        resolved_path: the absolute path, symbolic links resolved (``os.path.realpath``).
        fingerprint: ``None`` when the file cannot be opened (missing, a directory, no permission).
    """

    resolved_path: str
    fingerprint: FileFingerprint | None


def input_key(path: str) -> InputKey:
    """The key of ``path`` now: its resolved path and fingerprint (two reads of 64 KiB at most)."""
    resolved = os.path.realpath(path)
    try:
        with open(resolved, "rb") as file:
            stat = os.fstat(file.fileno())
            digest = hashlib.blake2b(digest_size=16)
            digest.update(file.read(FINGERPRINT_BLOCK_BYTES))
            if stat.st_size > FINGERPRINT_BLOCK_BYTES:
                file.seek(max(FINGERPRINT_BLOCK_BYTES, stat.st_size - FINGERPRINT_BLOCK_BYTES))
                digest.update(file.read(FINGERPRINT_BLOCK_BYTES))
    except OSError:  # missing or unreadable: the job records the error in its row
        return InputKey(resolved_path=resolved, fingerprint=None)
    fingerprint = FileFingerprint(size_bytes=stat.st_size, mtime_ns=stat.st_mtime_ns, blocks_blake2b=digest.hexdigest())
    return InputKey(resolved_path=resolved, fingerprint=fingerprint)


def _relative_to(base: Path, entry: str) -> str:
    """``entry`` as given when absolute, else relative to the list's directory."""
    return entry if os.path.isabs(entry) else str(base / entry)


def _read_list(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [_relative_to(path.parent, line.strip()) for line in lines if line.strip() and not line.startswith("#")]


def _read_manifest(path: Path) -> list[str]:
    paths = []
    # Rows end at "\n" only: str.splitlines would also cut one at U+0085, U+2028 or U+2029 inside a string.
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as err:
            raise BatchInputError(f"{path}:{number}: not a JSON object ({err}); a manifest holds one a line") from err
        key = next((k for k in _MANIFEST_KEYS if isinstance(record, dict) and isinstance(record.get(k), str)), None)
        if key is None:
            raise BatchInputError(
                f"{path}:{number}: expected an object with a string 'path' (or 'audio_filepath'), got {line[:80]!r}"
            )
        paths.append(_relative_to(path.parent, record[key]))
    return paths


def expand_inputs(inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """The audio paths a job's ``inputs`` name, in order, each once.

    Args:
        inputs: a list of paths (taken as given: a missing or broken file becomes an error row);
            or one path: a directory (every audio file below it, by suffix, sorted), a text file
            of paths (``.txt``, ``.lst``, ``.list``: one a line, ``#`` comments; relative paths
            are relative to the file's directory), a JSONL manifest (``.jsonl``, ``.ndjson``:
            one object a line with ``path`` or ``audio_filepath``, relative as above), or a
            single audio file.

    Returns:
        The paths as strings; a path named twice comes once, at its first place.

    Raises:
        BatchInputError: for an unreadable list or manifest, a malformed manifest line, or no
            inputs at all.
    """
    if isinstance(inputs, (str, os.PathLike)):
        source = Path(inputs)
        try:
            if source.is_dir():
                paths = sorted(
                    str(p) for p in source.rglob("*") if p.suffix.lower() in AUDIO_FILE_SUFFIXES and p.is_file()
                )
            elif source.suffix.lower() in MANIFEST_SUFFIXES:
                paths = _read_manifest(source)
            elif source.suffix.lower() in PATH_LIST_SUFFIXES:
                paths = _read_list(source)
            else:
                paths = [str(source)]
        except (OSError, UnicodeDecodeError) as err:
            raise BatchInputError(f"cannot read the batch inputs {source}: {err}") from err
        what = f"{source}"
    elif isinstance(inputs, Sequence):
        paths = [os.fspath(p) for p in inputs]
        what = "the list"
    else:
        raise BatchInputError(
            f"batch inputs: expected a list of paths, a directory, a path list or a JSONL manifest, "
            f"got {type(inputs).__name__}"
        )
    unique = list(dict.fromkeys(paths))
    if not unique:
        raise BatchInputError(f"batch inputs: {what} names no audio file")
    return unique


__all__ = [
    "FINGERPRINT_BLOCK_BYTES",
    "MANIFEST_SUFFIXES",
    "PATH_LIST_SUFFIXES",
    "FileFingerprint",
    "InputKey",
    "expand_inputs",
    "input_key",
]
