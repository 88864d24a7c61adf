"""Every shell and Python example in README.md and docs/*.md runs as written, on the repository's own files.

Blocks fenced as ``bash``, ``sh``, ``shell``, ``console`` or ``python`` are examples; every one of
them runs (no subset, no skip list): new pages under ``docs/`` are picked up by the glob. Other
fences (no language, ``text``, ``json``, ``toml``) are diagrams, output or file formats and are not
run.

* ``bash``/``sh``/``shell``: the block runs in ``bash -euo pipefail``.
* ``console``: each ``$ `` line is a command; the lines after it, up to the next command, are its
  expected output, compared line by line (a trailing ``...`` line allows more output).
* ``python``: the page's Python examples run one after the other in one interpreter per page
  (``docs_examples_runner.py``: each in a fresh ``__main__``, the process state put back after it),
  so torch, the library and its loaded files start once per page instead of once per example. A
  block preceded by the line ``<!-- example: own process ... -->`` (the rest of the comment says
  why) runs in a fresh interpreter of its own: it changes what stays in the process (a global
  registration) or needs a real ``__main__`` (worker processes re-import it).

Each runs in a scratch directory that holds links to the repository's top-level entries (so
``tests/data/...`` paths and the tool configuration work, and files an example writes stay out of
the tree), with ``uv run`` pointed at this workspace (``UV_PROJECT``, the lock frozen), the
workspace's mypy and ruff caches, and no model hub.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_LANGUAGES = {"bash": "shell", "sh": "shell", "shell": "shell", "console": "console", "python": "python"}
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^```\s*$", re.S | re.M)
OWN_PROCESS = re.compile(r"<!-- example: own process\b[^\n]*-->\s*")
RUNNER = Path(__file__).with_name("docs_examples_runner.py")
NOT_LINKED = {".git", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache", "dist"}
TIMEOUT_S = 300


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    kind: str
    body: str
    own_process: bool = False

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
                line = text.count("\n", 0, match.start()) + 1
                line_before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
                own_process = OWN_PROCESS.fullmatch(line_before) is not None
                found.append(Example(page, line, kind, match.group("body"), own_process))
    return found


EXAMPLES = _examples()


def _link_repository(directory: Path) -> Path:
    for entry in ROOT.iterdir():
        if entry.name not in NOT_LINKED:
            (directory / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return directory


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return _link_repository(tmp_path)


def _in_shared_process(example: Example) -> bool:
    return example.kind == "python" and not example.own_process


class SharedPageRuns:
    """The shared-process Python examples of the selected pages, run in a background thread.

    One runner process per page (``docs_examples_runner.py``), the pages one after another in page
    order, starting when the first example test asks: meanwhile pytest runs the shell and console
    examples, each a fresh process, so the two streams of work overlap (the examples are mostly
    single-threaded interpreter start-up and model loading; CI runs on 2 cores). A Python example's
    test waits for its page's runner and reads its own outcome.
    """

    def __init__(self, pages: list[Path], factory: pytest.TempPathFactory) -> None:
        self._jobs = {page: self._prepare(page, factory.mktemp(page.stem)) for page in pages}
        self._outcomes: dict[Path, dict[str, dict[str, object]]] = {}
        self._failures: dict[Path, str] = {}
        self._done = {page: threading.Event() for page in pages}
        self._thread = threading.Thread(target=self._run_all, name="docs-examples", daemon=True)
        self._thread.start()

    @staticmethod
    def _prepare(page: Path, work: Path) -> Path:
        jobs = []
        for example in EXAMPLES:
            if example.page == page and _in_shared_process(example):
                cwd = work / f"line{example.line}"
                cwd.mkdir()
                _link_repository(cwd)
                jobs.append({"name": example.name, "body": example.body, "cwd": str(cwd)})
        (work / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
        return work

    def _run_all(self) -> None:
        for page, work in self._jobs.items():
            try:
                count = len(json.loads((work / "jobs.json").read_text(encoding="utf-8")))
                command = [sys.executable, str(RUNNER), str(work / "jobs.json"), str(work / "results.json")]
                result = _run(command, ROOT, timeout_s=TIMEOUT_S * count)
                if result.returncode != 0 or not (work / "results.json").exists():
                    self._failures[page] = f"the runner of {page.name} failed:\n{result.stdout}\n{result.stderr}"
                else:
                    self._outcomes[page] = json.loads((work / "results.json").read_text(encoding="utf-8"))
            except Exception as error:  # reported by the page's tests, not lost in this thread
                self._failures[page] = f"the runner of {page.name} raised {error!r}"
            finally:
                self._done[page].set()

    def outcome(self, example: Example) -> dict[str, object]:
        """The example's ``{"ok", "output", "seconds"}``, once its page's runner has finished."""
        waited = self._done[example.page].wait(timeout=TIMEOUT_S * len(EXAMPLES))
        assert waited, f"the runner of {example.page.name} did not finish"
        assert example.page not in self._failures, self._failures[example.page]
        return self._outcomes[example.page][example.name]

    def close(self) -> None:
        self._thread.join()


@pytest.fixture(scope="session")
def shared_page_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedPageRuns]:
    """Runs the selected tests' pages (only theirs, so ``-k`` stays quick) in the background."""
    selected = [item.callspec.params.get("example") for item in request.session.items if hasattr(item, "callspec")]
    shared = {example.page for example in selected if isinstance(example, Example) and _in_shared_process(example)}
    pages = [page for page in PAGES if page in shared]
    runs = SharedPageRuns(pages, tmp_path_factory)
    yield runs
    runs.close()


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", UV_PROJECT=str(ROOT), UV_FROZEN="1", NO_COLOR="1", COLUMNS="120")
    env.update(MYPY_CACHE_DIR=str(ROOT / ".mypy_cache"), RUFF_CACHE_DIR=str(ROOT / ".ruff_cache"))
    env.pop("VIRTUAL_ENV", None)
    env.pop("UV_LOCKED", None)  # CI exports it; uv refuses it together with UV_FROZEN
    bin_dir = str(Path(sys.executable).parent)  # `voicehub` and `python` of this environment
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return env


