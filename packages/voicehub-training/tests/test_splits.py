"""Leakage-safe splits: no speaker or recording in two splits."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicehub.training import SplitError
from voicehub.training.manifest import ManifestRecord
from voicehub.training.splits import leakage_groups, split_records
from voicehub_training_test_data import synthetic_clips


def _records() -> list[ManifestRecord]:
    return [ManifestRecord(audio_path=path, duration_s=3.0, speaker=speaker) for path, speaker in synthetic_clips()]


def test_split_keeps_every_speaker_in_one_split() -> None:
    records = _records()
    splits = split_records(records, {"train": 0.75, "valid": 0.25}, seed=3)
    speakers = {name: {r.speaker for r in part} for name, part in splits.items()}
    assert speakers["train"].isdisjoint(speakers["valid"])
    assert len(speakers["train"]) == 9 and len(speakers["valid"]) == 3  # 12 voices of 4 equal clips
    assert sorted(r.audio_path for part in splits.values() for r in part) == sorted(r.audio_path for r in records)
    assert splits == split_records(records, {"train": 0.75, "valid": 0.25}, seed=3)


def test_shared_recording_joins_two_speakers_into_one_group() -> None:
    a = ManifestRecord(audio_path=Path("a1.wav"), duration_s=1.0, speaker="a", recording="meeting")
    b = ManifestRecord(audio_path=Path("b1.wav"), duration_s=1.0, speaker="b", recording="meeting")
    b2 = ManifestRecord(audio_path=Path("b2.wav"), duration_s=1.0, speaker="b")
    c = ManifestRecord(audio_path=Path("c1.wav"), duration_s=1.0, speaker="c")
    assert leakage_groups([a, b, b2, c]) == [[0, 1, 2], [3]]
    splits = split_records([a, b, b2, c], {"train": 0.5, "test": 0.5})
    assert {r.speaker for r in splits["test"]} == {"c"}


def test_split_refuses_fewer_groups_than_splits_and_bad_fractions() -> None:
    one_reader = [ManifestRecord(audio_path=Path(f"{i}.wav"), duration_s=1.0, speaker="reader") for i in range(5)]
    with pytest.raises(SplitError, match="form 1 group"):
        split_records(one_reader, {"train": 0.8, "valid": 0.2})
    with pytest.raises(SplitError, match="must sum to 1"):
        split_records(_records(), {"train": 0.8, "valid": 0.1})
