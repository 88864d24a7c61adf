"""The benchmark results files and the documentation tables generated from them agree.

``benchmarks/results/*.jsonl`` hold every recorded or transcribed run; ``benchmarks/report.py``
writes each page's table from the latest run. These tests load both modules from ``benchmarks/``
(plain scripts, standard library only) and compare what the script would write with the pages.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def _load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


RESULTS = _load("_results")  # report.py imports it by this name, as when run as a script
REPORT = _load("report")


@pytest.fixture(scope="module")
def report() -> ModuleType:
    return REPORT


RESULT_FILES = sorted((BENCHMARKS / "results").glob("*.jsonl"))


@pytest.mark.parametrize("path", RESULT_FILES, ids=[path.name for path in RESULT_FILES])
def test_every_results_object_has_the_schema_fields(path: Path, report: ModuleType) -> None:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert lines, f"{path.name} is empty"
    for number, line in enumerate(lines, start=1):
        item = json.loads(line)
        report.check_object(item, f"{path.name}:{number}")
        assert item["benchmark"] == path.stem, f"{path.name}:{number} names benchmark {item['benchmark']!r}"
        assert (BENCHMARKS / f"{item['benchmark']}.py").is_file(), f"no script benchmarks/{item['benchmark']}.py"


@pytest.mark.parametrize("table", [pytest.param(t, id=f"{t.page}:{t.benchmark}") for t in REPORT.TABLES])
def test_each_pages_results_table_is_what_the_script_generates(table: object, report: ModuleType) -> None:
    page = ROOT / table.page  # type: ignore[attr-defined]
    text = page.read_text(encoding="utf-8")
    assert report.rewritten(text, table) == text, (
        f"{table.page}'s {table.benchmark} table differs from benchmarks/results; "  # type: ignore[attr-defined]
        "run `uv run python benchmarks/report.py`"
    )


def test_the_table_shows_the_files_latest_run(
    report: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fields = {key: None for key in RESULTS.FIELDS}
    rows = [
        fields
        | {"schema_version": 1, "benchmark": "tts_speed", "run": run, "source": "recorded", "date": "2026-12-04"}
        | {"parameters": {"case": case, "setting": "defaults"}, "results": {"best_ratio": ratio}}
        for run, case, ratio in (("old", "short", 1.5), ("new", "short", 0.91), ("new", "paragraph", 0.875))
    ]
    (tmp_path / "tts_speed.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    monkeypatch.setattr(report, "RESULTS_DIR", tmp_path)
    table = next(t for t in report.TABLES if t.benchmark == "tts_speed")
    lines = report.render(table).splitlines()
    assert lines[0].startswith("Latest run `new` of `benchmarks/tts_speed.py` (recorded by the script): 2026-12-04")
    assert "All 2 runs" in lines[0]
    assert [line.split(" | ")[:3] for line in lines[4:]] == [
        ["| short", "defaults", "0.91"],
        ["| paragraph", "defaults", "0.875"],
    ]


def test_a_prose_row_must_name_its_page(report: ModuleType) -> None:
    item = {key: None for key in RESULTS.FIELDS} | {
        "schema_version": 1,
        "source": "prose",
        "parameters": {},
        "results": {},
    }
    with pytest.raises(ValueError, match="transcribed_from"):
        report.check_object(item, "x.jsonl:1")
