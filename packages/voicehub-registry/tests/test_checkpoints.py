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


def test_hub_source_honours_offline_mode_without_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty cache plus HF_HUB_OFFLINE: huggingface_hub must answer from the cache alone.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    source = HubSource(repo_id="voicehub-test/not-cached", filename="model.safetensors")
    assert not source.is_available_offline()
    assert not HubSource(repo_id="voicehub-test/not-cached").is_available_offline()
