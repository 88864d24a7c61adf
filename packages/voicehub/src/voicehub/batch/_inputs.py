"""The inputs of a corpus job: a list of paths, a directory, a text file of paths or a JSONL manifest."""

from __future__ import annotations

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


__all__ = ["MANIFEST_SUFFIXES", "PATH_LIST_SUFFIXES", "expand_inputs"]
