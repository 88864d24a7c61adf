"""Fixtures of the cross-package tests: the workspace's wheels, built once per session."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def built_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding one wheel per workspace member (``uv build --all-packages --wheel``)."""
    if shutil.which("uv") is None:
        pytest.skip("needs the uv command to build the wheels (pip install uv)")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        ["uv", "build", "--all-packages", "--wheel", "--out-dir", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out
