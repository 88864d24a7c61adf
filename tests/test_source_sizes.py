"""No source file of a workspace member grows past 800 lines (STYLE: a model reads in one ``model.py``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 800


def test_no_source_file_under_packages_src_is_longer_than_800_lines() -> None:
    sources = sorted(ROOT.glob("packages/*/src/**/*.py"))
    assert len(sources) > 50  # the glob found the tree
    sizes = {path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines()) for path in sources}
    too_long = {path: lines for path, lines in sizes.items() if lines > MAX_LINES}
    assert not too_long, f"split these modules along a seam (at most {MAX_LINES} lines each): {too_long}"
