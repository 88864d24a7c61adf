"""Checkpoint sources: parsing, resolution, offline availability and SHA-256 checks."""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

import pytest

from voicehub.core import CheckpointError
from voicehub.registry import (
    CheckpointNotFoundError,
    ChecksumMismatchError,
    DistributionSource,
    HubSource,
    LocalSource,
    SpecError,
    file_sha256,
    parse_source,
)

# Shipped in the silero-vad 6.2.3 wheel (ASSETS.md); a real weight file, never downloaded.
SILERO_JIT = "silero_vad/data/silero_vad.jit"


def _silero_path() -> Path:
    return Path(str(importlib.metadata.distribution("silero-vad").locate_file(SILERO_JIT)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "dist:silero-vad/silero_vad/data/silero_vad.jit",
            DistributionSource(distribution="silero-vad", path=SILERO_JIT),
        ),
        ("hf:acme/aurora", HubSource(repo_id="acme/aurora")),
        (
            "hf:acme/aurora@v1.2/weights/model.safetensors",
            HubSource(repo_id="acme/aurora", revision="v1.2", filename="weights/model.safetensors"),
        ),
        ("acme/aurora-base", HubSource(repo_id="acme/aurora-base")),
        ("file:acme/aurora-base", LocalSource(path="acme/aurora-base")),
        ("/models/aurora", LocalSource(path="/models/aurora")),
        ("./aurora.pt", LocalSource(path="./aurora.pt")),
    ],
)
def test_parse_source_forms(text: str, expected: object) -> None:
    parsed = parse_source(text)
    assert parsed == expected
    assert parse_source(parsed.to_string()) == expected


def test_existing_local_directory_wins_over_the_repo_id_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "acme" / "aurora").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert parse_source("acme/aurora") == LocalSource(path="acme/aurora")


@pytest.mark.parametrize("text", ["", "dist:silero-vad", "hf:justone", "dist:/abs/path"])
def test_parse_source_rejects_malformed_strings(text: str) -> None:
    with pytest.raises(SpecError):
        parse_source(text)


def test_sha256_must_be_hex_and_hub_digest_needs_a_file() -> None:
    with pytest.raises(SpecError, match="64 hexadecimal"):
        LocalSource(path="x", sha256="abc")
    with pytest.raises(SpecError, match="needs a filename"):
        HubSource(repo_id="acme/aurora", sha256="0" * 64)


def test_distribution_source_resolves_real_wheel_file_with_digest() -> None:
    digest = hashlib.sha256(_silero_path().read_bytes()).hexdigest()
    source = parse_source(f"dist:silero-vad/{SILERO_JIT}", sha256=digest.upper())
    assert source.sha256 == digest
    assert source.is_available_offline()
    assert source.resolve() == _silero_path()
    assert file_sha256(source.resolve()) == digest


def test_distribution_source_directory_resolves() -> None:
    source = DistributionSource(distribution="silero-vad", path="silero_vad/data")
    assert (source.resolve() / "silero_vad.jit").is_file()


def test_wrong_digest_names_both_digests_and_the_source() -> None:
    source = DistributionSource(distribution="silero-vad", path=SILERO_JIT, sha256="0" * 64)
    with pytest.raises(ChecksumMismatchError) as info:
        source.resolve()
    assert info.value.expected == "0" * 64
    assert info.value.actual == file_sha256(_silero_path())
    assert "dist:silero-vad/silero_vad/data/silero_vad.jit" in str(info.value)


def test_missing_distribution_and_missing_file_say_how_to_fix() -> None:
    missing_dist = DistributionSource(distribution="voicehub-no-such-dist", path="x.bin")
    assert not missing_dist.is_available_offline()
    with pytest.raises(CheckpointNotFoundError, match="pip install voicehub-no-such-dist") as info:
        missing_dist.resolve()
    assert info.value.source == "dist:voicehub-no-such-dist/x.bin"
    assert isinstance(info.value, FileNotFoundError)
    missing_file = DistributionSource(distribution="silero-vad", path="silero_vad/data/nope.jit")
    with pytest.raises(CheckpointNotFoundError, match=r"is installed but has no .silero_vad/data/nope\.jit."):
        missing_file.resolve()


def test_distribution_source_install_hint_replaces_pip_install_in_messages() -> None:
    # A wheel built from a repository (not on PyPI) must not be offered as `pip install <name>`.
    hint = "uv build --package voicehub-no-such-dist && pip install dist/voicehub_no_such_dist-*.whl"
    source = DistributionSource(distribution="voicehub-no-such-dist", path="x.bin", install_hint=hint)
    assert source.install_command == hint
    assert DistributionSource(distribution="silero-vad", path=SILERO_JIT).install_command == "pip install silero-vad"
    with pytest.raises(CheckpointNotFoundError) as info:
        source.resolve()
    assert f"install it with: {hint}" in str(info.value) and "pip install voicehub-no-such-dist" not in str(info.value)
    assert source.to_string() == "dist:voicehub-no-such-dist/x.bin"  # the hint is not part of the source string
    with pytest.raises(SpecError, match="install_hint must be a non-empty command"):
        DistributionSource(distribution="silero-vad", path=SILERO_JIT, install_hint=" ")


def test_local_source(tmp_path: Path) -> None:
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"\x00\x01\x02")
    good = LocalSource(path=str(weights), sha256=hashlib.sha256(b"\x00\x01\x02").hexdigest())
    assert good.resolve() == weights
    assert not LocalSource(path=str(tmp_path / "nope")).is_available_offline()
    with pytest.raises(CheckpointNotFoundError, match="does not exist"):
        LocalSource(path=str(tmp_path / "nope")).resolve()
    with pytest.raises(CheckpointError, match="not a single file"):
        LocalSource(path=str(tmp_path), sha256="0" * 64).resolve()


class _OfflineHub:
    """Stands in for ``huggingface_hub`` (tests never call the real one): answers like its offline mode."""

    def __init__(self, cached: dict[tuple[str, str], Path]) -> None:
        self.cached = cached
        self.calls: list[tuple[str, str | None, str | None]] = []

    def hf_hub_download(self, repo_id: str, filename: str, revision: str | None = None) -> str:
        self.calls.append((repo_id, filename, revision))
        if (repo_id, filename) not in self.cached:
            raise OSError("offline mode is enabled and the file is not in the local cache")
        return str(self.cached[(repo_id, filename)])

    def try_to_load_from_cache(self, repo_id: str, filename: str, revision: str | None = None) -> str | None:
        path = self.cached.get((repo_id, filename))
        return str(path) if path is not None else None


def test_hub_source_goes_through_huggingface_hub_and_checks_digests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights")
    hub = _OfflineHub({("acme/aurora", "model.safetensors"): weights})
    monkeypatch.setattr(HubSource, "_hub", lambda self: hub)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    good = parse_source("hf:acme/aurora@v2/model.safetensors", sha256=hashlib.sha256(b"weights").hexdigest())
    assert good.is_available_offline()
    assert good.resolve() == weights
    assert hub.calls == [("acme/aurora", "model.safetensors", "v2")]
    with pytest.raises(ChecksumMismatchError, match=r"hf:acme/aurora@v2/model\.safetensors"):
        parse_source("hf:acme/aurora@v2/model.safetensors", sha256="1" * 64).resolve()
    missing = parse_source("hf:acme/aurora/other.bin")
    assert not missing.is_available_offline()
    with pytest.raises(CheckpointNotFoundError, match="HF_HUB_OFFLINE is set and it is not in the local cache") as info:
        missing.resolve()
    assert info.value.source == "hf:acme/aurora/other.bin"
