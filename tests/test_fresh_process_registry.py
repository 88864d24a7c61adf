"""`import voicehub`, listing specs and building every config load no torch and no model module.

Each check runs in a fresh interpreter, so modules imported by other tests cannot hide a leak.
"Model module" means anything under ``voicehub.models.<name>`` other than its package
``__init__``, ``registration`` and ``config`` modules, and anything under
``voicehub.architectures`` other than declaration modules (``registration``, ``catalog``, ``config``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "torchaudio", "h5py", "safetensors", "onnxruntime", "soundfile", "soxr")

DECLARATION_MODULES = ("registration", "catalog", "config", "errors")

PROBE_HEADER = (
    f"HEAVY = {HEAVY!r}\nDECLARATIONS = {DECLARATION_MODULES!r}\n"
    + """
import json, sys
def leaks():
    heavy = [m for m in HEAVY if m in sys.modules]
    model_modules = []
    for name, module in sorted(sys.modules.items()):
        parts = name.split(".")
        if name.startswith("voicehub.models.") and len(parts) >= 4 and parts[-1] not in DECLARATIONS:
            model_modules.append(name)
        is_package = hasattr(module, "__path__")
        if name.startswith("voicehub.architectures.") and parts[-1] not in DECLARATIONS and not is_package:
            model_modules.append(name)
    return {"heavy": heavy, "model_modules": model_modules}
"""
)


def _probe(body: str) -> dict[str, object]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    script = PROBE_HEADER + body
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    answer: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return answer


def test_import_voicehub_loads_no_torch_and_no_model_module() -> None:
    answer = _probe("import voicehub\nprint(json.dumps(leaks()))")
    assert answer == {"heavy": [], "model_modules": []}


def test_import_voicehub_registry_alone_is_light() -> None:
    answer = _probe("import voicehub.registry\nprint(json.dumps(leaks()))")
    assert answer == {"heavy": [], "model_modules": []}


def test_listing_specs_and_building_every_config_loads_no_torch() -> None:
    answer = _probe(
        """
import voicehub
from voicehub import AutoConfig
specs = voicehub.list_model_specs()
built = {}
for spec in specs:
    config = AutoConfig.for_model(spec.model_type)
    built[spec.model_type] = type(config).__name__
    assert config.model_type == spec.model_type, (config.model_type, spec.model_type)
wrappers = sorted(s.wrapper.split(":")[0] for s in specs if s.wrapper.split(":")[0] in sys.modules)
print(json.dumps({**leaks(), "built": built, "wrapper_modules": wrappers, "count": len(specs)}))
"""
    )
    assert answer["heavy"] == []
    assert answer["model_modules"] == []
    assert answer["wrapper_modules"] == []
    built = answer["built"]
    assert isinstance(built, dict) and len(built) == answer["count"]


def test_voicehub_models_command_loads_no_torch() -> None:
    answer = _probe(
        """
from voicehub.cli import main
try:
    main(["models", "--json"], standalone_mode=False)
except SystemExit:
    pass
print()
print(json.dumps(leaks()))
"""
    )
    assert answer == {"heavy": [], "model_modules": []}


def test_console_script_lists_models_as_strict_json() -> None:
    script = Path(sys.executable).with_name("voicehub")
    result = subprocess.run(
        [str(script), "models", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert isinstance(rows, list)
    for row in rows:
        assert row["weights"] in ("offline", "download", "none")
        assert set(row) >= {"model_type", "task", "default_for_task", "aliases", "default_source"}


def test_loading_the_architecture_catalog_imports_declarations_only() -> None:
    answer = _probe(
        """
from voicehub.models import load_builtin_architectures
registry = load_builtin_architectures()
print(json.dumps({**leaks(), "ids": list(registry.names())}))
"""
    )
    assert answer["heavy"] == []
    assert answer["model_modules"] == []
    assert isinstance(answer["ids"], list)
