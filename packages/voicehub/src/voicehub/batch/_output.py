"""The output directory of a corpus job: Parquet parts written atomically, resume, and the summary.

Layout of ``output/``::

    part-000000.parquet   one part per finished batch (rows of the worker's schema)
    part-000001.parquet
    ...
    summary.json          files, audio hours, failures, the steps' models and this run's throughput

Each part, and the summary, is written by :func:`voicehub.core.files.atomic_write`: to a hidden
temporary file in the same directory, synced to disk, renamed into place and the directory synced,
so a part is either complete or absent: a job killed at any moment leaves whole parts and, at
worst, a hidden ``.part-NNNNNN.parquet.*.partial`` that is never read as a part and that the next
run deletes (as it deletes the ``.part-*.tmp`` of older versions). Only
the driver writes, so a path is written once per run; with ``resume=True`` the paths already in
the parts are skipped, so a killed and restarted job writes every input that succeeds exactly
once. An input whose row holds an error is run again by a resumed job (unless it passes
``retry_failed=False``): its new row, in a later part, supersedes the error row, and
:func:`read_output` (like the summary's counts) takes the last row written for each path, so a
reader sees one row per input.

Every part records what made it in its Parquet schema metadata (key :data:`STEPS_METADATA_KEY`:
per step the model type, checkpoint source, config, inference options and optimization plan, see
:func:`~voicehub.batch._worker.describe_steps`); a job that resumes into the directory with other
ones is refused with :class:`~voicehub.errors.BatchResumeMismatchError` before any work, so an
output never mixes rows of two models.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from voicehub.core.errors import OutputPathError
from voicehub.core.files import atomic_write, check_output_directory, remove_leftovers, write_text_atomic
from voicehub.errors import BatchResumeMismatchError

if TYPE_CHECKING:
    import pyarrow as pa

SUMMARY_FILE_NAME = "summary.json"
"""The job summary inside the output directory."""

STEPS_METADATA_KEY = b"voicehub.batch.steps"
"""The Parquet schema metadata key of each part: the JSON list of the steps that wrote it."""

_PART = re.compile(r"^part-(\d{6,})\.parquet$")
_LEFTOVER = re.compile(r"^\.((?:part-\d{6,}\.parquet)|(?:summary\.json))\.")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BatchSummary:
    """What a corpus job's output directory holds, and how fast this run went.

    Attributes:
        output: the output directory.
        files: inputs in the output (every input written so far, this run and earlier ones).
        failures: inputs whose last row has its ``error`` set.
        audio_hours: total duration of the readable files, in hours.
        processed_files: files written by this run.
        processed_audio_hours: audio hours written by this run.
        skipped_files: inputs skipped because an earlier run wrote them (``resume=True``).
        retried_files: inputs an earlier run wrote as errors that this run ran again
            (``retry_failed=True``; counted in ``processed_files``).
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
        schema_version: version of this record's JSON layout.
    """

    output: Path
    files: int
    failures: int
    audio_hours: float
    processed_files: int
    processed_audio_hours: float
    skipped_files: int
    retried_files: int
    wall_s: float
    startup_s: float | None
    files_per_s: float
    audio_hours_per_s: float
    engine: str
    workers: int
    steps: tuple[str, ...]
    models: tuple[dict[str, object], ...] = ()
    schema_version: int = 1

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
        self.schema = schema.with_metadata({STEPS_METADATA_KEY: json.dumps(self.steps, sort_keys=True).encode()})
        _remove_leftovers(self.output)
        parts = self.parts()
        if parts and not resume:
            raise OutputPathError(
                f"batch output directory {self.output} already holds {len(parts)} part(s); pass resume=True "
                f"(command line: --resume) to continue that job, or choose an empty directory",
                path=self.output,
            )
        # the last row written for each path: (audio seconds, 0 when unreadable; whether its error is set)
        self._latest: dict[str, tuple[float, bool]] = {}
        for part in parts:
            found = pq.read_schema(part)
            if found.names != schema.names:
                raise OutputPathError(
                    f"{part} holds columns {found.names}, this job writes {schema.names}; resume with the same "
                    f"steps, or write into another directory",
                    path=part,
                )
            self._check_steps(part, found)
            self._remember(pq.read_table(part, columns=["path", "duration_s", "error"]))
        self._next = max((int(_PART.match(p.name).group(1)) for p in parts), default=-1) + 1  # type: ignore[union-attr]

    def _check_steps(self, part: Path, found: pa.Schema) -> None:
        recorded = (found.metadata or {}).get(STEPS_METADATA_KEY)
        saved = json.loads(recorded) if recorded is not None else None
        differences = tuple(_differences(saved, self.steps, "steps"))
        if differences:
            raise BatchResumeMismatchError(self.output, differences)

    def _remember(self, table: pa.Table) -> None:
        written = table.select(["path", "duration_s", "error"]).to_pydict()
        for path, seconds, error in zip(written["path"], written["duration_s"], written["error"], strict=True):
            self._latest[path] = (seconds or 0.0, error is not None)

    def parts(self) -> list[Path]:
        """The finished parts, in order."""
        return _parts(self.output)

    def written(self, path: str) -> bool:
        """Whether the parts hold a row for ``path``."""
        return path in self._latest

    def failed(self, path: str) -> bool:
        """Whether the last row the parts hold for ``path`` has its ``error`` set."""
        return self._latest.get(path, (0.0, False))[1]

    def done_seconds(self, paths: Sequence[str]) -> float:
        """Audio seconds of the last rows the parts hold for ``paths`` (0 for a path they lack)."""
        return sum(self._latest.get(path, (0.0, False))[0] for path in paths)

    def write(self, table: pa.Table) -> Path:
        """Write ``table`` as the next part, atomically and durably (:func:`voicehub.core.files.atomic_write`).

        Raises:
            OutputPathError: if the part cannot be written, or its name is taken by a special file
                (nothing is left behind).
        """
        import pyarrow.parquet as pq

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
        self._remember(table)
        return target

    def totals(self) -> tuple[int, int, float]:
        """``(inputs, failed inputs, audio hours)`` over every part, from the last row of each path."""
        latest = self._latest.values()
        return len(self._latest), sum(failed for _, failed in latest), sum(s for s, _ in latest) / 3600.0

    def write_summary(self, summary: BatchSummary) -> Path:
        """Write ``summary.json`` atomically and durably (:func:`voicehub.core.files.write_text_atomic`).

        Raises:
            OutputPathError: if it cannot be written, or ``summary.json`` is a special file.
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
    for stray in [*directory.glob(".part-*.tmp"), *directory.glob(f".{SUMMARY_FILE_NAME}.tmp")]:
        stray.unlink(missing_ok=True)  # older versions' names: never renamed, so never counted
    names = {match.group(1) for item in directory.iterdir() if (match := _LEFTOVER.match(item.name))}
    for name in sorted(names):
        remove_leftovers(directory, name)


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
    """Every input's row in a job's output as one table, sorted by ``path``.

    One row per input path: the last one written. An input that failed and succeeded when a
    resumed job ran it again has its error row superseded by the later part's row.

    Raises:
        OutputPathError: if ``output`` holds no part.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = Path(output)
    parts = _parts(directory) if directory.is_dir() else []
    if not parts:
        raise OutputPathError(f"{directory} holds no batch output part (part-*.parquet)", path=directory)
    wanted = None if not columns else list(dict.fromkeys(["path", *columns]))
    table = pa.concat_tables([pq.read_table(part, columns=wanted) for part in parts])  # in the order written
    order = pa.array(range(table.num_rows), pa.int64())
    last = table.select(["path"]).append_column("row", order).group_by("path").aggregate([("row", "max")])
    table = table.take(last.column("row_max")).sort_by("path")  # the last row of each path
    return table if not columns else table.select(list(columns))


__all__ = ["STEPS_METADATA_KEY", "SUMMARY_FILE_NAME", "BatchSummary", "PartWriter", "read_output"]
