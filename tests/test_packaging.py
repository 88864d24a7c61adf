"""Every member builds a wheel; the optimization wheel installs and imports without the meta-package or a hub client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
MEMBER_DIRS = sorted(p.parent for pattern in WORKSPACE["members"] for p in ROOT.glob(f"{pattern}/pyproject.toml"))
MEMBERS = sorted(tomllib.loads((d / "pyproject.toml").read_text())["project"]["name"] for d in MEMBER_DIRS)
HUB_CLIENTS = {"huggingface-hub", "hf-xet"}
"""Distributions that talk to a model hub; a layer that does not load hub checkpoints must not pull them in."""

pytestmark = pytest.mark.skipif(shutil.which("uv") is None, reason="needs the uv command (pip install uv)")


def _wheel_name(path: Path) -> str:
    return str(canonicalize_name(path.name.split("-")[0]))


def test_every_member_builds_a_wheel(built_wheels: Path) -> None:
    built = sorted(_wheel_name(p) for p in built_wheels.glob("*.whl"))
    assert built == MEMBERS
    assert len([d for d in MEMBER_DIRS if d.parent.name == "packages"]) == 8  # the designed layers + meta-package


def test_member_wheels_hold_only_their_own_portion_and_the_licence(built_wheels: Path) -> None:
    (core,) = built_wheels.glob("voicehub_core-*.whl")
    names = zipfile.ZipFile(core).namelist()
    assert "voicehub/core/__init__.py" in names and "voicehub/core/py.typed" in names
    assert not any(n == "voicehub/__init__.py" for n in names)
    licence = (ROOT / "LICENSE").read_bytes()
    for wheel in built_wheels.glob("*.whl"):
        archive = zipfile.ZipFile(wheel)
        shipped = [n for n in archive.namelist() if ".dist-info/licenses/" in n and n.endswith("LICENSE")]
        assert len(shipped) == 1, (wheel.name, shipped)
        if not wheel.name.startswith("voicehub_ge2e_weights-"):  # ships the weights' upstream licence text
            assert archive.read(shipped[0]) == licence, wheel.name


def test_weights_wheel_ships_the_upstream_file_its_licence_and_notice(built_wheels: Path) -> None:
    import hashlib

    (weights,) = built_wheels.glob("voicehub_ge2e_weights-*.whl")
    archive = zipfile.ZipFile(weights)
    data = archive.read("voicehub_ge2e_weights/pretrained.pt")
    assert hashlib.sha256(data).hexdigest() == "39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e"
    names = archive.namelist()
    notice = next(n for n in names if n.endswith(".dist-info/licenses/NOTICE"))
    assert b"Copyright 2019 Resemble.AI" in archive.read(notice)
    licence = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert b"Apache License" in archive.read(licence) and b"Copyright 2019 Resemble.AI" in archive.read(licence)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    assert b"License-Expression: Apache-2.0" in archive.read(metadata)


def test_optimization_wheel_installs_and_imports_alone_without_a_hub_client(built_wheels: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    subprocess.run(["uv", "venv", "--python", sys.executable, str(venv)], check=True, capture_output=True, env=env)
    python = venv / "bin" / "python"
    subprocess.run(
        ["uv", "pip", "install", "--python", str(python), "--find-links", str(built_wheels), "voicehub-optimization"],
        check=True,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    listing = subprocess.run(
        ["uv", "pip", "list", "--python", str(python), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    installed = {str(canonicalize_name(row["name"])) for row in json.loads(listing.stdout)}
    assert {name for name in installed if name.startswith("voicehub")} == {"voicehub-core", "voicehub-optimization"}
    assert not installed & HUB_CLIENTS, sorted(installed)
    probe = (
        "import importlib.util, voicehub, voicehub.core, voicehub.optimization\n"
        "assert voicehub.__file__ is None, voicehub.__file__\n"  # a namespace: no meta-package
        "assert importlib.util.find_spec('voicehub.cli') is None\n"
        "assert importlib.util.find_spec('voicehub.registry') is None\n"
        "assert importlib.util.find_spec('voicehub.training') is None\n"
        "print(voicehub.core.__file__, voicehub.optimization.__version__)\n"
    )
    result = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    location, version = result.stdout.split()
    assert location.startswith(str(venv))
    pyproject = tomllib.loads((ROOT / "packages/voicehub-optimization/pyproject.toml").read_text())
    assert version == pyproject["project"]["version"]
