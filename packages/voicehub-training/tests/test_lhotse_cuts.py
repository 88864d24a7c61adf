"""lhotse CutSet manifests (written by lhotse itself) read as training records, validated like JSONL rows."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from voicehub.core.errors import OptionalDependencyError
from voicehub.training import DataContract, ManifestError, ManifestField, collate_audio, read_manifest
from voicehub.training.lhotse_cuts import read_lhotse_cuts
from voicehub.training.manifest import Segment
from voicehub_training_test_data import LIBRIVOX_DIR

lhotse = pytest.importorskip("lhotse", reason="lhotse is the voicehub-training[lhotse] extra")

ASR = DataContract(required_fields=(ManifestField.TEXT,), sample_rate=16000, max_duration_s=30.0)
SPEAKER = DataContract(required_fields=(ManifestField.SPEAKER,), sample_rate=16000)
CLIP_0880 = LIBRIVOX_DIR / "sense_and_sensibility_01_austen_64kb-0880.wav"  # 2.99 s
CLIP_0930 = LIBRIVOX_DIR / "sense_and_sensibility_01_austen_64kb-0930.wav"


def _supervision(recording_id: str, start: float, duration: float, **fields: object) -> object:
    return lhotse.SupervisionSegment(
        id=f"{recording_id}-{start}", recording_id=recording_id, start=start, duration=duration, channel=0, **fields
    )


def _good_cuts() -> list[object]:
    first = lhotse.Recording.from_file(CLIP_0880)
    part = first.to_cut().truncate(offset=0.5, duration=2.0)
    part.supervisions = [
        _supervision(first.id, 0.1, 0.8, text="was not", speaker="reader"),
        _supervision(first.id, 0.7, 1.6, text="an ill disposed", speaker="reader"),  # overlaps, runs past the cut
    ]
    second = lhotse.Recording.from_file(CLIP_0930)
    whole = second.to_cut()
    whole.supervisions = [_supervision(second.id, 0.0, second.duration, text="the whole clip", speaker="reader")]
    return [part, whole]


def test_cut_manifest_written_by_lhotse_reads_into_records(tmp_path: Path) -> None:
    manifest = tmp_path / "cuts.jsonl.gz"
    lhotse.CutSet.from_cuts(_good_cuts()).to_file(manifest)
    part, whole = read_manifest(manifest, ASR)  # its first row is a cut: the lhotse reader (gzip or not)
    assert part.audio_path == CLIP_0880.resolve() and whole.audio_path == CLIP_0930.resolve()
    assert (part.offset_s, part.duration_s, whole.offset_s) == (0.5, 2.0, 0.0)
    assert part.text == "was not an ill disposed" and part.speaker == "reader"
    assert part.recording == CLIP_0880.stem and part.line == 1 and whole.line == 2
    assert part.segments == (Segment(start_s=0.1, end_s=2.0),)  # merged, clipped to the cut
    assert whole.text == "the whole clip" and whole.duration_s == pytest.approx(soundfile.info(CLIP_0930).duration)

    batch = collate_audio([part, whole], sample_rate=16000)
    samples, _ = soundfile.read(CLIP_0880, dtype="float32")
    assert int(batch.lengths[0]) == 32000
    np.testing.assert_allclose(batch.waveform[0, :32000].numpy(), samples[8000:40000], atol=1e-6)

    plain = tmp_path / "cuts.jsonl"
    lhotse.CutSet.from_cuts(_good_cuts()).to_file(plain)  # uncompressed: recognised by its first row
    assert read_manifest(plain, ASR) == (part, whole)


def test_every_bad_cut_is_reported_with_its_line_and_id(tmp_path: Path) -> None:
    gone = tmp_path / "gone.wav"
    shutil.copy(CLIP_0880, gone)
    missing = lhotse.Recording.from_file(gone).to_cut()
    missing.supervisions = [_supervision(missing.recording_id, 0.0, 1.0, text="x", speaker="reader")]
    gone.unlink()
    untranscribed = lhotse.Recording.from_file(CLIP_0930).to_cut()
    untranscribed.supervisions = [_supervision(untranscribed.recording_id, 0.0, 1.0, speaker="reader")]
    padded = _good_cuts()[0].pad(duration=3.0)  # a MixedCut
    two_speakers = lhotse.Recording.from_file(CLIP_0930).to_cut()
    two_speakers.id = "two-speakers"  # another cut of the recording `untranscribed` is cut from: its own id
    two_speakers.supervisions = [
        _supervision(two_speakers.recording_id, 0.0, 1.0, text="a", speaker="reader"),
        _supervision(two_speakers.recording_id, 1.0, 1.0, text="b", speaker="other"),
    ]
    manifest = tmp_path / "cuts.jsonl.gz"
    cuts = [_good_cuts()[0], missing, untranscribed, padded, two_speakers]
    lhotse.CutSet.from_cuts(cuts).to_file(manifest)

    with pytest.raises(ManifestError) as caught:
        read_lhotse_cuts(manifest, ASR)
    found = {(p.line, p.field) for p in caught.value.problems}
    assert found == {(2, "audio_path"), (3, "text"), (4, "type")}, caught.value.problems
    message = str(caught.value)
    assert f"line 2: audio_path: cut {missing.id}: missing file" in message
    assert f"cut {untranscribed.id}: supervision(s)" in message and "MixedCut" in message

    with pytest.raises(ManifestError) as caught:
        read_lhotse_cuts(manifest, SPEAKER)  # speaker models: text is optional, one speaker per cut is not
    assert {(p.line, p.field) for p in caught.value.problems} == {(2, "audio_path"), (4, "type"), (5, "speaker")}


def test_a_cut_listed_twice_is_reported_with_the_line_that_listed_it_first(tmp_path: Path) -> None:
    part, whole = _good_cuts()
    manifest = tmp_path / "cuts.jsonl"
    manifest.write_text("".join(json.dumps(cut.to_dict()) + "\n" for cut in (part, whole, part)), encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        read_manifest(manifest, ASR)
    assert [(p.line, p.field) for p in caught.value.problems] == [(3, "id")]
    assert f"line 3: id: cut {part.id}: listed twice (first on line 1); cut ids must be unique" in str(caught.value)
    assert "1 problem(s) in 1 row(s)" in str(caught.value)


def test_a_cut_reaching_past_its_file_and_a_bad_line_are_reported(tmp_path: Path) -> None:
    cut = _good_cuts()[0]
    row = cut.to_dict()
    row["duration"] = 9.0  # the file holds 2.99 s
    manifest = tmp_path / "cuts.jsonl"
    manifest.write_text(
        "\n".join([json.dumps(row), '{"type": "MonoCut"}']) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(ManifestError) as caught:
        read_manifest(manifest, ASR)
    problems = {(p.line, p.field) for p in caught.value.problems}
    assert problems == {(1, "duration_s"), (2, "json")}, caught.value.problems
    assert "reaches past the end of the file" in str(caught.value)


def test_missing_lhotse_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = tmp_path / "cuts.jsonl.gz"
    lhotse.CutSet.from_cuts(_good_cuts()).to_file(manifest)
    monkeypatch.setitem(sys.modules, "lhotse", None)
    monkeypatch.setitem(sys.modules, "lhotse.serialization", None)
    with pytest.raises(OptionalDependencyError, match=r"voicehub-training\[lhotse\]"):
        read_manifest(manifest, ASR)


def test_a_cut_of_a_long_file_loads_exactly_its_part_across_decoding_blocks(tmp_path: Path) -> None:
    long_file = LIBRIVOX_DIR.parent / "silero" / "test.wav"  # 60 s at 16 kHz
    # 3.9 s + 2 s spans the first block boundary (65536 frames = 4.096 s); 55 s lies in a late block.
    cuts = [lhotse.Recording.from_file(long_file).to_cut().truncate(offset=o, duration=2.0) for o in (3.9, 55.0)]
    manifest = tmp_path / "cuts.jsonl.gz"
    lhotse.CutSet.from_cuts(cuts).to_file(manifest)
    records = read_manifest(manifest, DataContract(required_fields=(), sample_rate=16000))
    batch = collate_audio(records, sample_rate=16000)
    samples, _ = soundfile.read(long_file, dtype="float32")
    assert batch.lengths.tolist() == [32000, 32000]
    np.testing.assert_array_equal(batch.waveform[0].numpy(), samples[62400:94400])
    np.testing.assert_array_equal(batch.waveform[1].numpy(), samples[880000:912000])
