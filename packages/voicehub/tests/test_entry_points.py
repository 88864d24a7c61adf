"""A third-party distribution declaring ``[project.entry-points."voicehub.models"]`` is discovered.

The plug-in is built and installed with ``uv`` into a fresh virtual environment that also sees
the workspace packages (through a ``.pth`` file), then probed in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PYPROJECT = """
[project]
name = "voicehub-plugin-demo"
version = "0.1.0"
requires-python = ">=3.11"

[project.entry-points."voicehub.models"]
demo = "voicehub_plugin_demo.registration:MODEL_SPEC"

[build-system]
requires = ["uv_build>=0.9.0,<0.14"]
build-backend = "uv_build"
"""

REGISTRATION = '''
"""Declaration only: no torch, no wrapper import."""
from voicehub.registry import ModelSpec

MODEL_SPEC = ModelSpec(
    model_type="demo_plugin_vad",
    task="vad",
    config="voicehub_plugin_demo.model:DemoConfig",
    wrapper="voicehub_plugin_demo.model:DemoVAD",
    aliases=("Demo-Plugin",),
    default_source="dist:voicehub-plugin-demo/voicehub_plugin_demo/kernel.txt",
    license="MIT",
)
'''

MODEL = """
import dataclasses
from typing import ClassVar
from voicehub.core import Config, RuntimeBundle
from voicehub.voice_activity import PreTrainedVADModel
from voicehub.registry import ModelConfig

@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DemoConfig(ModelConfig):
    config_type: ClassVar[str] = "demo_plugin_vad"
    sample_rate: int = 16000

@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DemoOptions(Config):
    config_type: ClassVar[str] = "demo_plugin_vad_options"

class DemoVAD(PreTrainedVADModel[DemoConfig, DemoOptions, RuntimeBundle[object]]):
    config_class = DemoConfig
    options_class = DemoOptions
"""

PROBE = """
import json, sys
import voicehub
from voicehub import AutoModel, AutoModelForSpeechRecognition, list_model_specs
from voicehub.cli import main
from voicehub.core import TaskMismatchError
specs = [s.model_type for s in list_model_specs("vad")]
spec = voicehub.get_model_spec("DEMO-PLUGIN")
before = "voicehub_plugin_demo.model" in sys.modules
try:
    AutoModelForSpeechRecognition.from_pretrained(model_type="demo_plugin_vad")
    mismatch = None
except TaskMismatchError as err:
    mismatch = str(err)
after_refusal = "voicehub_plugin_demo.model" in sys.modules
model = AutoModel.from_pretrained(model_type="demo-plugin")
print(json.dumps({
    "specs": specs, "wrapper": spec.wrapper, "before": before, "mismatch": mismatch,
    "after_refusal": after_refusal, "type": type(model).__name__, "source": model.source.to_string(),
    "available": model.source.is_available_offline(), "torch": "torch" in sys.modules,
}))
"""


def test_entry_point_plugin_is_discovered_like_a_builtin(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed")
    project = tmp_path / "plugin"
    package = project / "src" / "voicehub_plugin_demo"
    package.mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    (package / "__init__.py").write_text("")
    (package / "registration.py").write_text(textwrap.dedent(REGISTRATION))
    (package / "model.py").write_text(textwrap.dedent(MODEL))
    (package / "kernel.txt").write_text("shipped inside the wheel\n")
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    subprocess.run(
        [uv, "pip", "install", "-q", "--offline", "--python", str(python), str(project)], check=True, timeout=120
    )
    # Let the new environment see the workspace packages (installed editable in this one).
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    lines = "".join(f"import site; site.addsitedir({path!r})\n" for path in site.getsitepackages())
    Path(purelib, "zz_voicehub_workspace.pth").write_text(lines)

    result = subprocess.run(
        [str(python), "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert "demo_plugin_vad" in answer["specs"]
    assert answer["wrapper"] == "voicehub_plugin_demo.model:DemoVAD"
    assert answer["before"] is False
    assert answer["mismatch"] is not None and "use AutoModelForVoiceActivityDetection" in answer["mismatch"]
    assert answer["after_refusal"] is False
    assert answer["type"] == "DemoVAD"
    assert answer["source"] == "dist:voicehub-plugin-demo/voicehub_plugin_demo/kernel.txt"
    assert answer["available"] is True
    assert answer["torch"] is False

    cli = subprocess.run(
        [str(python), "-c", "from voicehub.cli import main; main()", "models", "--json", "--task", "vad"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    rows = {row["model_type"]: row for row in json.loads(cli.stdout)}
    assert rows["demo_plugin_vad"]["weights"] == "offline"
    assert rows["demo_plugin_vad"]["aliases"] == ["demo-plugin"]
