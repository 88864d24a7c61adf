"""The ``voicehub`` command makes idle OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE``) unless the user chose.

The reason and the measurement are in ``voicehub.cli.main``; libgomp reads the variable only when
torch first loads it, so the command module must not import torch before the group runs.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from voicehub.cli import main


def test_the_command_sets_passive_waiting_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    result = CliRunner().invoke(main, ["models", "--help"])
    assert result.exit_code == 0, result.output
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


def test_the_command_keeps_the_users_wait_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    result = CliRunner().invoke(main, ["models", "--help"])
    assert result.exit_code == 0, result.output
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_torch_is_not_loaded_before_the_group_sets_the_policy() -> None:
    code = (
        "import os, sys\nos.environ.pop('OMP_WAIT_POLICY', None)\nimport voicehub.cli\nprint('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "False"