def _run(command: list[str], cwd: Path, *, timeout_s: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=_environment(), capture_output=True, text=True, timeout=timeout_s)


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


def test_the_marked_examples_run_in_processes_of_their_own() -> None:
    own = {example.page.name for example in EXAMPLES if example.own_process}
    assert "batch.md" in own, own  # map_corpus's workers re-import __main__
    assert all(example.kind == "python" for example in EXAMPLES if example.own_process)


def test_the_shared_runner_isolates_one_example_from_the_next(tmp_path: Path) -> None:
    first, second, third = (tmp_path / name for name in ("first", "second", "third"))
    for directory in (first, second, third):
        directory.mkdir()
    jobs = [
        {
            "name": "first",
            "cwd": str(first),
            "body": (
                "import os, sys\nassert __name__ == '__main__'\nos.environ['LEAK'] = '1'\nsys.argv.append('x')\n"
                "class Kept: pass\nimport pickle\nassert pickle.loads(pickle.dumps(Kept())).__class__ is Kept\n"
                "open('out.txt', 'w').write('1')\nprint('hello')"
            ),
        },
        {"name": "second", "cwd": str(second), "body": "raise ValueError('expected failure')"},
        {
            "name": "third",
            "cwd": str(third),
            "body": (
                "import os, sys\nassert 'LEAK' not in os.environ\nassert sys.argv == ['-c']\n"
                "assert 'Kept' not in globals()\nassert os.getcwd() == "
                + repr(str(third))
                + "\nimport sys\nsys.exit(0)"
            ),
        },
    ]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    result = _run([sys.executable, str(RUNNER), str(tmp_path / "jobs.json"), str(tmp_path / "results.json")], ROOT)
    assert result.returncode == 0, result.stderr
    outcomes = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert [outcomes[name]["ok"] for name in ("first", "second", "third")] == [True, False, True], outcomes
    assert outcomes["first"]["output"] == "hello\n"
    assert "ValueError: expected failure" in outcomes["second"]["output"]
    assert (first / "out.txt").read_text() == "1"


@pytest.mark.slow  # the whole set takes minutes on a loaded 2-core host; still part of the default run
@pytest.mark.parametrize("example", EXAMPLES, ids=[example.name for example in EXAMPLES])
def test_example_runs_as_written(
    example: Example,
    scratch: Path,
    shared_page_runs: SharedPageRuns,
) -> None:
    if _in_shared_process(example):
        outcome = shared_page_runs.outcome(example)
        assert outcome["ok"], f"{example.name} failed (in its page's shared process):\n{outcome['output']}"
    elif example.kind == "python":
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
