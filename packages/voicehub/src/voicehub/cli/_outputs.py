"""Output destinations shared by the ``voicehub`` subcommands: ``-`` for stdout, ``--output-dir``, JSON lines.

* :func:`is_stdout`, :func:`check_destination`, :func:`write_destination`: every output option
  takes a path or ``-`` (standard output). A path is checked before any work and written
  atomically (:mod:`voicehub.core.files`); ``-`` writes the bytes to stdout.
* :func:`input_ids` and :func:`output_dir_paths`: one output file per input under ``--output-dir``,
  named after the inputs and never colliding.
* :func:`echo_json_line`: one strict-JSON object per line, flushed at once (``--jsonl``), so a
  long batch can be read as its results arrive.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from voicehub.core import strict_json
from voicehub.core.files import atomic_write, check_output_directory, check_output_file

STDOUT = "-"
"""The value of an output option that means standard output."""


def is_stdout(target: str | os.PathLike[str] | None) -> bool:
    """True when an output option's value is ``-`` (standard output)."""
    return target is not None and os.fspath(target) == STDOUT


def check_destination(target: str | os.PathLike[str] | None, *, what: str) -> None:
    """Check an output option's file before any work: nothing for ``None`` or ``-``.

    Raises:
        OutputPathError: when the file cannot be created there (see :func:`voicehub.core.files.check_output_file`).
    """
    if target is not None and not is_stdout(target):
        check_output_file(target, what=what)


def write_destination(
    target: str | os.PathLike[str], data: bytes | str | Callable[[Path], object], *, what: str
) -> Path | None:
    """Write ``data`` to ``target``: standard output for ``-``, else atomically to the file.

    ``str`` data is written as UTF-8. A callable is a writer for content too large to hold in
    memory: it is called with a temporary path and writes the complete content there, piece by
    piece (for a file: the temporary file beside it, renamed over it at the end; for ``-`` or a
    special file such as ``/dev/stdout``, a FIFO or ``/dev/null``: a file in a private temporary
    directory, then copied into it, which stays what it was).

    Returns:
        The file written (symbolic links resolved, a special file as given), or ``None`` for ``-``.

    Raises:
        OutputPathError: when the file cannot be written.
        Errors raised by a writer propagate, after the temporary file is removed.
    """
    if callable(data):
        write = data
    else:
        payload = data.encode("utf-8") if isinstance(data, str) else data

        def write(temporary: Path) -> None:
            temporary.write_bytes(payload)

    if is_stdout(target):
        sys.stdout.flush()  # text already echoed comes first
        if callable(data):
            with tempfile.TemporaryDirectory(prefix="voicehub-stdout-") as scratch:
                temporary = Path(scratch) / "output"
                data(temporary)
                with temporary.open("rb") as source:
                    shutil.copyfileobj(source, sys.stdout.buffer)
        else:
            sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
        return None
    return atomic_write(Path(target), write, what=what)


def input_ids(files: Sequence[Path]) -> list[str]:
    """One id per input, unique across ``files``, for output names (RTTM recording ids, ``--output-dir`` files).

    The id is the file's stem (``talk`` for ``talk.wav``), so a file's outputs keep their names
    whatever else is in the batch. Only files whose stems collide (``a/talk.wav`` and
    ``b/talk.wav``) get their path relative to those files' common directory, without suffix
    (``a/talk``, ``b/talk``), or with it when still ambiguous (``talk.wav``, ``talk.flac``).
    Whitespace becomes ``_``.
    """
    stems = [path.stem for path in files]
    ids = list(stems)
    for stem in {stem for stem in stems if stems.count(stem) > 1}:
        group = [index for index, other in enumerate(stems) if other == stem]
        resolved = [files[index].resolve() for index in group]
        common = Path(os.path.commonpath([str(path.parent) for path in resolved]))
        relative = [path.relative_to(common) for path in resolved]
        names = [path.with_suffix("").as_posix() for path in relative]
        if len(set(names)) != len(names):
            names = [path.as_posix() for path in relative]
        for index, name in zip(group, names, strict=True):
            ids[index] = name
    return ["_".join(name.split()) for name in ids]


def output_dir_paths(output_dir: Path, files: Sequence[Path], suffix: str) -> list[Path]:
    """The file under ``output_dir`` for each input: ``<id><suffix>`` with the ids of :func:`input_ids`.

    Raises:
        OutputPathError: when ``output_dir`` cannot be created or written.
    """
    check_output_directory(output_dir, what="--output-dir")
    return [output_dir / f"{file_id}{suffix}" for file_id in input_ids(files)]


def echo_json_line(record: Mapping[str, Any]) -> None:
    """Print ``record`` as one line of strict JSON on stdout and flush (JSON Lines, ``--jsonl``)."""
    click.echo(strict_json.dumps(dict(record)))
    sys.stdout.flush()


__all__ = [
    "STDOUT",
    "check_destination",
    "echo_json_line",
    "input_ids",
    "is_stdout",
    "output_dir_paths",
    "write_destination",
]
