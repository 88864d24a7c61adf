"""Fixtures of the meta-package tests: the extension modules' directory on ``sys.path``, real audio, kernels."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parents[2]
DATA_DIR = REPO_ROOT / "tests" / "data"
SPEECH_WAV = DATA_DIR / "librivox" / "sense_and_sensibility_01_austen_64kb-0870.wav"
"""Real LibriVox speech, 16 kHz mono (see tests/data/PROVENANCE.md)."""

if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


@pytest.fixture
def mean_square_kernel(tmp_path: Path) -> Path:
    """A checkpoint whose Conv1d kernel averages over 400 samples (mean-square energy of a frame)."""
    import torch

    from voicehub_test_extension import FRAME_SAMPLES

    path = tmp_path / "mean_square.pt"
    torch.save({"weight": torch.full((1, 1, FRAME_SAMPLES), 1.0 / FRAME_SAMPLES)}, path)
    return path


@pytest.fixture
def isolated_catalog() -> Iterator[None]:
    """Let a test register into the process catalog and remove what it added afterwards."""
    from voicehub.registry import MODEL_CATALOG

    before = set(MODEL_CATALOG.names())
    aliases_before = dict(MODEL_CATALOG.aliases)
    yield
    for name in set(MODEL_CATALOG.names()) - before:
        MODEL_CATALOG.unregister(name)
    for alias in set(MODEL_CATALOG.aliases) - set(aliases_before):
        MODEL_CATALOG.unregister_alias(alias)
