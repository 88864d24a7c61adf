"""The output directory of a corpus job: Parquet parts written atomically, resume, and the summary.

Layout of ``output/``::

    part-000000.parquet   one part per finished batch (rows of the worker's schema)
    part-000001.parquet
    ...
    summary.json          files, audio hours, failures, the steps' models and this run's throughput

Each part is written to a hidden temporary file in the same directory, flushed to disk, then
renamed into place (``os.replace``), so a part is either complete or absent: a job killed at any
moment leaves whole parts and, at worst, a stray ``.part-*.tmp`` that the next run deletes. Only
the driver writes, so a path is written once per run; with ``resume=True`` the paths already in
the parts are skipped, so a killed and restarted job writes every input exactly once.

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
from voicehub.core.files import check_output_directory
from voicehub.errors import BatchResumeMismatchError

if TYPE_CHECKING:
    import pyarrow as pa

SUMMARY_FILE_NAME = "summary.json"
"""The job summary inside the output directory."""

STEPS_METADATA_KEY = b"voicehub.batch.steps"
"""The Parquet schema metadata key of each part: the JSON list of the steps that wrote it."""

_PART = re.compile(r"^part-(\d{6,})\.parquet$")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BatchSummary:
    """What a corpus job's output directory holds, and how fast this run went.

    Attributes:
        output: the output directory.
        files: rows in the output (every input written so far, this run and earlier ones).
        failures: rows whose ``error`` is set.
        audio_hours: total duration of the readable files, in hours.
        processed_files: files written by this run.
        processed_audio_hours: audio hours written by this run.
        skipped_files: inputs skipped because an earlier run wrote them (``resume=True``).
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
    """Writes a job's Parquet parts into ``output`` and remembers which paths they hold.

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
        for stray in self.output.glob(".part-*.tmp"):  # left by a killed run: never renamed, so never counted
            stray.unlink()
        parts = self.parts()
        if parts and not resume:
            raise OutputPathError(
                f"batch output directory {self.output} already holds {len(parts)} part(s); pass resume=True "
                f"(command line: --resume) to continue that job, or choose an empty directory",
                path=self.output,
            )
        self.done: set[str] = set()
        self._done_s: dict[str, float] = {}  # audio seconds of each path in the parts (0 when unreadable)
        for part in parts:
            found = pq.read_schema(part)
            if found.names != schema.names:
                raise OutputPathError(
                    f"{part} holds columns {found.names}, this job writes {schema.names}; resume with the same "
                    f"steps, or write into another directory",
                    path=part,
                )
            self._check_steps(part, found)
            written = pq.read_table(part, columns=["path", "duration_s"]).to_pydict()
            self._done_s.update(zip(written["path"], (d or 0.0 for d in written["duration_s"]), strict=True))
        self.done.update(self._done_s)
        self._next = max((int(_PART.match(p.name).group(1)) for p in parts), default=-1) + 1  # type: ignore[union-attr]

    def _check_steps(self, part: Path, found: pa.Schema) -> None:
        recorded = (found.metadata or {}).get(STEPS_METADATA_KEY)
        saved = json.loads(recorded) if recorded is not None else None
        differences = tuple(_differences(saved, self.steps, "steps"))
        if differences:
            raise BatchResumeMismatchError(self.output, differences)

    def parts(self) -> list[Path]:
        """The finished parts, in order."""
        return sorted(path for path in self.output.iterdir() if _PART.match(path.name))

    def done_seconds(self, paths: Sequence[str]) -> float:
        """Audio seconds of those of ``paths`` the parts already held when this writer opened them."""
        return sum(self._done_s.get(path, 0.0) for path in paths)

    def write(self, table: pa.Table) -> Path:
        """Write ``table`` as the next part, atomically (temporary file, fsync, rename).

        Raises:
            OutputPathError: if the part cannot be written (nothing is left behind).
        """
        import pyarrow.parquet as pq

        target = self.output / f"part-{self._next:06d}.parquet"
        staging = self.output / f".part-{self._next:06d}.tmp"
        try:
            with open(staging, "wb") as file:
                pq.write_table(table.cast(self.schema), file)
                file.flush()
                os.fsync(file.fileno())
            os.replace(staging, target)
        except OSError as err:
            staging.unlink(missing_ok=True)
            raise OutputPathError(f"cannot write {target}: {err}", path=target) from err
        self._next += 1
        self.done.update(table.column("path").to_pylist())
        return target

    def totals(self) -> tuple[int, int, float]:
        """``(rows, failed rows, audio hours)`` over every part."""
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        rows = failures = 0
        seconds = 0.0
        for part in self.parts():
            table = pq.read_table(part, columns=["duration_s", "error"])
            rows += table.num_rows
            failures += table.num_rows - table.column("error").null_count
            seconds += float(pc.sum(table.column("duration_s")).as_py() or 0.0)
        return rows, failures, seconds / 3600.0

    def write_summary(self, summary: BatchSummary) -> Path:
        """Write ``summary.json`` atomically."""
        target = self.output / SUMMARY_FILE_NAME
        staging = self.output / f".{SUMMARY_FILE_NAME}.tmp"
        staging.write_text(json.dumps(summary.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(staging, target)
        return target


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


def read_output(output: str | os.PathLike[str], columns: Sequence[str] | None = None) -> pa.Table:
    """Every part of a job's output as one table, sorted by ``path``.

    Raises:
        OutputPathError: if ``output`` holds no part.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = Path(output)
    parts = sorted(p for p in directory.glob("part-*.parquet") if _PART.match(p.name)) if directory.is_dir() else []
    if not parts:
        raise OutputPathError(f"{directory} holds no batch output part (part-*.parquet)", path=directory)
    table = pa.concat_tables([pq.read_table(p, columns=list(columns) if columns else None) for p in parts])
    return table.sort_by("path")


__all__ = ["STEPS_METADATA_KEY", "SUMMARY_FILE_NAME", "BatchSummary", "PartWriter", "read_output"]
