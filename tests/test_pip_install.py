"""A plain ``pip install`` of the built wheels into a fresh ``python -m venv`` (no uv) runs every default model.

What a pip user does (README, "Install the built wheels with pip"): build the wheels, then install
them by file name, because the name ``voicehub`` on the public index belongs to another project.
Here only the meta-package's wheel is named; its layers and weights come from ``--find-links``
through its declared dependencies (pinned to the built versions), so an undeclared one is missing
and the run fails. ``--only-binary :all:`` makes pip refuse any sdist, so a dependency on the
``webrtcvad`` sdist (whose build breaks ``import webrtcvad``) fails too.

How torch is obtained, without the 3 GB CUDA download from PyPI: a local CPU wheel from pip's own
``find-links`` setting (``/opt/wheels`` on the project's machines, where CI runs), installed by
path; without one, the CPU build from PyTorch's index (``download.pytorch.org/whl/cpu``). The
test skips only when there is neither a local wheel nor a route to that index. Everything else
comes from the indexes pip is configured with.

The same venv first receives the ``voicehub-optimization`` wheel alone, to show that it pulls in
no hub client and no other layer.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parents[1]
LIBRIVOX = ROOT / "tests" / "data" / "librivox"
CLIP = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"
OTHER_CLIP = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0930.wav"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
HUB_CLIENTS = {"huggingface-hub", "hf-xet"}
META_VERSION = tomllib.loads((ROOT / "packages/voicehub/pyproject.toml").read_text())["project"]["version"]


def _run(args: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 900) -> str:
    result = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    assert result.returncode == 0, f"{shlex.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _find_links(pip: Path, env: dict[str, str], cwd: Path) -> list[Path]:
    """The local directories in pip's ``find-links`` setting (environment and configuration files)."""
    listing = _run([str(pip), "config", "list"], env=env, cwd=cwd)
    directories = []
    for line in listing.splitlines():
        key, _, value = line.partition("=")
        if key.split(".")[-1] == "find-links":
            for item in value.strip().strip("'\"").split():
                path = Path(item.removeprefix("file://"))
                if path.is_dir():
                    directories.append(path)
    return directories


def _local_torch_wheel(directories: list[Path]) -> Path | None:
    """A torch wheel this interpreter can install, preferring a CPU build."""
    supported = set(sys_tags())
    found = []
    for directory in directories:
        for wheel in directory.glob("torch-*.whl"):
            name, version, _, tags = parse_wheel_filename(wheel.name)
            if name == "torch" and tags & supported:
                found.append((version.local == "cpu", version, wheel))
    return max(found)[2] if found else None


def _reachable(url: str) -> bool:
    host = url.split("/")[2]
    try:
        with socket.create_connection((host, 443), timeout=5):
            return True
    except OSError:
        return False


def _installed(python: Path, env: dict[str, str], cwd: Path) -> dict[str, str]:
    listing = _run([str(python), "-m", "pip", "list", "--format", "json"], env=env, cwd=cwd)
    return {str(canonicalize_name(row["name"])): row["version"] for row in json.loads(listing)}


@pytest.mark.slow  # about 60 s: a venv, torch and about 40 wheels, four command-line runs
def test_pip_installed_wheels_run_the_default_models(built_wheels: Path, tmp_path: Path) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not key.startswith("UV_")
    }
    env.update(HF_HUB_OFFLINE="1", PYTHONNOUSERSITE="1")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], env=env, cwd=tmp_path)
    python, pip = venv / "bin" / "python", venv / "bin" / "pip"
    install = [str(pip), "install", "--no-compile", "--only-binary", ":all:", "--disable-pip-version-check"]

    torch_wheel = _local_torch_wheel(_find_links(pip, env, tmp_path))
    if torch_wheel is not None:
        _run([*install, str(torch_wheel)], env=env, cwd=tmp_path)
    elif _reachable(TORCH_CPU_INDEX):
        _run([*install, "--index-url", TORCH_CPU_INDEX, "torch"], env=env, cwd=tmp_path)
    else:
        pytest.skip(f"no local torch wheel in pip's find-links and {TORCH_CPU_INDEX} is unreachable")
    torch_version = _installed(python, env, tmp_path)["torch"]
    # Pins: torch stays the CPU build (never PyPI's CUDA one); each workspace name resolves to the built wheel.
    pins = [f"torch=={torch_version}"]
    for path in sorted(built_wheels.glob("*.whl")):
        name, version, _, _ = parse_wheel_filename(path.name)
        pins.append(f"{name}=={version}")
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    install += ["--constraint", str(constraints), "--find-links", str(built_wheels)]

    def wheel(name: str) -> str:
        (path,) = built_wheels.glob(f"{name}-*.whl")
        return str(path)

    # The optimization layer alone: itself and the core it declares, no registry, no hub client.
    _run([*install, wheel("voicehub_optimization")], env=env, cwd=tmp_path)
    alone = _installed(python, env, tmp_path)
    assert {name for name in alone if name.startswith("voicehub")} == {"voicehub-core", "voicehub-optimization"}
    assert not alone.keys() & HUB_CLIENTS, sorted(alone)

    # The meta-package: every layer and the default weights through its declared dependencies.
    _run([*install, wheel("voicehub")], env=env, cwd=tmp_path)
    everything = _installed(python, env, tmp_path)
    members = {str(parse_wheel_filename(path.name)[0]) for path in built_wheels.glob("*.whl")}
    assert members <= everything.keys(), sorted(members - everything.keys())
    assert everything["torch"] == torch_version
    assert "webrtcvad-wheels" in everything and "webrtcvad" not in everything  # the prebuilt module, never the sdist
    assert "resemblyzer" not in everything  # the GE2E weights come from voicehub-ge2e-weights
    voicehub = str(venv / "bin" / "voicehub")
    assert _run([voicehub, "--version"], env=env, cwd=tmp_path).strip() == f"voicehub, version {META_VERSION}"

    models = {row["model_type"]: row for row in json.loads(_run([voicehub, "models", "--json"], env=env, cwd=tmp_path))}
    assert models["vad_silero"]["weights"] == models["sv_ge2e"]["weights"] == "offline"

    (vad,) = json.loads(_run([voicehub, "vad", str(CLIP), "--json"], env=env, cwd=tmp_path))
    assert vad["metadata"]["model_version"] == "v6"
    assert [(s["start_s"], s["end_s"]) for s in vad["segments"]] == [(0.226, 2.878)]  # as in the README

    verify = json.loads(_run([voicehub, "verify", str(CLIP), str(OTHER_CLIP), "--json"], env=env, cwd=tmp_path))
    from voicehub import AutoModel  # the same clips through the workspace's own install, in this process

    expected = AutoModel.from_pretrained(model_type="sv_ge2e", device="cpu").verify(CLIP, OTHER_CLIP)
    assert verify["scoring"] == "cosine"
    assert verify["score"] == pytest.approx(expected.score, abs=1e-5)
    assert verify["score"] == pytest.approx(0.7533, abs=1e-4)  # same reader: above the 0.73 threshold
    assert verify["is_same_speaker"] is True


def test_the_default_pytest_run_includes_slow_tests() -> None:
    # CI runs plain `uv run pytest`: the slow pip test above is part of it unless addopts deselects it.
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert not any(option == "-m" or option.startswith("-m ") for option in options["addopts"])
    assert any(marker.startswith("slow:") for marker in options["markers"])
