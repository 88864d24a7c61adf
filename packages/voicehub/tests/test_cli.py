"""voicehub models: lists registered specs (built-in, registered, plug-ins) with offline availability."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from voicehub import AutoModelForVoiceActivityDetection
from voicehub.cli import main
from voicehub.registry import MODEL_CATALOG, ModelSpec
from voicehub_test_extension import EnergyVAD, EnergyVADConfig

pytestmark = pytest.mark.usefixtures("isolated_catalog")


def test_models_json_lists_registered_specs_with_weight_availability(mean_square_kernel: Path) -> None:
    AutoModelForVoiceActivityDetection.register(
        EnergyVADConfig, EnergyVAD, default_model_path=str(mean_square_kernel), aliases=("energy-test",)
    )
    MODEL_CATALOG.register(
        ModelSpec(
            model_type="test_missing_weights",
            task="tts",  # type: ignore[arg-type]
            config="x.y:C",
            wrapper="x.y:W",
            default_source="dist:voicehub-no-such-dist/voice.onnx",  # type: ignore[arg-type]
        )
    )
    MODEL_CATALOG.register(ModelSpec(model_type="test_no_weights", task="vad", config="x.y:C", wrapper="x.y:W"))  # type: ignore[arg-type]
    result = CliRunner().invoke(main, ["models", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["model_type"]: row for row in json.loads(result.output)}
    assert rows["test_energy_vad"]["weights"] == "offline"
    assert rows["test_energy_vad"]["aliases"] == ["energy-test"]
    assert rows["test_energy_vad"]["task"] == "voice-activity-detection"
    assert rows["test_missing_weights"]["weights"] == "download"
    assert rows["test_missing_weights"]["weights_install"] == "pip install voicehub-no-such-dist"
    assert rows["test_energy_vad"]["weights_install"] is None
    assert rows["test_no_weights"]["weights"] == "none"

    only_tts = json.loads(CliRunner().invoke(main, ["models", "--json", "--task", "tts"]).output)
    assert [row["model_type"] for row in only_tts if row["model_type"].startswith("test_")] == ["test_missing_weights"]


def test_models_table_has_one_line_per_model(mean_square_kernel: Path) -> None:
    AutoModelForVoiceActivityDetection.register(EnergyVADConfig, EnergyVAD, default_model_path=str(mean_square_kernel))
    result = CliRunner().invoke(main, ["models", "--task", "vad"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["MODEL_TYPE", "TASK", "DEFAULT", "WEIGHTS", "ALIASES"]
    energy = [line for line in lines if line.startswith("test_energy_vad")]
    assert len(energy) == 1 and energy[0].split()[1:3] == ["vad", "offline"]


def test_models_table_names_the_command_that_installs_missing_default_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    # sv_ge2e's weights wheel is built from this repository (not on PyPI): the listing names that build.
    import importlib.metadata

    real = importlib.metadata.distribution

    def without_weights(name: str) -> importlib.metadata.Distribution:
        if name == "voicehub-ge2e-weights":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", without_weights)
    result = CliRunner().invoke(main, ["models", "--task", "sv"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    (ge2e,) = [line for line in lines if line.startswith("sv_ge2e ")]
    assert ge2e.split()[1:4] == ["sv", "yes", "download"]
    assert lines[-1] == (
        "sv_ge2e: default weights not installed; install them with: uv build --package voicehub-ge2e-weights "
        "--out-dir dist && pip install dist/voicehub_ge2e_weights-*.whl (in a VoiceHub checkout; it is a "
        "dependency of the voicehub wheel and `uv sync` installs it)"
    )


def test_python_dash_m_voicehub_runs_the_same_command_group() -> None:
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "voicehub", "models", "--json", "--task", "vad"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr
    listed = [row["model_type"] for row in json.loads(result.stdout)]
    assert listed == ["vad_silero", "vad_webrtc"]
