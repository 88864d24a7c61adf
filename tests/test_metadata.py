"""Distribution metadata: one version, one Python range, the licence, classifiers, and READMEs whose examples run.

The version has one source per member, the ``version`` in its ``pyproject.toml``; the code reads
it back from the installed metadata (``voicehub.core.version.distribution_version``), so no
version literal exists in the source, and all members move in lockstep.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
ROOT_PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
WORKSPACE = ROOT_PROJECT["tool"]["uv"]["workspace"]
MEMBER_DIRS = sorted(p.parent for pattern in WORKSPACE["members"] for p in ROOT.glob(f"{pattern}/pyproject.toml"))
PROJECTS = {
    project["project"]["name"]: (directory, project["project"])
    for directory in MEMBER_DIRS
    for project in [tomllib.loads((directory / "pyproject.toml").read_text())]
}
VERSION = PROJECTS["voicehub"][1]["version"]
EXAMPLE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
NO_EXAMPLE: set[str] = set()
"""Members whose README has no example: a layer with no code yet (checked below to stay empty)."""


def test_every_member_has_the_same_version() -> None:
    versions = {name: project["version"] for name, (_, project) in PROJECTS.items()}
    assert set(versions.values()) == {VERSION}, versions


def test_no_version_literal_in_the_source() -> None:
    offenders = []
    for directory in MEMBER_DIRS:
        for path in sorted((directory / "src").rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and node.value == VERSION:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if (
                    isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
                    and isinstance(node.value, ast.Constant)
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} (__version__ literal)")
    assert offenders == [], "read the version with voicehub.core.version.distribution_version instead"


@pytest.mark.parametrize(
    ("module", "distribution"),
    [("voicehub", "voicehub"), ("voicehub.core", "voicehub-core"), ("voicehub.optimization", "voicehub-optimization")],
)
def test_version_attributes_come_from_the_installed_metadata(module: str, distribution: str) -> None:
    assert importlib.import_module(module).__version__ == PROJECTS[distribution][1]["version"] == VERSION


def test_every_member_has_the_licence_python_range_and_classifiers() -> None:
    requires_python = ROOT_PROJECT["project"]["requires-python"]
    admitted = {minor for minor in range(8, 20) if SpecifierSet(requires_python).contains(f"3.{minor}.0")}
    assert {11, 12, 13} <= admitted
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    assert SpecifierSet(lock["requires-python"]) == SpecifierSet(requires_python)
    for name, (directory, project) in PROJECTS.items():
        assert project["requires-python"] == requires_python, name
        assert project["license"] == "Apache-2.0", name
        for licence_file in project["license-files"]:
            assert (directory / licence_file).is_file(), (name, licence_file)
        assert (directory / project["readme"]).is_file(), name
        classifiers = project["classifiers"]
        minors = {
            int(c.rsplit(".", 1)[1])
            for c in classifiers
            if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
        }
        assert minors == admitted, (name, sorted(minors))
        assert not [c for c in classifiers if c.startswith("License ::")], name  # the SPDX expression says it
        assert project["description"] and project["keywords"], name


def test_code_members_link_the_repository_licence() -> None:
    licence = (ROOT / "LICENSE").read_text()
    assert licence.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in licence
    for directory in MEMBER_DIRS:
        if directory.parent.name == "packages":
            assert (directory / "LICENSE").read_text() == licence, directory.name


def test_members_without_an_example_still_have_no_code() -> None:
    for name in NO_EXAMPLE:
        directory, _ = PROJECTS[name]
        sources = sorted((directory / "src").rglob("*.py"))
        assert len(sources) == 1, f"{name} has code now: show an example in its README and drop it from NO_EXAMPLE"
        module = ast.parse(sources[0].read_text())
        names = [n for n in module.body if isinstance(n, ast.AnnAssign | ast.Assign)]
        assert all(isinstance(n.value, ast.List) and not n.value.elts for n in names), name  # __all__ = []


_RUN_EXAMPLES = """
import contextlib, io, json, sys, traceback
results = {}
for name, code in json.loads(sys.stdin.read()).items():
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"<{name} README example>", "exec"), {"__name__": "__main__"})
        results[name] = [out.getvalue(), None]
    except Exception:
        results[name] = [out.getvalue(), traceback.format_exc()]
print(json.dumps(results))
"""


def _example(member: str) -> tuple[str, list[str]]:
    """The README's one python example and the outputs its ``print(...)  # output`` comments promise."""
    directory, project = PROJECTS[member]
    examples = EXAMPLE.findall((directory / project["readme"]).read_text())
    assert len(examples) == 1, f"{member}: expected one python example in its README, found {len(examples)}"
    expected = []
    for line in examples[0].splitlines():
        if line.startswith("print("):
            assert "  # " in line, f"{member}: every print in the example shows its output as a comment: {line}"
            expected.append(line.rsplit("  # ", 1)[1])
    assert expected, f"{member}: the example prints nothing to check"
    return examples[0], expected


@pytest.fixture(scope="module")
def example_outputs() -> dict[str, list[str | None]]:
    """Every README example run in one fresh process (one torch import), each in its own namespace."""
    codes = {member: _example(member)[0] for member in sorted(set(PROJECTS) - NO_EXAMPLE)}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", _RUN_EXAMPLES],
        input=json.dumps(codes),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    outputs: dict[str, list[str | None]] = json.loads(result.stdout)
    return outputs


@pytest.mark.parametrize("member", sorted(set(PROJECTS) - NO_EXAMPLE))
@pytest.mark.slow
def test_readme_example_runs_and_prints_what_its_comments_say(
    member: str, example_outputs: dict[str, list[str | None]]
) -> None:
    _, expected = _example(member)
    stdout, error = example_outputs[member]
    assert error is None, error
    assert stdout is not None and stdout.splitlines() == expected
