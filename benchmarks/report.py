"""Rewrite the results table of each documentation page from ``benchmarks/results/*.jsonl``.

Each page named in :data:`TABLES` holds one block per table between ``<!-- results:NAME start -->``
and ``<!-- results:NAME end -->`` (NAME: the benchmark's, or the table's ``marker``); this script
replaces the block with the latest run of that benchmark's results file (the rows of the file's
last ``run``): a line saying when, where and on which code it ran, and the table. Earlier runs
stay in the file, not on the page.

Usage: ``uv run python benchmarks/report.py`` (rewrites the blocks) or ``--check`` (changes
nothing; exit status 1 and the stale pages listed when a block differs from what the files give;
``tests/test_benchmark_results.py`` runs the same comparison).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _results import FIELDS, RESULTS_DIR, ROOT, SCHEMA_VERSION, read_results


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float | int):
        return f"{value:g}"
    if isinstance(value, list):
        if len(value) == 2 and all(isinstance(item, float | int) for item in value):
            return f"{_cell(value[0])}-{_cell(value[1])}"
        return ", ".join(_cell(item) for item in value)
    return str(value).replace("|", "/")


def field(path: str) -> Callable[[dict[str, Any]], str]:
    """A column reading one key: ``"parameters.case"``, ``"results.native_rtf_min"``."""

    def read(row: dict[str, Any]) -> str:
        value: Any = row
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        return _cell(value)

    return read


def pair(first: str, second: str) -> Callable[[dict[str, Any]], str]:
    """A column of two keys shown ``a / b`` (a minimum and a median)."""
    read_first, read_second = field(first), field(second)

    def read(row: dict[str, Any]) -> str:
        a, b = read_first(row), read_second(row)
        return "-" if a == b == "-" else f"{a} / {b}"

    return read


def with_interval(value: str, interval: str) -> Callable[[dict[str, Any]], str]:
    """A column ``value [low-high]`` (a median and its 95 % interval)."""
    read_value, read_interval = field(value), field(interval)

    def read(row: dict[str, Any]) -> str:
        text, bounds = read_value(row), read_interval(row)
        return text if bounds == "-" else f"{text} [{bounds}]"

    return read


def each(path: str) -> Callable[[dict[str, Any]], str]:
    """A column of a list shown item by item, ``a / b`` (the wall times of each round)."""

    def read(row: dict[str, Any]) -> str:
        value: Any = row
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        return " / ".join(_cell(item) for item in value) if isinstance(value, list) else _cell(value)

    return read


@dataclass(frozen=True)
class Table:
    """One page's table: which benchmark's latest run, which columns.

    ``where``: only the rows whose parameters have these values (one benchmark serving two pages,
    ``long_file_memory``'s ``vad`` and ``embed`` commands); the latest run is taken among them.
    ``marker``: the block's name on the page (default: the benchmark's).
    """

    page: str
    benchmark: str
    columns: tuple[tuple[str, Callable[[dict[str, Any]], str]], ...]
    where: tuple[tuple[str, Any], ...] = ()
    marker: str = ""

    @property
    def name(self) -> str:
        return self.marker or self.benchmark

    def selects(self, row: dict[str, Any]) -> bool:
        return all(row["parameters"].get(key) == value for key, value in self.where)


TABLES = (
    Table(
        "docs/tts.md",
        "tts_speed",
        (
            ("case", field("parameters.case")),
            ("setting", field("parameters.setting")),
            ("native/ORT, best", field("results.best_ratio")),
            (
                "native/ORT, paired median [95 %]",
                with_interval("results.paired_median_ratio", "results.paired_median_ratio_ci95"),
            ),
            (
                "batched / ORT one by one, min / median",
                pair("results.batched_over_ort_min", "results.batched_over_ort_median"),
            ),
            ("ORT RTF min / median", pair("results.ort_rtf_min", "results.ort_rtf_median")),
            ("native RTF min / median", pair("results.native_rtf_min", "results.native_rtf_median")),
        ),
    ),
    Table(
        "docs/tts.md",
        "tts_long_text_memory",
        (
            ("text", field("parameters.style")),
            ("words", field("parameters.words")),
            ("audio s", field("results.audio_s")),
            ("peak RSS MB", field("results.peak_rss_mb")),
        ),
    ),
    Table(
        "docs/asr.md",
        "asr_speed",
        (
            ("case", field("parameters.case")),
            ("native RTF min / median", pair("results.native_rtf_min", "results.native_rtf_median")),
            (
                "faster-whisper RTF min / median",
                pair("results.reference_rtf_min", "results.reference_rtf_median"),
            ),
            ("ratio min", field("results.ratio_min")),
            ("ratio median", field("results.ratio_median")),
        ),
    ),
    Table(
        "docs/vad.md",
        "vad_speed",
        (
            ("weights", field("parameters.weights")),
            ("implementation", field("parameters.implementation")),
            ("time s, min / median", pair("results.seconds", "results.median_seconds")),
            ("RTF", field("results.rtf")),
            (
                "x upstream JIT, min / median",
                pair("results.speedup_vs_upstream_jit", "results.median_speedup_vs_upstream_jit"),
            ),
            (
                "x upstream ONNX, min / median",
                pair("results.speedup_vs_upstream_onnx", "results.median_speedup_vs_upstream_onnx"),
            ),
            ("same segments", field("results.same_segments_as_upstream_jit")),
        ),
    ),
    Table(
        "docs/vad.md",
        "long_file_memory",
        (
            ("minutes", field("parameters.minutes")),
            ("peak RSS MB", field("results.peak_rss_mb")),
            ("wall s", field("results.wall_s")),
        ),
        where=(("command", "vad"),),
        marker="long_file_memory:vad",
    ),
    Table(
        "docs/vad.md",
        "vad_process",
        (
            ("clip", field("parameters.clip")),
            ("rounds", field("parameters.repeats")),
            ("upstream / voicehub, min", field("results.upstream_over_voicehub_min")),
            ("upstream / voicehub, median", field("results.upstream_over_voicehub_median")),
        ),
    ),
    Table(
        "docs/speaker.md",
        "long_file_memory",
        (
            ("minutes", field("parameters.minutes")),
            ("peak RSS MB", field("results.peak_rss_mb")),
            ("wall s", field("results.wall_s")),
        ),
        where=(("command", "embed"),),
        marker="long_file_memory:embed",
    ),
    Table(
        "docs/speaker.md",
        "ge2e_speed",
        (
            ("step", field("parameters.step")),
            ("upstream / native, min", field("results.speedup_min")),
            ("upstream / native, median", field("results.speedup_median")),
            ("max \\|diff\\|", field("results.max_abs_diff")),
        ),
    ),
    Table(
        "docs/hyperion.md",
        "hyperion_speed",
        (
            ("step", field("parameters.step")),
            ("upstream s", field("results.upstream_s")),
            ("VoiceHub s", field("results.voicehub_s")),
            ("speed-up", field("results.speedup")),
            ("max \\|diff\\|", field("results.max_abs_diff")),
        ),
    ),
    Table(
        "docs/moonshine.md",
        "moonshine_speed",
        (
            ("clip", field("parameters.clip")),
            ("onnxruntime RTF, min", field("results.ort_rtf_min")),
            ("native RTF, min", field("results.native_rtf_min")),
            ("onnxruntime / native, min", field("results.speedup_min")),
        ),
    ),
    Table(
        "docs/batch.md",
        "batch_throughput",
        (
            ("engine", field("parameters.engine")),
            ("wall s, per round", each("results.wall_s")),
            ("files/s, best", field("results.files_per_s_best")),
            ("x plain, min / median", pair("results.x_plain_min", "results.x_plain_median")),
            ("x plain once running", field("results.x_plain_once_running")),
            ("start-up s, per round", each("results.startup_s")),
        ),
    ),
    Table(
        "docs/vits.md",
        "vits_speed",
        (
            ("setting", field("parameters.setting")),
            ("threads", field("threads")),
            (
                "short: ORT / native RTF",
                pair("results.short_ort_rtf_min", "results.short_native_rtf_min"),
            ),
            ("short native/ORT", field("results.short_best_ratio")),
            ("long: ORT / native RTF", pair("results.long_ort_rtf_min", "results.long_native_rtf_min")),
            ("long native/ORT", field("results.long_best_ratio")),
            (
                "16, s per sentence: ORT / native",
                pair("results.sixteen_ort_s_per_sentence_min", "results.sixteen_native_s_per_sentence_min"),
            ),
            ("16: native batched", field("results.sixteen_native_batched_s_per_sentence_min")),
        ),
    ),
    Table(
        "docs/optimization.md",
        "optimization_passes",
        (
            ("model", field("parameters.model")),
            ("pass", field("parameters.pass")),
            ("outcome", field("results.outcome")),
            ("eager ms", field("results.eager_ms")),
            ("optimized ms", field("results.optimized_ms")),
            ("speed ratio", field("results.speed_ratio")),
            ("output difference", field("results.output_difference")),
            ("note", field("results.pass_note")),
        ),
    ),
)


def start_marker(name: str) -> str:
    return f"<!-- results:{name} start -->"


def end_marker(name: str) -> str:
    return f"<!-- results:{name} end -->"


def check_object(item: dict[str, Any], where: str) -> None:
    """Raise ``ValueError`` when an object lacks a field of :data:`_results.FIELDS` or has a wrong type."""
    missing = [key for key in FIELDS if key not in item]
    if missing:
        raise ValueError(f"{where}: missing {missing}; every object has {list(FIELDS)}")
    if item["schema_version"] != SCHEMA_VERSION:
        raise ValueError(f"{where}: schema_version {item['schema_version']!r}, expected {SCHEMA_VERSION}")
    if item["source"] not in ("recorded", "prose"):
        raise ValueError(f"{where}: source {item['source']!r}, expected 'recorded' or 'prose'")
    if item["source"] == "prose" and not item.get("transcribed_from"):
        raise ValueError(f"{where}: a row transcribed from prose names its page in 'transcribed_from'")
    if not isinstance(item["parameters"], dict) or not isinstance(item["results"], dict):
        raise ValueError(f"{where}: 'parameters' and 'results' are objects")


def selected_rows(table: Table) -> list[dict[str, Any]]:
    """The rows of ``benchmarks/results/<benchmark>.jsonl`` that ``table`` shows runs of, in file order."""
    return [row for row in read_results(RESULTS_DIR / f"{table.benchmark}.jsonl") if table.selects(row)]


def latest_run(table: Table) -> list[dict[str, Any]]:
    """The rows of the last run among :func:`selected_rows`, in file order."""
    rows = selected_rows(table)
    if not rows:
        raise ValueError(f"benchmarks/results/{table.benchmark}.jsonl holds no run for {table.page}")
    last = rows[-1]["run"]
    return [row for row in rows if row["run"] == last]


def _load(row: dict[str, Any]) -> str:
    load = row["load_average"]
    if load is None:
        return "not recorded"
    return _cell(load[0]) if isinstance(load, list) and len(set(load)) == 1 else _cell(load)


def _threads(rows: list[dict[str, Any]]) -> str:
    counts = sorted({row["threads"] for row in rows if row["threads"] is not None})
    return ", ".join(str(count) for count in counts) if counts else "-"


def render(table: Table) -> str:
    """The block's text (without the markers) for ``table``."""
    rows = latest_run(table)
    first = rows[0]
    how = (
        f"transcribed from the prose of {first['transcribed_from']}"
        if first["source"] == "prose"
        else "recorded by the script"
    )
    runs = len({row["run"] for row in selected_rows(table)})
    date = first["date"] or "date not recorded"
    lines = [
        f"Latest run `{first['run']}` of `benchmarks/{table.benchmark}.py` ({how}): {date}"
        f"{' ' + first['time_utc'] + ' UTC' if first['time_utc'] else ''}, commit {_cell(first['commit'])}, "
        f"CPU {_cell(first['cpu'])} ({_cell(first['cpu_count'])} cores), threads {_threads(rows)}, "
        f"load average {_load(first)}, Python {_cell(first['python'])}, torch {_cell(first['torch'])}. "
        f"All {runs} runs: `benchmarks/results/{table.benchmark}.jsonl`.",
        "",
        "| " + " | ".join(header for header, _ in table.columns) + " |",
        "|" + "---|" * len(table.columns),
    ]
    lines += ["| " + " | ".join(read(row) for _, read in table.columns) + " |" for row in rows]
    return "\n".join(lines)


