"""Real speech manifests for the training tests (files from tests/data, see its PROVENANCE.md)."""

from __future__ import annotations

import re
from pathlib import Path

from voicehub.core.audio_stream import audio_file_info
from voicehub.training import ManifestRecord, Segment

DATA_DIR = Path(__file__).resolve().parents[3] / "tests" / "data"
LIBRIVOX_DIR = DATA_DIR / "librivox"
SYNTHETIC_DIR = DATA_DIR / "synthetic"


def _duration_s(path: Path) -> float:
    return audio_file_info(path).duration_s


def vad_records(count: int = 6) -> list[ManifestRecord]:
    """Short real clips (LibriVox and synthetic voices, 3-4.5 s), speech from 0.25 s to 0.25 s before the end."""
    paths = sorted(LIBRIVOX_DIR.glob("*0880.wav")) + sorted(LIBRIVOX_DIR.glob("*0930.wav"))
    paths += sorted(SYNTHETIC_DIR.glob("*_1.flac"))[: max(count - len(paths), 0)]
    records = []
    for path in paths[:count]:
        duration_s = _duration_s(path)
        segments = (Segment(start_s=0.25, end_s=round(duration_s - 0.25, 3)),)
        records.append(ManifestRecord(audio_path=path, duration_s=duration_s, segments=segments))
    return records


def speaker_records(num_speakers: int = 3, per_speaker: int = 2) -> list[ManifestRecord]:
    """Synthetic multi-speaker clips: ``num_speakers`` voices x ``per_speaker`` sentences."""
    voices = sorted({path.stem.rsplit("_", 1)[0] for path in SYNTHETIC_DIR.glob("*.flac")})[:num_speakers]
    records = []
    for voice in voices:
        for index in range(1, per_speaker + 1):
            path = SYNTHETIC_DIR / f"{voice}_{index}.flac"
            records.append(ManifestRecord(audio_path=path, duration_s=_duration_s(path), speaker=voice))
    return records


def librivox_records(stems: tuple[str, ...] = ("0880", "0930")) -> list[ManifestRecord]:
    """LibriVox clips with their reference transcripts (one reader)."""
    transcripts = {}
    for line in (LIBRIVOX_DIR / "transcription").read_text(encoding="utf-8").splitlines():
        match = re.match(r"<s> (.*) </s> \(.*-(\d+)\)", line.strip())
        if match:
            transcripts[match.group(2)] = match.group(1)
    records = []
    for stem in stems:
        path = LIBRIVOX_DIR / f"sense_and_sensibility_01_austen_64kb-{stem}.wav"
        records.append(
            ManifestRecord(audio_path=path, duration_s=_duration_s(path), text=transcripts[stem], speaker="reader")
        )
    return records
