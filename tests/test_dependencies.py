"""Each workspace member declares exactly what its source uses, read from the tree.

The source of every member (``src/**/*.py``, found by globbing, so moved files are followed) is
parsed with ``ast``. A *use* is:

* an ``import`` / ``from ... import`` (skipped under ``if TYPE_CHECKING:``); inside a ``try`` that
  catches ``ImportError`` it is optional;
* ``import_optional("x", ...)`` or ``importlib.import_module("x")`` with a literal (or module
  constant) name: optional, imported on use;
* a ``"voicehub.x.y:attr"`` reference string: a module the library resolves at run time;
* a data distribution: ``DistributionSource(distribution="x")`` (optional when its ``install_hint``
  installs an extra, ``pip install "voicehub[x]"``) or ``importlib.metadata.distribution("x")``
  (optional inside a ``try`` that catches ``PackageNotFoundError``).

Import names map to distributions through the member that owns the ``voicehub.*`` module, or
``importlib.metadata.packages_distributions()`` for third-party ones. The rules:

1. every required use is in ``dependencies``; every optional use in ``dependencies`` or an extra;
2. every ``dependencies`` entry is used; the meta-package may list every layer without importing
   it (installing ``voicehub`` installs all layers); every extra's entry is used, or names an
   extra of a sibling the member uses;
3. sibling requirements are ranges that admit the sibling's version, and name extras it has;
4. an ``all`` extra is the union of the other extras.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
MEMBER_DIRS = sorted(p.parent for pattern in WORKSPACE["members"] for p in ROOT.glob(f"{pattern}/pyproject.toml"))
PROJECTS = {
    str(canonicalize_name(project["project"]["name"])): (directory, project)
    for directory in MEMBER_DIRS
    for project in [tomllib.loads((directory / "pyproject.toml").read_text())]
}
MODULE_OWNERS = sorted(
    ((project["tool"]["uv"]["build-backend"]["module-name"], name) for name, (_, project) in PROJECTS.items()),
    key=lambda pair: -len(pair[0]),
)
META = "voicehub"
STANDARD_LIBRARY = set(sys.stdlib_module_names) | {"__future__"}
REFERENCE = re.compile(r"^(voicehub(?:\.\w+)+):[A-Za-z_][\w.]*$")
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}
MISSING_DISTRIBUTION_ERRORS = {"PackageNotFoundError"}
EXTRA_HINT = re.compile(r"pip install \S*\[[\w-]+\]")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Use:
    """One place where a member's source needs a module or a distribution's files."""

    kind: str  # "module" (an import name) or "distribution" (files read through importlib.metadata)
    name: str
    optional: bool
    where: str


def _caught(handler: ast.ExceptHandler) -> set[str]:
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = set()
    for node in types:
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return names


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        prefix = func.value
        if isinstance(prefix, ast.Attribute) and isinstance(prefix.value, ast.Name):
            return f"{prefix.value.id}.{prefix.attr}.{func.attr}"
        if isinstance(prefix, ast.Name):
            return f"{prefix.id}.{func.attr}"
        return func.attr
    return ""


class _Scanner(ast.NodeVisitor):
    def __init__(self, label: str, constants: dict[str, str]) -> None:
        self.label = label
        self.constants = constants
        self.guards: list[set[str]] = []  # exception names caught by the enclosing try blocks
        self.checked: list[set[str]] = [set()]  # per function: top-level modules import_optional found
        self.uses: list[Use] = []

    def _add(self, kind: str, name: str, node: ast.AST, *, optional: bool) -> None:
        where = f"{self.label}:{getattr(node, 'lineno', 0)}"
        self.uses.append(Use(kind=kind, name=name, optional=optional, where=where))

    def _guarded(self, errors: set[str]) -> bool:
        return any(guard & errors for guard in self.guards)

    def _text(self, node: ast.expr | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        return None

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            for child in node.orelse:
                self.visit(child)
            return  # imports for the type checker only
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        self.guards.append(set().union(*(_caught(h) for h in node.handlers)) if node.handlers else set())
        for child in node.body:
            self.visit(child)
        self.guards.pop()
        for child in [*node.handlers, *node.orelse, *node.finalbody]:
            self.visit(child)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.checked.append(set())
        self.generic_visit(node)
        self.checked.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _import(self, module: str, node: ast.stmt) -> None:
        # Optional: guarded by `except ImportError`, or after import_optional of the same package in this function.
        optional = self._guarded(IMPORT_ERRORS) or module.split(".")[0] in self.checked[-1]
        self._add("module", module, node, optional=optional)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module is not None:
            self._import(node.module, node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _call_name(node)
        first = self._text(node.args[0]) if node.args else None
        if name.split(".")[-1] in ("import_optional", "import_module") and first is not None:
            self._add("module", first, node, optional=True)
            self.checked[-1].add(first.split(".")[0])
        elif name in ("importlib.metadata.distribution", "metadata.distribution") and first is not None:
            self._add("distribution", first, node, optional=self._guarded(MISSING_DISTRIBUTION_ERRORS))
        elif name.split(".")[-1] == "DistributionSource":
            # Optional when its install hint installs an extra (`pip install "voicehub[whisper-base]"`).
            hint = next((self._text(k.value) for k in node.keywords if k.arg == "install_hint"), None)
            optional = hint is not None and EXTRA_HINT.search(hint) is not None
            for keyword in node.keywords:
                value = self._text(keyword.value) if keyword.arg == "distribution" else None
                if value is not None:
                    self._add("distribution", value, node, optional=optional)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and (match := REFERENCE.match(node.value)):
            self._add("module", match.group(1), node, optional=False)


def scan_source(text: str, label: str) -> list[Use]:
    """The uses in one module's source (see the module docstring)."""
    tree = ast.parse(text)
    constants = {
        target.id: statement.value.value
        for statement in tree.body
        if isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
        for target in statement.targets
        if isinstance(target, ast.Name)
    }
    scanner = _Scanner(label, constants)
    scanner.visit(tree)
    return scanner.uses


