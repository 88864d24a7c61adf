"""The ``voicehub`` command leaves the OpenMP wait policy to the environment (issue #29).

A command and the Python API with the same arguments run the same code: the command must not
change a setting the models' runtime reads. (``test_synthesize_cli`` checks the audio bit for bit.)
"""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from voicehub.cli import main


@pytest.mark.parametrize("policy", [None, "ACTIVE"])
def test_the_command_leaves_the_wait_policy_as_it_found_it(monkeypatch: pytest.MonkeyPatch, policy: str | None) -> None:
    if policy is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", policy)
    result = CliRunner().invoke(main, ["models", "--help"])
    assert result.exit_code == 0, result.output
    assert os.environ.get("OMP_WAIT_POLICY") == policy
