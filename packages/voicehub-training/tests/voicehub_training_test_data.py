"""Real speech of the training tests, from the repository's tests/data (see its PROVENANCE.md)."""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = REPO_ROOT / "tests" / "data"
LIBRIVOX_DIR = DATA_DIR / "librivox"
SYNTHETIC_DIR = DATA_DIR / "synthetic"


def librivox_transcripts() -> dict[str, str]:
    """Clip stem -> reference transcript of the LibriVox clips (one reader, 16 kHz)."""
    transcripts = {}
    for line in (LIBRIVOX_DIR / "transcription").read_text(encoding="utf-8").splitlines():
        match = re.match(r"<s> (.*) </s> \((.*)\)", line.strip())
        if match:
            transcripts[match.group(2)] = match.group(1)
    return transcripts


def synthetic_clips() -> list[tuple[Path, str]]:
    """(file, speaker) of the 48 synthetic multi-speaker clips (12 voices x 4 sentences, 16 kHz)."""
    clips = []
    for path in sorted(SYNTHETIC_DIR.glob("*.flac")):
        clips.append((path, path.stem.rsplit("_", 1)[0]))
    return clips