def member_uses(directory: Path) -> Iterator[Use]:
    for path in sorted((directory / "src").rglob("*.py")):
        yield from scan_source(path.read_text(), str(path.relative_to(ROOT)))


@functools.cache
def _packages_distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distribution_of(use: Use) -> str | None:
    """The distribution that provides a use, ``None`` for the standard library.

    Raises:
        AssertionError: for a third-party module that is not installed here (it cannot be mapped).
    """
    if use.kind == "distribution":
        return str(canonicalize_name(use.name))
    top = use.name.split(".")[0]
    if top in STANDARD_LIBRARY:
        return None
    if top == "voicehub":
        for module, owner in MODULE_OWNERS:
            if use.name == module or use.name.startswith(module + "."):
                return owner
    candidates = _packages_distributions().get(top)
    assert candidates, f"{use.where}: {use.name} is not installed in the development environment; add it"
    names = sorted({str(canonicalize_name(c)) for c in candidates})
    return names[0] if len(names) == 1 else "|".join(names)


def _matches(provider: str, declared: set[str]) -> bool:
    return any(option in declared for option in provider.split("|"))


def _requirements(values: list[str]) -> list[Requirement]:
    return [Requirement(value) for value in values]


def check_member(name: str) -> list[str]:
    """Every rule of the module docstring, for one member; returns the broken ones as sentences."""
    directory, project = PROJECTS[name]
    required = _requirements(project["project"].get("dependencies", []))
    extras = {key: _requirements(values) for key, values in project["project"].get("optional-dependencies", {}).items()}
    required_names = {str(canonicalize_name(r.name)) for r in required}
    extra_names = {str(canonicalize_name(r.name)) for reqs in extras.values() for r in reqs}
    problems = []
    used: set[str] = set()
    for use in member_uses(directory):
        provider = distribution_of(use)
        if provider is None or provider == name:
            continue
        used.update(provider.split("|"))
        if use.optional and not _matches(provider, required_names | extra_names):
            problems.append(f"{name}: {use.where} uses {use.name} ({provider}) on demand; declare it in an extra")
        elif not use.optional and not _matches(provider, required_names):
            problems.append(f"{name}: {use.where} needs {use.name} ({provider}); declare it in dependencies")
    for requirement in required:
        dependency = str(canonicalize_name(requirement.name))
        umbrella = name == META and dependency in PROJECTS and dependency.startswith("voicehub-")
        if dependency not in used and not umbrella:
            problems.append(f"{name}: declares {requirement} but its source never uses {dependency}")
    for extra, requirements in extras.items():
        for requirement in requirements:
            dependency = str(canonicalize_name(requirement.name))
            if dependency not in used:
                problems.append(f"{name}[{extra}]: {requirement} is not used by the source")
    for requirement in [*required, *(r for reqs in extras.values() for r in reqs)]:
        dependency = str(canonicalize_name(requirement.name))
        if dependency not in PROJECTS:
            continue
        sibling = PROJECTS[dependency][1]["project"]
        if not (requirement.specifier and requirement.specifier.contains(sibling["version"])):
            problems.append(f"{name}: {requirement} must be a range that admits {dependency} {sibling['version']}")
        if requirement.specifier and all(spec.operator == "==" for spec in requirement.specifier):
            problems.append(f"{name}: {requirement} pins a sibling exactly; use a range")
        unknown = set(requirement.extras) - set(sibling.get("optional-dependencies", {}))
        if unknown:
            problems.append(f"{name}: {requirement} names extras {sorted(unknown)} that {dependency} does not have")
    if "all" in extras:
        union = {str(r) for key, reqs in extras.items() if key != "all" for r in reqs}
        if {str(r) for r in extras["all"]} != union:
            problems.append(f"{name}[all] must be the union of the other extras: {sorted(union)}")
    return problems


