"""The default models' weight wheels: accepted by range, checked by content.

``voicehub`` asks for ``silero-vad>=5.1.2,<7`` rather than one release, so that it installs next
to other tools; the Silero adapter then recognises a released file by its SHA-256 and checks any
file tensor by tensor. The GE2E weights ship in ``voicehub-ge2e-weights`` (byte-identical to
resemblyzer 0.1.4's ``pretrained.pt``) and are checked by SHA-256. Other installed releases are
simulated by a distribution directory (``*.dist-info``) put first on ``sys.path``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import tomllib
import warnings
from pathlib import Path

import pytest
import torch
from packaging.requirements import Requirement

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.ge2e.checkpoint import (
    RESEMBLYZER_SHA256,
    WEIGHTS_DISTRIBUTION,
    WEIGHTS_INSTALL_HINT,
    WEIGHTS_PATH,
    locate_resemblyzer_weights,
)
from voicehub.core.errors import CheckpointError
from voicehub.models.sv_ge2e.registration import DEFAULT_SOURCE as GE2E_SOURCE
from voicehub.models.sv_ge2e.wrapper import GE2ESpeakerVerifier
from voicehub.models.vad_silero.registration import DEFAULT_SOURCE as SILERO_SOURCE
from voicehub.models.vad_silero.wrapper import SileroVADModel
from voicehub.registry.errors import ChecksumMismatchError

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"
CLIP = DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav"
V5_JIT = DATA / "silero" / "v5" / "silero_vad.jit"
META_REQUIREMENTS = {
    Requirement(d).name: Requirement(d)
    for d in tomllib.loads((REPO / "packages" / "voicehub" / "pyproject.toml").read_text())["project"]["dependencies"]
}


def _install_fake_distribution(
    root: Path, monkeypatch: pytest.MonkeyPatch, *, name: str, version: str, files: dict[str, Path | bytes]
) -> None:
    """Make ``importlib.metadata`` find ``name`` ``version`` holding ``files`` under ``root`` first."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for relative, content in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_bytes(content)
    monkeypatch.syspath_prepend(str(root))
    assert importlib.metadata.version(name) == version


def test_silero_vad_is_declared_by_a_range_and_its_default_source_carries_no_single_digest() -> None:
    requirement = META_REQUIREMENTS["silero-vad"]
    assert {spec.operator for spec in requirement.specifier} == {">=", "<"}
    assert requirement.specifier.contains("5.1.2") and requirement.specifier.contains("6.2.3")
    assert SILERO_SOURCE.sha256 is None  # a digest would refuse every release but one
    assert {spec.operator for spec in META_REQUIREMENTS["webrtcvad-wheels"].specifier} == {">=", "<"}


def test_vad_silero_default_runs_on_another_release_in_range_recognised_by_its_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert META_REQUIREMENTS["silero-vad"].specifier.contains("5.1.2")
    _install_fake_distribution(
        tmp_path, monkeypatch, name="silero-vad", version="5.1.2", files={SILERO_SOURCE.path: V5_JIT}
    )
    default = SileroVADModel.from_pretrained()  # the catalog's dist: source, now the 5.1.2 file
    output = default.detect(CLIP)
    assert output.metadata["model_version"] == "v5"  # identified by SHA-256 among the released files
    by_path = SileroVADModel.from_pretrained(str(V5_JIT)).detect(CLIP)
    assert [(s.start_sample, s.end_sample) for s in output.segments] == [
        (s.start_sample, s.end_sample) for s in by_path.segments
    ]
    assert len(output.segments) == 1


def test_vad_silero_default_refuses_a_release_whose_content_does_not_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class NotSilero(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.weight

    foreign = tmp_path / "foreign.jit"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit's deprecation notices
        torch.jit.save(torch.jit.script(NotSilero()), str(foreign))  # type: ignore[no-untyped-call]
    _install_fake_distribution(
        tmp_path / "site", monkeypatch, name="silero-vad", version="6.9.0", files={SILERO_SOURCE.path: foreign}
    )
    model = SileroVADModel.from_pretrained()
    with pytest.raises(CheckpointMismatchError) as caught:
        model.load()
    assert "missing" in str(caught.value) and "unexpected ['weight']" in str(caught.value)
    assert model.runtime is None  # nothing half-loaded


def test_sv_ge2e_default_source_is_the_weights_wheel_with_the_upstream_digest() -> None:
    assert GE2E_SOURCE.distribution == WEIGHTS_DISTRIBUTION
    assert GE2E_SOURCE.path == WEIGHTS_PATH
    assert GE2E_SOURCE.sha256 == RESEMBLYZER_SHA256
    assert GE2E_SOURCE.install_hint == WEIGHTS_INSTALL_HINT
    assert WEIGHTS_DISTRIBUTION in META_REQUIREMENTS  # a plain install of voicehub brings it
    shipped = GE2E_SOURCE.resolve()  # checks the digest
    assert shipped == locate_resemblyzer_weights()
    # The upstream wheel (a test oracle in the development environment) holds the same bytes.
    upstream = Path(str(importlib.metadata.distribution("resemblyzer").locate_file("resemblyzer/pretrained.pt")))
    assert hashlib.sha256(upstream.read_bytes()).hexdigest() == RESEMBLYZER_SHA256
    notice = (REPO / "weights" / WEIGHTS_DISTRIBUTION / "NOTICE").read_text()
    assert RESEMBLYZER_SHA256 in notice and "Apache License 2.0" in notice


def test_sv_ge2e_refuses_damaged_default_weights_by_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    damaged = bytearray(GE2E_SOURCE.resolve().read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    _install_fake_distribution(
        tmp_path, monkeypatch, name=WEIGHTS_DISTRIBUTION, version="0.1.0", files={WEIGHTS_PATH: bytes(damaged)}
    )
    model = GE2ESpeakerVerifier.from_pretrained(device="cpu")
    with pytest.raises(ChecksumMismatchError, match=RESEMBLYZER_SHA256):
        model.load()
    assert model.runtime is None
    with pytest.raises(CheckpointError, match=r"damaged; reinstall it: uv build --package voicehub-ge2e-weights"):
        locate_resemblyzer_weights()
