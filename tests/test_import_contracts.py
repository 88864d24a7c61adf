"""The import contracts catch a planted upward import and a framework import in the core layer."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _copy_tree(tmp_path: Path) -> Path:
    """Copy what the contracts read (.importlinter and every member's src/) into tmp_path."""
    shutil.copy2(ROOT / ".importlinter", tmp_path / ".importlinter")
    for src in sorted(ROOT.glob("packages/*/src")):
        shutil.copytree(src, tmp_path / src.relative_to(ROOT), ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "lint_imports.py"), "--root", str(root), "--no-logo"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _core(root: Path) -> Path:
    return root / "packages" / "voicehub-core" / "src" / "voicehub" / "core"


def test_repository_keeps_every_contract() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_planted_upward_import_breaks_the_layers_contract(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    (_core(root) / "_planted.py").write_text('"""planted"""\n\nimport voicehub.optimization\n')
    result = _lint(root)
    assert result.returncode == 1
    assert "Layers: a layer imports only the layers below it" in result.stdout
    assert "voicehub.core._planted -> voicehub.optimization (l.3)" in result.stdout


def test_planted_top_level_api_import_is_refused(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    registry = root / "packages" / "voicehub-registry" / "src" / "voicehub" / "registry"
    (registry / "_planted.py").write_text("import voicehub\n\nVERSION = voicehub.__name__\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "voicehub.registry._planted is not allowed to import voicehub" in result.stdout


@pytest.mark.parametrize("module", ["torch", "h5py"])
def test_planted_framework_import_in_core_is_refused(tmp_path: Path, module: str) -> None:
    root = _copy_tree(tmp_path)
    planted = f'"""planted"""\n\nfrom __future__ import annotations\n\nimport {module}\n'
    (_core(root) / "_planted.py").write_text(planted)
    result = _lint(root)
    assert result.returncode == 1
    assert "The core layer imports no torch and no h5py" in result.stdout
    assert f"voicehub.core._planted -> {module} (l.5)" in result.stdout


@pytest.mark.parametrize("where", ["batch/corpus.py", "models/_planted.py"])
def test_planted_ray_import_outside_the_ray_engine_is_refused(tmp_path: Path, where: str) -> None:
    root = _copy_tree(tmp_path)
    target = root / "packages" / "voicehub" / "src" / "voicehub" / where
    text = target.read_text() if target.exists() else '"""planted"""\n'
    target.write_text(text + "\nimport ray.data  # planted\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "Only voicehub.batch._ray imports ray" in result.stdout
    module = "voicehub." + where.removesuffix(".py").replace("/", ".")
    assert f"{module} -> ray" in result.stdout