def rewritten(text: str, table: Table) -> str:
    """``text`` (a page) with its block for ``table`` replaced; ``ValueError`` without the markers."""
    start, end = start_marker(table.name), end_marker(table.name)
    head, found, rest = text.partition(start)
    _, found_end, tail = rest.partition(end)
    if not (found and found_end):
        raise ValueError(f"{table.page} lacks the markers {start} ... {end}")
    return f"{head}{start}\n{render(table)}\n{end}{tail}"


def stale_pages() -> list[str]:
    """Pages whose block differs from what the results files give."""
    stale = []
    for table in TABLES:
        page = ROOT / table.page
        text = page.read_text(encoding="utf-8")
        if rewritten(text, table) != text:
            stale.append(table.page)
    return stale


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a page's table is stale")
    args = parser.parse_args()
    for path in sorted(RESULTS_DIR.glob("*.jsonl")):
        for number, item in enumerate(read_results(path), start=1):
            check_object(item, f"{path.relative_to(ROOT)}:{number}")
    if args.check:
        stale = stale_pages()
        for page in stale:
            print(f"{page}: its results table differs from benchmarks/results (run benchmarks/report.py)")
        return 1 if stale else 0
    for table in TABLES:
        page = ROOT / table.page
        text = page.read_text(encoding="utf-8")
        new = rewritten(text, table)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"updated {table.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
