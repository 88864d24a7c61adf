"""`import voicehub.core` stays light: no torch, no h5py (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import voicehub.core
from voicehub.core import load_audio, Config, VADOutput, strict_json
print(json.dumps({m: m in sys.modules for m in ("torch", "h5py", "soundfile", "soxr")}))
"""


def test_import_voicehub_core_loads_no_torch_and_no_h5py() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60)
    loaded = json.loads(result.stdout)
    assert loaded == {"torch": False, "h5py": False, "soundfile": False, "soxr": False}
