"""Every shell and Python example in README.md and docs/*.md runs as written, on the repository's own files.

Blocks fenced as ``bash``, ``sh``, ``shell``, ``console`` or ``python`` are examples; every one of
them runs (no subset, no skip list): new pages under ``docs/`` are picked up by the glob. Other
fences (no language, ``text``, ``json``, ``toml``) are diagrams, output or file formats and are not
run.

* ``bash``/``sh``/``shell``: the block runs in ``bash -euo pipefail``.
* ``console``: each ``$ `` line is a command; the lines after it, up to the next command, are its
  expected output, compared line by line (a trailing ``...`` line allows more output).
* ``python``: the block runs in a fresh interpreter.

Each runs in a scratch directory that holds links to the repository's top-level entries (so
``tests/data/...`` paths and the tool configuration work, and files an example writes stay out of
the tree), with ``uv run`` pointed at this workspace (``UV_PROJECT``, the lock frozen), the
workspace's mypy and ruff caches, and no model hub.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_LANGUAGES = {"bash": "shell", "sh": "shell", "shell": "shell", "console": "console", "python": "python"}
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^```\s*$", re.S | re.M)
NOT_LINKED = {".git", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache", "dist"}
TIMEOUT_S = 300


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    kind: str
    body: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _examples() -> list[Example]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            kind = RUN_LANGUAGES.get(match.group("lang").lower())
            if kind is not None:
                found.append(Example(page, text.count("\n", 0, match.start()) + 1, kind, match.group("body")))
    return found


EXAMPLES = _examples()


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    for entry in ROOT.iterdir():
        if entry.name not in NOT_LINKED:
            (tmp_path / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return tmp_path


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", UV_PROJECT=str(ROOT), UV_FROZEN="1", NO_COLOR="1", COLUMNS="120")
    env.update(MYPY_CACHE_DIR=str(ROOT / ".mypy_cache"), RUFF_CACHE_DIR=str(ROOT / ".ruff_cache"))
    env.pop("VIRTUAL_ENV", None)
    env.pop("UV_LOCKED", None)  # CI exports it; uv refuses it together with UV_FROZEN
    bin_dir = str(Path(sys.executable).parent)  # `voicehub` and `python` of this environment
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return env


def _run(command: list[str], cwd: Path, *, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=_environment(), input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S
    )


def _console_steps(body: str) -> list[tuple[str, list[str]]]:
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
        else:
            raise AssertionError(f"console block starts with output, not a '$ ' command: {line!r}")
    return steps


def test_the_pages_hold_examples_of_every_kind() -> None:
    kinds = {example.kind for example in EXAMPLES}
    assert kinds == {"shell", "console", "python"}, kinds
    assert {example.page.name for example in EXAMPLES} >= {"README.md", "vad.md", "speaker.md", "hyperion.md"}


@pytest.mark.slow  # the whole set takes minutes on a loaded 2-core host; still part of the default run
@pytest.mark.parametrize("example", EXAMPLES, ids=[example.name for example in EXAMPLES])
def test_example_runs_as_written(example: Example, scratch: Path) -> None:
    if example.kind == "python":
        result = _run([sys.executable, "-c", example.body], scratch)
        assert result.returncode == 0, f"{example.name} failed:\n{result.stdout}\n{result.stderr}"
    elif example.kind == "shell":
        result = _run(["bash", "-euo", "pipefail", "-c", example.body], scratch)
        assert result.returncode == 0, f"{example.name} failed:\n{result.stdout}\n{result.stderr}"
    else:
        for command, expected in _console_steps(example.body):
            result = _run(["bash", "-euo", "pipefail", "-c", command], scratch)
            assert result.returncode == 0, f"{example.name}: `{command}` failed:\n{result.stdout}\n{result.stderr}"
            actual = result.stdout.splitlines()
            if expected and expected[-1].strip() == "...":
                expected = expected[:-1]
                actual = actual[: len(expected)]
            assert [line.rstrip() for line in actual] == [line.rstrip() for line in expected], (
                f"{example.name}: `{command}` printed something else than the page shows"
            )
