"""Provider-independence policy: shared VoiceHub code never branches on a model's name.

Shared behaviour must resolve capabilities, protocols or declarative registry metadata
instead of comparing provider names (seed 001, "Library architecture"; DESIGN.md section 2).
This AST checker collects every registered model type and alias from the live registry (so
it grows with the catalog and with run-time extensions), scans every shared module, i.e.
every ``voicehub`` module outside ``voicehub/architectures/<family>/`` and
``voicehub/models/<name>/``, and reports each use of a name in:

* the test of an ``if``, a conditional expression, a ``while`` or an ``assert``;
* any comparison (``==``, ``!=``, ``in``, ``not in``...), including tuple/list/set operands;
* a comprehension filter;
* a ``match`` case pattern or guard;
* a string test: ``startswith`` / ``endswith`` / ``removeprefix`` / ``removesuffix`` / ``find`` /
  ``index`` / ``count`` / ``__contains__`` with a name, or with a prefix/suffix of a name of
  at least three characters (``"vad_"``);
* a dict-literal lookup dispatching on a name: ``{...}[key]`` / ``{...}.get(key)`` on a literal
  whose keys are names, or on a module-level variable bound to such a literal whose values
  are code (functions, classes, lambdas) rather than data.

Names may appear in declarative catalogs, provenance and licence records (dict and tuple
literals, keyword arguments, ``ModelSpec(...)`` calls).

Usage: ``uv run python tools/provider_policy.py [--root DIR] [--extra-name NAME ...]``.
Prints ``path:line:col provider construct`` per violation; exits 1 when there are any.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STRING_TESTS = frozenset(
    {
        "startswith",
        "endswith",
        "removeprefix",
        "removesuffix",
        "find",
        "rfind",
        "index",
        "rindex",
        "count",
        "__contains__",
    }
)
MIN_AFFIX = 3


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, order=True)
class Violation:
    """One forbidden use of a provider name.

    Attributes:
        path: file, relative to the scanned root.
        line: 1-based line number.
        column: 1-based column number.
        provider: the registered name that was used.
        construct: what kind of branch used it ("if", "compare", "match", ...).
    """

    path: str
    line: int
    column: int
    provider: str
    construct: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column} {self.provider} {self.construct}"


def collect_provider_names() -> frozenset[str]:
    """Every registered model type and alias, plus architecture ids and aliases, from the live registries.

    Importing the meta-package queues the built-in catalogs; reading the catalogs loads them
    and the entry-point plug-ins, exactly as users see them, so the policy grows with the
    registry (a model registered at run time counts too).
    """
    import voicehub  # noqa: F401  (queues the built-in model and architecture catalogs)
    from voicehub.registry import ARCHITECTURE_CATALOG, MODEL_CATALOG

    names: set[str] = set()
    for registry in (MODEL_CATALOG, ARCHITECTURE_CATALOG):
        names.update(registry.names())
        names.update(registry.aliases)
    return frozenset(name.lower() for name in names if name)


def shared_modules(root: Path) -> Iterator[Path]:
    """Every ``voicehub`` module that is not model-local code.

    Model-local code is ``voicehub/architectures/<family>/...`` and ``voicehub/models/<name>/...``;
    files directly in ``voicehub/architectures/`` or ``voicehub/models/`` (catalogs) are shared.
    """
    for path in sorted(root.glob("packages/*/src/voicehub/**/*.py")):
        parts = path.parts[path.parts.index("voicehub", path.parts.index("src")) + 1 :]
        if len(parts) >= 3 and parts[0] in ("architectures", "models"):
            continue
        yield path


def _string_constants(node: ast.AST, *, inside_compare: bool = False) -> Iterator[ast.Constant]:
    """String constants under ``node``, not descending into nested comparisons.

    A comparison is reported once, as ``compare``, by its own visit.
    """
    if isinstance(node, ast.Compare) and not inside_compare:
        return
    stack = [node]
    while stack:
        child = stack.pop()
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            yield child
        stack.extend(c for c in ast.iter_child_nodes(child) if not isinstance(c, ast.Compare))


class _Checker(ast.NodeVisitor):
    def __init__(self, names: frozenset[str], path: str) -> None:
        self.names = names
        self.path = path
        self.violations: list[Violation] = []
        self.dispatch_tables: set[str] = set()

    # -- helpers -----------------------------------------------------------------
    def _name_of(self, value: str) -> str | None:
        key = value.strip().lower()
        return key if key in self.names else None

    def _report(self, node: ast.AST, provider: str, construct: str) -> None:
        line = getattr(node, "lineno", 0)
        column = getattr(node, "col_offset", -1) + 1
        self.violations.append(
            Violation(path=self.path, line=line, column=column, provider=provider, construct=construct)
        )

    def _scan(self, node: ast.AST | None, construct: str) -> None:
        if node is None:
            return
        for constant in _string_constants(node, inside_compare=construct == "compare"):
            name = self._name_of(str(constant.value))
            if name is not None:
                self._report(constant, name, construct)

    def _keys_are_names(self, node: ast.Dict) -> bool:
        return any(
            isinstance(key, ast.Constant) and isinstance(key.value, str) and self._name_of(key.value)
            for key in node.keys
        )

    # -- module-level dispatch tables ----------------------------------------------
    def visit_Module(self, node: ast.Module) -> None:
        for statement in node.body:
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(statement, ast.Assign):
                targets, value = list(statement.targets), statement.value
            elif isinstance(statement, ast.AnnAssign):
                targets, value = [statement.target], statement.value
            if isinstance(value, ast.Dict) and self._keys_are_names(value):
                holds_code = any(isinstance(v, (ast.Name, ast.Attribute, ast.Lambda)) for v in value.values)
                if holds_code:
                    self.dispatch_tables.update(t.id for t in targets if isinstance(t, ast.Name))
        self.generic_visit(node)

    # -- branches ---------------------------------------------------------------------
    def visit_If(self, node: ast.If) -> None:
        self._scan(node.test, "if")
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._scan(node.test, "conditional-expression")
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self._scan(node.test, "while")
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._scan(node.test, "assert")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        self._scan(node, "compare")
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        for condition in node.ifs:
            self._scan(condition, "comprehension-filter")
            self.visit(condition)
        self.visit(node.iter)

    def visit_match_case(self, node: ast.match_case) -> None:
        self._scan(node.pattern, "match")
        self._scan(node.guard, "match-guard")
        if node.guard is not None:
            self.visit(node.guard)
        for statement in node.body:
            self.visit(statement)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in STRING_TESTS:
            for argument in node.args:
                for constant in _string_constants(argument):
                    provider = self._affix_of(str(constant.value), func.attr)
                    if provider is not None:
                        self._report(constant, provider, f"string-test:{func.attr}")
        if isinstance(func, ast.Attribute) and func.attr == "get" and self._is_dispatch_table(func.value):
            self._report(node, self._table_name(func.value), "dict-dispatch")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load) and self._is_dispatch_table(node.value):
            self._report(node, self._table_name(node.value), "dict-dispatch")
        self.generic_visit(node)

    # -- dispatch helpers -------------------------------------------------------------
    def _affix_of(self, value: str, method: str) -> str | None:
        key = value.strip().lower()
        if not key:
            return None
        if key in self.names:
            return key
        if len(key) < MIN_AFFIX:
            return None
        for name in sorted(self.names):
            if method in ("endswith", "removesuffix") and name.endswith(key):
                return name
            if method not in ("endswith", "removesuffix") and name.startswith(key):
                return name
        return None

    def _is_dispatch_table(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Dict):
            return self._keys_are_names(node)
        return isinstance(node, ast.Name) and node.id in self.dispatch_tables

    def _table_name(self, node: ast.expr) -> str:
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    name = self._name_of(key.value)
                    if name:
                        return name
        return node.id if isinstance(node, ast.Name) else "?"


def scan_source(source: str, path: str, names: Iterable[str]) -> list[Violation]:
    """Check one module's source text.

    Args:
        source: Python source.
        path: the path to report.
        names: provider names (model types, aliases); compared case-insensitively.

    Returns:
        The violations, sorted by position.
    """
    checker = _Checker(frozenset(n.lower() for n in names), path)
    checker.visit(ast.parse(source, filename=path))
    return sorted(set(checker.violations))


def scan_tree(root: Path, names: Iterable[str]) -> list[Violation]:
    """Check every shared module under ``root`` (a checkout of the workspace)."""
    frozen = frozenset(names)
    out: list[Violation] = []
    for path in shared_modules(root):
        out.extend(scan_source(path.read_text(encoding="utf-8"), str(path.relative_to(root)), frozen))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="workspace checkout to scan")
    parser.add_argument("--extra-name", action="append", default=[], help="treat NAME as a provider name too")
    args = parser.parse_args(argv)
    names = collect_provider_names() | {n.lower() for n in args.extra_name}
    violations = scan_tree(args.root, names)
    for violation in violations:
        print(violation)
    modules = sum(1 for _ in shared_modules(args.root))
    status = "FAILED" if violations else "passed"
    print(f"provider policy {status}: {len(violations)} violation(s) in {modules} shared modules, {len(names)} names")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
