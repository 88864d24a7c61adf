"""Run import-linter over the whole ``voicehub`` namespace of the uv workspace.

Why a wrapper: every member ships a PEP 420 portion (``voicehub/core/``, ...) in its own
``packages/<member>/src``, and the meta-package owns ``voicehub/__init__.py`` (with
``pkgutil.extend_path``). grimp, import-linter's graph builder, scans only the directory that
``importlib.util.find_spec("voicehub")`` reports -- the meta-package's -- so a plain
``lint-imports`` sees only the meta-package. This script overlays every member's ``src/`` into
one temporary tree (refusing two members that ship the same file), puts it first on
``PYTHONPATH`` and runs lint-imports there with the repository's ``.importlinter``.

Usage: ``uv run python tools/lint_imports.py [--root DIR] [lint-imports options]``.
``--root`` lints another checkout (the contract tests use it on a planted copy).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    root = ROOT
    if argv[:1] == ["--root"]:
        root, argv = Path(argv[1]).resolve(), argv[2:]
    with tempfile.TemporaryDirectory(prefix="voicehub-lint-") as tmp:

        def copy_new(src: str, dst: str) -> str:
            if os.path.exists(dst):
                rel = os.path.relpath(dst, tmp)
                raise SystemExit(f"lint_imports: {rel} is shipped by two members (again in {src})")
            return str(shutil.copy2(src, dst))

        for src in sorted(root.glob("packages/*/src")):
            shutil.copytree(
                src,
                tmp,
                dirs_exist_ok=True,
                copy_function=copy_new,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "py.typed"),
            )
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tmp, env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()"]
        config = str(root / ".importlinter")
        return subprocess.call([*cmd, config, "--no-cache", *argv], env=env, cwd=root)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
