"""Benchmark results as data: one JSON object per line in ``benchmarks/results/<benchmark>.jsonl``.

A benchmark script given ``--record`` appends its run there (:func:`record_run`), one object per
row of what it printed; ``benchmarks/report.py`` turns the latest run of each file into the table
of its documentation page. The files are the history: every run ever recorded, old runs included,
never rewritten.

One object (``schema_version`` 1):

* ``benchmark``: the script's name (``tts_speed``); ``run``: the run's id, shared by its rows
  (a UTC timestamp for recorded runs; the page's own run name, ``12e``, for transcribed ones);
* ``source``: ``"recorded"`` (written by the script) or ``"prose"`` (transcribed by hand from a
  page's text, with ``transcribed_from`` naming the page; fields the text did not state are
  ``null``);
* ``date`` (``YYYY-MM-DD``, UTC), ``time_utc`` (``HH:MM`` or a ``HH:MM-HH:MM`` span), ``commit``
  (abbreviated hash; ``-dirty`` when the tree had changes), ``cpu`` (model name), ``cpu_count``,
  ``load_average`` (the 1-minute figure at the start and the end: ``[start, end]``), ``python``,
  ``torch``, ``threads`` (intra-op threads the run asked for);
* ``parameters``: the benchmark's options and what identifies the row (``case``, ``text``...);
* ``results``: the row's numbers, units in the key names (``_s``, ``_ms``, ``_mb``); ratios are
  VoiceHub's over the reference's (< 1: VoiceHub faster) unless the key says otherwise; ``[low,
  high]`` pairs are intervals;
* ``note``: free text (what changed, what the run showed), may be absent.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
SCHEMA_VERSION = 1
FIELDS = (
    "schema_version",
    "benchmark",
    "run",
    "source",
    "date",
    "time_utc",
    "commit",
    "cpu",
    "cpu_count",
    "load_average",
    "python",
    "torch",
    "threads",
    "parameters",
    "results",
)
"""The keys every object has, in this order (``transcribed_from`` and ``note`` may follow)."""

Row = tuple[dict[str, Any], dict[str, Any]]
"""One row of a run: what identifies it (merged into the run's ``parameters``) and its ``results``."""


def add_record_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--record``: append the run to ``benchmarks/results/<benchmark>.jsonl``."""
    parser.add_argument(
        "--record",
        action="store_true",
        help="append this run to benchmarks/results/<benchmark>.jsonl (then run benchmarks/report.py)",
    )


def _commit() -> str | None:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty.stdout.strip() else "")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


class RunRecorder:
    """Notes the machine's state when a benchmark starts; :meth:`write` appends its rows when it ends.

    Args:
        benchmark: the script's name, also the file's (``benchmarks/results/<benchmark>.jsonl``).
        threads: intra-op threads the run uses (``None`` when the benchmark has no such setting).
        parameters: the run's options (``vars(args)`` without ``record``); every row carries them.
    """

    def __init__(self, benchmark: str, *, threads: int | None, parameters: dict[str, Any]) -> None:
        self.benchmark = benchmark
        self.threads = threads
        self.parameters = {key: value for key, value in parameters.items() if key != "record"}
        self.started = datetime.datetime.now(datetime.UTC)
        self.load_start = os.getloadavg()[0]

    def objects(self, rows: list[Row], note: str | None = None) -> list[dict[str, Any]]:
        """One object per ``(row parameters, row results)``, the run's fields filled in."""
        ended = datetime.datetime.now(datetime.UTC)
        run = {
            "schema_version": SCHEMA_VERSION,
            "benchmark": self.benchmark,
            "run": self.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "source": "recorded",
            "date": self.started.strftime("%Y-%m-%d"),
            "time_utc": f"{self.started:%H:%M}-{ended:%H:%M}",
            "commit": _commit(),
            "cpu": _cpu_model(),
            "cpu_count": os.cpu_count(),
            "load_average": [round(self.load_start, 2), round(os.getloadavg()[0], 2)],
            "python": platform.python_version(),
            "torch": _version("torch"),
            "threads": self.threads,
        }
        objects = [
            run | {"parameters": self.parameters | row_parameters, "results": _rounded(row_results)}
            for row_parameters, row_results in rows
        ]
        if note:
            for item in objects:
                item["note"] = note
        return objects

    def write(self, rows: list[Row], note: str | None = None) -> Path:
        """Append the rows to the benchmark's file; returns its path."""
        path = RESULTS_DIR / f"{self.benchmark}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(item, allow_nan=False) + "\n" for item in self.objects(rows, note))
        with path.open("a", encoding="utf-8") as file:
            file.write(lines)
        print(f"recorded {len(rows)} row(s) in {path.relative_to(ROOT)}; run benchmarks/report.py to update the docs")
        return path


def _rounded(value: Any) -> Any:
    """Floats to 4 significant digits (what the benchmarks print), in nested lists and dicts too."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(item) for item in value]
    return value


def read_results(path: Path) -> list[dict[str, Any]]:
    """The objects of one results file, in file order (oldest first)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
