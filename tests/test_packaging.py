"""Every member builds; the core and optimization wheels install and import without the meta-package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MEMBERS = sorted(p.parent.name for p in ROOT.glob("packages/*/pyproject.toml"))

pytestmark = pytest.mark.skipif(shutil.which("uv") is None, reason="needs the uv command (pip install uv)")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        ["uv", "build", "--all-packages", "--wheel", "--out-dir", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


def test_every_member_builds_a_wheel(wheels: Path) -> None:
    built = sorted(p.name.split("-")[0].replace("_", "-") for p in wheels.glob("*.whl"))
    assert built == MEMBERS
    assert len(MEMBERS) == 8


def test_member_wheels_hold_only_their_own_portion(wheels: Path) -> None:
    import zipfile

    (core,) = wheels.glob("voicehub_core-*.whl")
    names = zipfile.ZipFile(core).namelist()
    assert "voicehub/core/__init__.py" in names and "voicehub/core/py.typed" in names
    assert not any(n == "voicehub/__init__.py" for n in names)


def test_core_and_optimization_wheels_install_and_import_alone(wheels: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    subprocess.run(["uv", "venv", "--python", sys.executable, str(venv)], check=True, capture_output=True, env=env)
    python = venv / "bin" / "python"
    subprocess.run(
        [
            "uv",
            "pip",
            "install",
            "--python",
            str(python),
            "--find-links",
            str(wheels),
            "voicehub-core",
            "voicehub-optimization",
        ],
        check=True,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    probe = (
        "import importlib.util, voicehub, voicehub.core, voicehub.optimization\n"
        "assert voicehub.__file__ is None, voicehub.__file__\n"  # a namespace: no meta-package
        "assert importlib.util.find_spec('voicehub.cli') is None\n"
        "assert importlib.util.find_spec('voicehub.training') is None\n"
        "print(voicehub.core.__file__)\n"
    )
    result = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert str(venv) in result.stdout
