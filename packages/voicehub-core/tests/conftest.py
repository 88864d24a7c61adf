from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LIBRIVOX = ROOT / "tests" / "data" / "librivox"


@pytest.fixture
def librivox_wav() -> Path:
    """A real 16 kHz mono LibriVox utterance: 47840 samples (2.99 s)."""
    return LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"


@pytest.fixture
def data_dir() -> Path:
    return ROOT / "tests" / "data"
