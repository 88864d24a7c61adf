"""JSONL manifests: validation reports every bad row at once, with line numbers."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from voicehub.training import DataContract, ManifestError, ManifestField
from voicehub.training.manifest import ManifestRecord, Segment, read_manifest, write_manifest
from voicehub_training_test_data import LIBRIVOX_DIR

CONTRACT = DataContract(required_fields=(ManifestField.TEXT,), sample_rate=16000, max_duration_s=30.0)
CLIP = LIBRIVOX_DIR / "sense_and_sensibility_01_austen_64kb-0880.wav"  # 2.99 s, 16 kHz


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_read_manifest_resolves_relative_paths_and_keeps_fields(tmp_path: Path) -> None:
    (tmp_path / "clip.wav").symlink_to(CLIP)
    row = {
        "audio_path": "clip.wav",
        "duration_s": 2.99,
        "text": "he was not an ill disposed young man",
        "speaker": "reader",
        "segments": [{"start_s": 0.2, "end_s": 2.7}],
    }
    manifest = _write(tmp_path / "train.jsonl", [json.dumps(row)])
    (record,) = read_manifest(manifest, CONTRACT)
    assert record.audio_path == tmp_path / "clip.wav"
    assert record.text == "he was not an ill disposed young man" and record.speaker == "reader"
    assert record.recording == str(tmp_path / "clip.wav") and record.line == 1
    assert record.segments == (Segment(start_s=0.2, end_s=2.7),)
    written = write_manifest([record], tmp_path / "copy.jsonl")
    assert read_manifest(written, CONTRACT) == (record,)


def test_read_manifest_reports_every_bad_row_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "clip.wav").symlink_to(CLIP)
    samples, _ = soundfile.read(CLIP, dtype="float32")
    soundfile.write(tmp_path / "clip_8k.wav", samples[::2], 8000)  # decimated: 8 kHz, 2.99 s
    good = {"audio_path": "clip.wav", "duration_s": 2.99, "text": "he was not an ill disposed young man"}
    lines = [
        json.dumps(good),  # 1: fine
        json.dumps({**good, "audio_path": "missing.wav"}),  # 2: missing file
        json.dumps({**good, "audio_path": "clip_8k.wav"}),  # 3: wrong sample rate
        json.dumps({**good, "text": "  "}),  # 4: empty transcript
        json.dumps({**good, "duration_s": -1.0}),  # 5: negative duration
        '{"audio_path": "clip.wav", "duration_s": 2.99,',  # 6: bad JSON
        "",  # 7: blank, skipped
        json.dumps({"audio_path": "clip.wav", "duration_s": 2.99}),  # 8: no transcript
        json.dumps({**good, "duration_s": 5.0}),  # 9: header says 2.99 s
        json.dumps({**good, "text": 123, "speaker": 7}),  # 10: two problems in one row
    ]
    with pytest.raises(ManifestError) as caught:
        read_manifest(_write(tmp_path / "bad.jsonl", lines), CONTRACT)
    found = {(p.line, p.field) for p in caught.value.problems}
    assert found == {
        (2, "audio_path"),
        (3, "audio_path"),
        (4, "text"),
        (5, "duration_s"),
        (6, "json"),
        (8, "text"),
        (9, "duration_s"),
        (10, "text"),
        (10, "speaker"),
    }
    message = str(caught.value)
    assert "9 problem(s) in 8 row(s)" in message  # problems, and the distinct rows they are in
    assert "line 2: audio_path: missing file" in message
    assert "line 3: audio_path: wrong sample rate: clip_8k.wav is 8000 Hz, the model trains at 16000 Hz" in message
    assert "line 4: text: expected a non-empty string, got an empty transcript" in message
    assert "line 5: duration_s: expected seconds > 0, got -1.0" in message
    assert "line 6: json: not valid JSON" in message
    assert "line 9: duration_s: 5.0 s, but the file holds 2.990 s" in message
    assert "line 10: text: expected a string, got 123" in message  # not "an empty transcript"
    assert "line 10: speaker: expected a string, got 7" in message


def test_an_empty_transcript_is_kept_for_a_model_that_does_not_train_on_text(tmp_path: Path) -> None:
    (tmp_path / "clip.wav").symlink_to(CLIP)
    vad = DataContract(required_fields=(), sample_rate=16000)
    lines = [json.dumps({"audio_path": "clip.wav", "duration_s": 2.99, "text": ""})]
    (record,) = read_manifest(_write(tmp_path / "vad.jsonl", lines), vad)
    assert record.text == "" and record.duration_s == 2.99
    with pytest.raises(ManifestError, match="line 1: text: expected a non-empty string, got an empty transcript"):
        read_manifest(tmp_path / "vad.jsonl", CONTRACT)  # an ASR model trains on it: refused
    with pytest.raises(ManifestError, match="line 1: text: expected a string, got 123"):
        read_manifest(_write(tmp_path / "bad.jsonl", [lines[0].replace('""', "123")]), vad)  # never a non-string


def test_read_manifest_checks_segments_and_unknown_fields(tmp_path: Path) -> None:
    (tmp_path / "clip.wav").symlink_to(CLIP)
    contract = DataContract(required_fields=(ManifestField.SEGMENTS,), sample_rate=16000, frame_num_samples=512)
    base = {"audio_path": "clip.wav", "duration_s": 2.99}
    lines = [
        json.dumps({**base, "segments": [{"start_s": 1.0, "end_s": 0.5}]}),
        json.dumps({**base, "segments": [{"start_s": 0.0, "end_s": 1.0}, {"start_s": 0.5, "end_s": 2.0}]}),
        json.dumps({**base, "segments": [[0.0, 1.0]]}),
        json.dumps({**base, "segments": [], "speakr": "x"}),  # a typo of a field: refused (other names are ignored)
        json.dumps(base),
    ]
    with pytest.raises(ManifestError) as caught:
        read_manifest(_write(tmp_path / "vad.jsonl", lines), contract)
    assert [(p.line, p.field) for p in caught.value.problems] == [
        (1, "segments"),
        (2, "segments"),
        (3, "segments"),
        (4, "speakr"),
        (5, "segments"),
    ]
    assert "line 4: speakr: unknown field; did you mean 'speaker'?" in str(caught.value)


def test_nemo_rows_are_read_their_field_names_mapped_and_other_fields_ignored(tmp_path: Path) -> None:
    (tmp_path / "clip.wav").symlink_to(CLIP)
    nemo = {"audio_filepath": "clip.wav", "duration": 2.99, "offset": 0.5, "text": "an ill", "id": "u1", "lang": "en"}
    (record,) = read_manifest(_write(tmp_path / "nemo.jsonl", [json.dumps({**nemo, "duration": 2.0})]), CONTRACT)
    assert (record.audio_path, record.offset_s, record.duration_s, record.text) == (
        tmp_path / "clip.wav",
        0.5,
        2.0,
        "an ill",
    )
    both = {**nemo, "duration": 2.0, "audio_path": "clip.wav"}
    with pytest.raises(ManifestError, match="line 1: audio_filepath: given with 'audio_path', which it stands for"):
        read_manifest(_write(tmp_path / "both.jsonl", [json.dumps(both)]), CONTRACT)


def test_repeated_rows_and_ids_are_reported(tmp_path: Path) -> None:
    (tmp_path / "clip.wav").symlink_to(CLIP)
    row = {"audio_path": "clip.wav", "duration_s": 2.99, "text": "he was not an ill disposed young man"}
    part = {"audio_path": "clip.wav", "offset_s": 1.0, "duration_s": 1.5, "text": "an ill disposed"}
    lines = [
        json.dumps({**row, "id": "a"}),
        json.dumps({**part, "id": "b"}),  # another span of the same file: fine
        json.dumps({**row, "id": "c"}),  # 3: the audio and span of line 1 again
        json.dumps({**part, "offset_s": 0.5, "id": "a"}),  # 4: a new span, but line 1's id
    ]
    with pytest.raises(ManifestError) as caught:
        read_manifest(_write(tmp_path / "dup.jsonl", lines), CONTRACT)
    assert [(p.line, p.field) for p in caught.value.problems] == [(3, "audio_path"), (4, "id")]
    assert "line 3: audio_path: the same audio and span as line 1 (clip.wav)" in str(caught.value)
    assert "line 4: id: 'a' also names line 1; ids must be unique" in str(caught.value)


@pytest.mark.parametrize("compress", [False, True])
def test_a_line_that_is_not_utf8_is_reported_with_every_other_problem(tmp_path: Path, compress: bool) -> None:
    (tmp_path / "clip.wav").symlink_to(CLIP)
    good = json.dumps({"audio_path": "clip.wav", "duration_s": 2.99, "text": "he was not"}).encode()
    latin1 = '{"audio_path": "clip.wav", "duration_s": 2.99, "text": "caf\u00e9"}'.encode("latin-1")  # é as 0xe9
    data = (
        b"\n".join(
            [
                good,
                latin1,
                b"not json",
                json.dumps({"audio_path": "missing.wav", "duration_s": 1.0, "text": "x"}).encode(),
            ]
        )
        + b"\n"
    )
    manifest = tmp_path / "train.jsonl"
    manifest.write_bytes(gzip.compress(data) if compress else data)
    with pytest.raises(ManifestError) as caught:
        read_manifest(manifest, CONTRACT)
    assert [(p.line, p.field) for p in caught.value.problems] == [(2, "encoding"), (3, "json"), (4, "audio_path")]
    column = latin1.index(b"\xe9") + 1
    assert f"line 2: encoding: byte 0xe9 at column {column} is not UTF-8" in str(caught.value)


def test_the_message_lists_the_first_problems_and_counts_the_rest(tmp_path: Path) -> None:
    lines = [json.dumps({"audio_path": f"missing-{i}.wav", "duration_s": 1.0, "text": "x"}) for i in range(60)]
    with pytest.raises(ManifestError) as caught:
        read_manifest(_write(tmp_path / "many.jsonl", lines), CONTRACT)
    message = str(caught.value)
    assert len(caught.value.problems) == 60 and "60 problem(s) in 60 row(s)" in message
    assert "line 50: audio_path: missing file" in message and "line 51:" not in message
    assert message.endswith("... and 10 more problem(s) (ManifestError.problems lists them all)")


def test_a_gzip_compressed_manifest_reads_as_the_plain_one_without_lhotse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once any gzip file was taken for a lhotse cut manifest: lhotse was required, then refused the rows.
    (tmp_path / "clip.wav").symlink_to(CLIP)
    rows = [
        {"audio_path": "clip.wav", "duration_s": 2.99, "text": "he was not an ill disposed young man"},
        {"audio_path": "clip.wav", "offset_s": 1.0, "duration_s": 1.5, "text": "an ill disposed", "recording": "r"},
    ]
    plain = _write(tmp_path / "train.jsonl", [json.dumps(row) for row in rows])
    compressed = tmp_path / "train.jsonl.gz"
    compressed.write_bytes(gzip.compress(plain.read_bytes()))
    monkeypatch.setitem(sys.modules, "lhotse", None)  # not needed for voicehub rows
    monkeypatch.setitem(sys.modules, "lhotse.serialization", None)
    records = read_manifest(compressed, CONTRACT)
    assert records == read_manifest(plain, CONTRACT)
    assert [r.text for r in records] == ["he was not an ill disposed young man", "an ill disposed"]
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"audio_path": "clip.wav", "duration_s": 2.99}\nnot json\n'))
    with pytest.raises(ManifestError) as caught:
        read_manifest(bad, CONTRACT)
    assert {(p.line, p.field) for p in caught.value.problems} == {(1, "text"), (2, "json")}, caught.value.problems


@pytest.mark.parametrize("compress", [False, True])
def test_a_transcript_with_unicode_line_separators_stays_one_row(tmp_path: Path, compress: bool) -> None:
    # write_manifest (and lhotse) leave U+0085 / U+2028 / U+2029 unescaped; str.splitlines cut rows there.
    (tmp_path / "clip.wav").symlink_to(CLIP)
    text = "he was not\u2028an ill\u0085disposed\u2029young man"
    record = ManifestRecord(audio_path=tmp_path / "clip.wav", duration_s=2.99, text=text)
    written = write_manifest([record], tmp_path / "m.jsonl")
    assert "\u2028" in written.read_text(encoding="utf-8")  # written as the character, not escaped
    if compress:
        written = tmp_path / "m.jsonl.gz"
        written.write_bytes(gzip.compress((tmp_path / "m.jsonl").read_bytes()))
    (read,) = read_manifest(written, CONTRACT)
    assert read.text == text and read.line == 1


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_gzip_manifest_is_a_manifest_error(tmp_path: Path, damage: str) -> None:
    data = gzip.compress(b'{"audio_path": "clip.wav", "duration_s": 2.99, "text": "t"}\n' * 200)
    manifest = tmp_path / "train.jsonl.gz"
    manifest.write_bytes(data[: len(data) // 2] if damage == "truncated" else data[:20] + b"\xff" * 40 + data[60:])
    with pytest.raises(ManifestError, match="cannot read"):
        read_manifest(manifest, CONTRACT)


def test_empty_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="holds no rows"):
        read_manifest(_write(tmp_path / "empty.jsonl", [""]), CONTRACT)


def test_record_to_dict_round_trips_through_a_manifest(tmp_path: Path) -> None:
    record = ManifestRecord(audio_path=CLIP, duration_s=2.99, text="t", recording="chapter1")
    written = write_manifest([record], tmp_path / "m.jsonl")
    assert read_manifest(written, CONTRACT)[0].recording == "chapter1"
    assert np.isclose(read_manifest(written, CONTRACT)[0].duration_s, 2.99)


def test_offset_rows_are_parts_of_their_file_and_checked_against_its_end(tmp_path: Path) -> None:
    (tmp_path / "clip.wav").symlink_to(CLIP)
    good = {"audio_path": "clip.wav", "offset_s": 1.0, "duration_s": 1.5, "text": "an ill disposed"}
    lines = [
        json.dumps(good),  # 1: [1.0, 2.5] s of 2.99 s
        json.dumps({**good, "offset_s": -0.5}),  # 2: negative offset
        json.dumps({**good, "offset_s": 2.0}),  # 3: [2.0, 3.5] s runs past the end
    ]
    with pytest.raises(ManifestError) as caught:
        read_manifest(_write(tmp_path / "train.jsonl", lines), CONTRACT)
    assert [(p.line, p.field) for p in caught.value.problems] == [(2, "offset_s"), (3, "duration_s")]
    (record,) = read_manifest(_write(tmp_path / "ok.jsonl", lines[:1]), CONTRACT)
    assert (record.offset_s, record.duration_s) == (1.0, 1.5)
    assert record.to_dict(relative_to=tmp_path)["offset_s"] == 1.0
