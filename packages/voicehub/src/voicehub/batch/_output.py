"""The output directory of a corpus job: Parquet parts written atomically, resume, and the summary.

Layout of ``output/``::

    part-000000.parquet   one part per finished batch (rows of the worker's schema, then the key columns)
    part-000001.parquet
    ...
    _summary.json         files, audio hours, failures, the steps' models and this run's throughput

Every other name in the directory starts with ``_`` or ``.``, which Arrow's dataset discovery
skips, so the standard readers take the directory as it is: ``pandas.read_parquet(output)``,
``pyarrow.parquet.ParquetDataset(output)``, ``pyarrow.dataset.dataset(output)``.

Rows are keyed by file, not by the path string: each row carries ``resolved_path`` (absolute,
symbolic links resolved) and ``fingerprint`` (size, modification time and a hash of the first
and last 64 KiB, :func:`~voicehub.batch._inputs.input_key`; null for a file that could not be
opened). A resumed job skips an input only when the parts hold a row with its resolved path *and*
its current fingerprint: another corpus with the same file names (other resolved paths) is run,
the same files named by relative and absolute paths are run once, and a file changed since is
run again (its new row supersedes the old one). Counts and :func:`read_output` take the last row
of each resolved path, and at the end of a run :meth:`PartWriter.drop_superseded` rewrites the
parts that hold superseded rows without them, so the standard readers also see one row per file.

Each part, and the summary, is written by :func:`voicehub.core.files.atomic_write`: to a hidden
temporary file in the same directory, synced to disk, renamed into place and the directory synced,
so a part is either complete or absent: a job killed at any moment leaves whole parts and, at
worst, a hidden ``.part-NNNNNN.parquet.*.partial`` that is never read as a part and that the next
run deletes (as it deletes the ``.part-*.tmp`` of older versions). Only
the driver writes, so a file is written once per run; with ``resume=True`` the paths already in
the parts are skipped, so a killed and restarted job writes every input that succeeds exactly
once. An input whose row holds an error is run again by a resumed job (unless it passes
``retry_failed=False``): its new row, in a later part, supersedes the error row, and
:func:`read_output` (like the summary's counts) takes the last row written for each file, so a
reader sees one row per input.

Parts written before the key columns existed (VoiceHub before resume keyed by file; their
summary was ``summary.json``) are still read by :func:`read_output`, by path string; a job does
not resume into them (:class:`~voicehub.core.errors.OutputPathError` says to write into a new
directory), since they cannot tell which file a path named.

Every part records what made it in its Parquet schema metadata (key :data:`STEPS_METADATA_KEY`:
per step the model type, checkpoint source, config, inference options and optimization plan, see
:func:`~voicehub.batch._worker.describe_steps`); a job that resumes into the directory with other
ones is refused with :class:`~voicehub.errors.BatchResumeMismatchError` before any work, so an
output never mixes rows of two models.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from voicehub.batch._inputs import FileFingerprint, InputKey
from voicehub.core.errors import OutputPathError
from voicehub.core.files import atomic_write, check_output_directory, remove_leftovers, write_text_atomic
from voicehub.errors import BatchResumeMismatchError

if TYPE_CHECKING:
    import pyarrow as pa

SUMMARY_FILE_NAME = "_summary.json"
"""The job summary inside the output directory (``_``: skipped by Arrow's dataset discovery)."""

LEGACY_SUMMARY_FILE_NAME = "summary.json"
"""Where the summary was before resume keyed rows by file (it broke ``pandas.read_parquet(output)``)."""

KEY_COLUMNS = ("resolved_path", "fingerprint")
"""The columns a part adds after the worker's: what identifies each row's file (module docstring)."""

STEPS_METADATA_KEY = b"voicehub.batch.steps"
"""The Parquet schema metadata key of each part: the JSON list of the steps that wrote it."""

_PART = re.compile(r"^part-(\d{6,})\.parquet$")
_LEFTOVER = re.compile(r"^\.((?:part-\d{6,}\.parquet)|(?:_?summary\.json))\.")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BatchSummary:
    """What a corpus job's output directory holds, and how fast this run went.

    Attributes:
        output: the output directory.
        files: files in the output (every file written so far, this run and earlier ones; one per
            resolved path).
        failures: files whose last row has its ``error`` set.
        audio_hours: total duration of the readable files, in hours.
        processed_files: files written by this run.
        processed_audio_hours: audio hours written by this run.
        skipped_files: inputs skipped because an earlier run wrote them as they are now (``resume=True``).
        retried_files: inputs an earlier run wrote as errors that this run ran again
            (``retry_failed=True``, or the file changed since; counted in ``processed_files``).
        changed_files: inputs an earlier run wrote without an error whose file changed since
            (another fingerprint), so this run ran them again (counted in ``processed_files``).
        wall_s: this run's wall time in seconds, engine start-up included.
        startup_s: seconds from the start of the run until the first batch came back (the
            engine's start-up: worker processes, imports, model loads, plus one batch).
        files_per_s: ``processed_files / wall_s``.
        audio_hours_per_s: ``processed_audio_hours / wall_s``.
        engine: ``"local"`` or ``"ray"``.
        workers: worker processes (or Ray actors).
        steps: the step names, in order.
        models: per step what made its results (model type, checkpoint source, config,
            options, optimization plan; :func:`~voicehub.batch._worker.describe_steps`).
        schema_version: version of this record's JSON layout (2: ``changed_files``, counts per
            resolved path, written as ``_summary.json``).
    """

    output: Path
    files: int
    failures: int
    audio_hours: float
    processed_files: int
    processed_audio_hours: float
    skipped_files: int
    retried_files: int
    changed_files: int
    wall_s: float
    startup_s: float | None
    files_per_s: float
    audio_hours_per_s: float
    engine: str
    workers: int
    steps: tuple[str, ...]
    models: tuple[dict[str, object], ...] = ()
    schema_version: int = 2

    def to_dict(self) -> dict[str, object]:
        """The summary as JSON-ready values (``type``: ``"batch_summary"``)."""
        document: dict[str, object] = {"type": "batch_summary"}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            document[field.name] = (
                str(value) if isinstance(value, Path) else list(value) if isinstance(value, tuple) else value
            )
        return document


class PartWriter:
    """Writes a job's Parquet parts into ``output`` and remembers which paths they hold, and how each ended.

    Args:
        output: the output directory (created if missing).
        schema: the table schema every part has.
        steps: what makes the results (:func:`~voicehub.batch._worker.describe_steps`), written
            into every part's metadata and compared with the parts already there.
        resume: read the paths of the parts already there (else the directory must hold no part).

    Raises:
        OutputPathError: when ``output`` cannot be a directory, or holds parts while ``resume`` is
            false, or holds a part written with other steps (other columns).
        BatchResumeMismatchError: when a part there was written by other models, checkpoints or
            options (or records none).
    """

    def __init__(
        self, output: str | os.PathLike[str], schema: pa.Schema, *, steps: Sequence[dict[str, object]], resume: bool
    ) -> None:
        import pyarrow.parquet as pq

        self.output = check_output_directory(output, what="batch output directory")
        self.output.mkdir(parents=True, exist_ok=True)
        self.steps = json.loads(json.dumps(list(steps)))
        schema = _with_key_fields(schema)
        self.schema = schema.with_metadata({STEPS_METADATA_KEY: json.dumps(self.steps, sort_keys=True).encode()})
        _remove_leftovers(self.output)
        parts = self.parts()
        if parts and not resume:
            raise OutputPathError(
                f"batch output directory {self.output} already holds {len(parts)} part(s); pass resume=True "
                f"(command line: --resume) to continue that job, or choose an empty directory",
                path=self.output,
            )
        # the last row written for each resolved path: its fingerprint, audio seconds (0 when
        # unreadable), whether its error is set, and the part that holds it
        self._latest: dict[str, _Row] = {}
        self._stale: set[int] = set()  # the parts that hold a superseded row
        for part in parts:
            found = pq.read_schema(part)
            if not set(KEY_COLUMNS) <= set(found.names):
                raise OutputPathError(
                    f"{part} was written before batch resume keyed rows by file (it has no {' or '.join(KEY_COLUMNS)} "
                    f"column), so a resumed job cannot tell which files its paths named; write into a new "
                    f"directory (voicehub.batch.read_output still reads this one)",
                    path=part,
                )
            if found.names != schema.names:
                raise OutputPathError(
                    f"{part} holds columns {found.names}, this job writes {schema.names}; resume with the same "
                    f"steps, or write into another directory",
                    path=part,
                )
            self._check_steps(part, found)
            self._remember(pq.read_table(part, columns=["duration_s", "error", *KEY_COLUMNS]), _part_number(part))
        self._next = max((int(_PART.match(p.name).group(1)) for p in parts), default=-1) + 1  # type: ignore[union-attr]

    def _check_steps(self, part: Path, found: pa.Schema) -> None:
        recorded = (found.metadata or {}).get(STEPS_METADATA_KEY)
        saved = json.loads(recorded) if recorded is not None else None
        differences = tuple(_differences(saved, self.steps, "steps"))
        if differences:
            raise BatchResumeMismatchError(self.output, differences)

    def _remember(self, table: pa.Table, part: int) -> None:
        written = table.select(["duration_s", "error", *KEY_COLUMNS]).to_pydict()
        columns = (written[name] for name in ("resolved_path", "fingerprint", "duration_s", "error"))
        for resolved, fingerprint, seconds, error in zip(*columns, strict=True):
            found = FileFingerprint(**fingerprint) if fingerprint is not None else None
            if resolved in self._latest and self._latest[resolved].part != part:
                self._stale.add(self._latest[resolved].part)
            row = _Row(fingerprint=found, seconds=seconds or 0.0, failed=error is not None, part=part)
            self._latest[resolved] = row

    def parts(self) -> list[Path]:
        """The finished parts, in order."""
        return _parts(self.output)

    def written(self, key: InputKey) -> bool:
        """Whether the last row the parts hold for ``key``'s file has its current fingerprint."""
        row = self._latest.get(key.resolved_path)
        return row is not None and row.fingerprint == key.fingerprint

    def changed(self, key: InputKey) -> bool:
        """Whether the parts hold a row for ``key``'s file taken with another fingerprint (the file changed)."""
        row = self._latest.get(key.resolved_path)
        return row is not None and row.fingerprint != key.fingerprint

    def failed(self, key: InputKey) -> bool:
        """Whether the last row the parts hold for ``key``'s file (whatever its fingerprint) has its ``error`` set."""
        row = self._latest.get(key.resolved_path)
        return row is not None and row.failed

    def done_seconds(self, keys: Sequence[InputKey]) -> float:
        """Audio seconds of the last rows the parts hold for ``keys``'s files (0 for a file they lack)."""
        return sum(self._latest[key.resolved_path].seconds for key in keys if key.resolved_path in self._latest)

    def write(self, table: pa.Table, keys: Mapping[str, InputKey]) -> Path:
        """Write ``table`` as the next part, atomically and durably (:func:`voicehub.core.files.atomic_write`).

        Args:
            table: a worker's rows (:func:`~voicehub.batch.output_schema`).
            keys: the key of each of its ``path`` values, added as the :data:`KEY_COLUMNS`.

        Raises:
            OutputPathError: if the part cannot be written, or its name is taken by a special file
                (nothing is left behind).
        """
        import pyarrow.parquet as pq

        table = _with_keys(table, keys)
        target = self.output / f"part-{self._next:06d}.parquet"
        cast = table.cast(self.schema)
        atomic_write(
            target,
            lambda temporary: pq.write_table(cast, os.fspath(temporary)),
            what="batch output part",
            create_parents=False,
            refuse_special_files=True,
        )
        self._next += 1
        self._remember(table, self._next - 1)
        return target

    def drop_superseded(self) -> list[Path]:
        """Rewrite each part that holds a superseded row (an older row of a file) without it.

        A part left with no row is removed. Each rewrite is atomic, so a job killed here leaves
        every part whole; the superseded rows still there are dropped by the next run's call (and
        :func:`read_output` skips them meanwhile).

        Returns:
            The parts rewritten or removed.

        Raises:
            OutputPathError: if a part cannot be rewritten (the old part stays).
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        changed = []
        for part in self.parts():
            number = _part_number(part)
            if number not in self._stale:
                continue
            table = pq.read_table(part)
            keep = [self._latest[resolved].part == number for resolved in table.column("resolved_path").to_pylist()]
            if all(keep):
                continue
            if not any(keep):
                part.unlink()
            else:
                kept = table.filter(pa.array(keep, pa.bool_())).cast(self.schema)
                atomic_write(
                    part, functools.partial(_write_parquet, kept), what="batch output part", refuse_special_files=True
                )
            changed.append(part)
        self._stale.clear()
        return changed

    def totals(self) -> tuple[int, int, float]:
        """``(files, failed files, audio hours)`` over every part, from the last row of each resolved path."""
        latest = self._latest.values()
        return len(self._latest), sum(row.failed for row in latest), sum(row.seconds for row in latest) / 3600.0

    def write_summary(self, summary: BatchSummary) -> Path:
        """Write ``_summary.json`` atomically and durably (:func:`voicehub.core.files.write_text_atomic`).

        Raises:
            OutputPathError: if it cannot be written, or ``_summary.json`` is a special file.
        """
        return write_text_atomic(
            self.output / SUMMARY_FILE_NAME,
            json.dumps(summary.to_dict(), indent=2) + "\n",
            what="batch summary",
            create_parents=False,
            refuse_special_files=True,
        )


def _remove_leftovers(directory: Path) -> None:
    """Remove what killed runs left: temporary parts and summaries whose writer is gone (and older ``.tmp`` ones)."""
    older = [".part-*.tmp", f".{SUMMARY_FILE_NAME}.tmp", f".{LEGACY_SUMMARY_FILE_NAME}.tmp"]
    for stray in [path for pattern in older for path in directory.glob(pattern)]:
        stray.unlink(missing_ok=True)  # older versions' names: never renamed, so never counted
    names = {match.group(1) for item in directory.iterdir() if (match := _LEFTOVER.match(item.name))}
    for name in sorted(names):
        remove_leftovers(directory, name)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Row:
    """What the writer remembers of the last row of one file."""

    fingerprint: FileFingerprint | None
    seconds: float
    failed: bool
    part: int


def _fingerprint_type() -> pa.DataType:
    import pyarrow as pa

    return pa.struct([("size_bytes", pa.int64()), ("mtime_ns", pa.int64()), ("blocks_blake2b", pa.string())])


def _with_key_fields(schema: pa.Schema) -> pa.Schema:
    """``schema`` (the worker's) with the :data:`KEY_COLUMNS` appended."""
    import pyarrow as pa

    return schema.append(pa.field("resolved_path", pa.string(), nullable=False)).append(
        pa.field("fingerprint", _fingerprint_type())
    )


def _with_keys(table: pa.Table, keys: Mapping[str, InputKey]) -> pa.Table:
    """A worker's ``table`` with each row's :data:`KEY_COLUMNS`, looked up by its ``path``."""
    import pyarrow as pa

    found = [keys[path] for path in table.column("path").to_pylist()]
    resolved = pa.array([key.resolved_path for key in found], pa.string())
    fingerprints = [key.fingerprint.to_dict() if key.fingerprint is not None else None for key in found]
    return table.append_column("resolved_path", resolved).append_column(
        "fingerprint", pa.array(fingerprints, _fingerprint_type())
    )


def _write_parquet(table: pa.Table, path: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, path)


def _part_number(part: Path) -> int:
    return int(_PART.match(part.name).group(1))  # type: ignore[union-attr]


def _differences(saved: object, now: object, prefix: str) -> list[tuple[str, object, object]]:
    """``(key, saved, now)`` for each leaf where the two JSON values differ (keys dotted, list items indexed)."""
    if isinstance(saved, dict) and isinstance(now, dict):
        return [
            difference
            for key in sorted(set(saved) | set(now))
            for difference in _differences(saved.get(key), now.get(key), f"{prefix}.{key}")
        ]
    if isinstance(saved, list) and isinstance(now, list) and len(saved) == len(now):
        pairs = enumerate(zip(saved, now, strict=True))
        return [difference for i, (a, b) in pairs for difference in _differences(a, b, f"{prefix}[{i}]")]
    return [] if saved == now else [(prefix, saved, now)]


def _parts(directory: Path) -> list[Path]:
    """The parts in ``directory``, in the order they were written (by number)."""
    found = (path for path in directory.iterdir() if _PART.match(path.name))
    return sorted(found, key=lambda path: int(_PART.match(path.name).group(1)))  # type: ignore[union-attr]


def read_output(output: str | os.PathLike[str], columns: Sequence[str] | None = None) -> pa.Table:
    """Every input's row in a job's output as one table, sorted by ``path`` (then ``resolved_path``).

    One row per file (resolved path): the last one written. An input that failed and succeeded
    when a resumed job ran it again, or a file changed and run again, has its older row
    superseded by the later part's row. Parts written before rows were keyed by file (no
    ``resolved_path`` column) are read one row per ``path`` string.

    Args:
        output: the job's output directory.
        columns: only these columns, in this order (default: all).

    Raises:
        OutputPathError: if ``output`` holds no part.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = Path(output)
    parts = _parts(directory) if directory.is_dir() else []
    if not parts:
        raise OutputPathError(f"{directory} holds no batch output part (part-*.parquet)", path=directory)
    keyed = all("resolved_path" in pq.read_schema(part).names for part in parts)
    key = "resolved_path" if keyed else "path"
    wanted = None if not columns else list(dict.fromkeys(["path", key, *columns]))
    table = pa.concat_tables([pq.read_table(part, columns=wanted) for part in parts], promote_options="default")
    order = pa.array(range(table.num_rows), pa.int64())  # in the order written
    last = table.select([key]).append_column("row", order).group_by(key).aggregate([("row", "max")])
    table = table.take(last.column("row_max")).sort_by([("path", "ascending"), (key, "ascending")])
    return table if not columns else table.select(list(columns))


__all__ = [
    "KEY_COLUMNS",
    "LEGACY_SUMMARY_FILE_NAME",
    "STEPS_METADATA_KEY",
    "SUMMARY_FILE_NAME",
    "BatchSummary",
    "PartWriter",
    "read_output",
]