@pytest.mark.parametrize("member", sorted(PROJECTS))
def test_member_declares_exactly_what_its_source_uses(member: str) -> None:
    problems = check_member(member)
    assert not problems, "\n".join(problems)


def test_the_layers_named_in_issue_9_declare_only_their_real_siblings() -> None:
    def required(member: str) -> set[str]:
        return {str(canonicalize_name(Requirement(d).name)) for d in PROJECTS[member][1]["project"]["dependencies"]}

    assert not required("voicehub-optimization") & {"voicehub-registry", "voicehub-components"}
    assert "voicehub-components" not in required("voicehub-hyperion-serialization")
    assert "voicehub-optimization" not in required("voicehub-architectures")
    assert "matplotlib" not in required("voicehub-hyperion-serialization")
    hub_clients = {"huggingface-hub", "hf-xet"}
    assert [m for m in PROJECTS if required(m) & hub_clients] == []  # only through voicehub-registry[hub]


def test_scanner_classifies_required_optional_type_only_and_data_uses() -> None:
    source = """
from typing import TYPE_CHECKING
import numpy
from voicehub.core.lazy import import_optional
WEIGHTS = "some-weights"
if TYPE_CHECKING:
    import torch
try:
    import threadpoolctl
except ImportError:
    threadpoolctl = None
def plot():
    import_optional("matplotlib", purpose="plots")
    from matplotlib.figure import Figure
    return Figure
def scipy_user():
    from scipy import linalg
SOURCE = DistributionSource(distribution="silero-vad", path="x.jit")
def locate():
    try:
        return importlib.metadata.distribution(WEIGHTS)
    except importlib.metadata.PackageNotFoundError:
        return None
BUILDER = "voicehub.architectures.ge2e.model:GE2ESpeakerEncoder"
"""
    uses = {(u.kind, u.name, u.optional) for u in scan_source(source, "example.py")}
    assert uses == {
        ("module", "typing", False),
        ("module", "numpy", False),
        ("module", "voicehub.core.lazy", False),
        ("module", "threadpoolctl", True),
        ("module", "matplotlib", True),
        ("module", "matplotlib.figure", True),
        ("module", "scipy", False),
        ("distribution", "silero-vad", False),
        ("distribution", "some-weights", True),
        ("module", "voicehub.architectures.ge2e.model", False),
    }


def test_check_reports_an_undeclared_import_and_an_unused_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    directory, project = PROJECTS["voicehub-optimization"]
    edited = {**project, "project": {**project["project"], "dependencies": ["voicehub-core>=0.1,<0.2", "scipy>=1.11"]}}
    monkeypatch.setitem(PROJECTS, "voicehub-optimization", (directory, edited))
    problems = check_member("voicehub-optimization")
    assert any("needs torch (torch); declare it in dependencies" in p for p in problems), problems
    assert any("declares scipy>=1.11 but its source never uses scipy" in p for p in problems), problems
