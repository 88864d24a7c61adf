"""``voicehub vad``: text, strict JSON and RTTM output on real LibriVox clips."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from voicehub.cli import main
from voicehub.cli.vad import rttm_file_ids

ROOT = Path(__file__).resolve().parents[3]
LIBRIVOX = sorted((ROOT / "tests" / "data" / "librivox").glob("*.wav"))
CLIP_0880 = ROOT / "tests" / "data" / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav"


def test_vad_command_prints_the_segment_of_a_librivox_clip() -> None:
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].endswith("0880.wav: 1 speech segment in 2.99 s (2.65 s of speech)")
    assert lines[1].split() == ["0.226", "-", "2.878", "s", "score", "0.93"]


def test_vad_command_writes_json_and_rttm_for_many_files(tmp_path: Path) -> None:
    rttm = tmp_path / "out" / "vad.rttm"
    result = CliRunner().invoke(main, ["vad", *map(str, LIBRIVOX), "--json", "--rttm", str(rttm), "--no-progress"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert [Path(r["source"]).name for r in records] == [p.name for p in LIBRIVOX]
    assert all(len(r["segments"]) == 1 for r in records)
    assert records[1]["segments"][0]["start_sample"] == 3616 and records[1]["segments"][0]["end_sample"] == 46048
    lines = rttm.read_text().splitlines()
    assert len(lines) == 5
    assert lines[1] == "SPEAKER sense_and_sensibility_01_austen_64kb-0880 1 0.226 2.652 <NA> <NA> speech <NA> <NA>"


def test_vad_command_options_and_webrtc_model() -> None:
    result = CliRunner().invoke(
        main, ["vad", str(CLIP_0880), "--model", "vad_webrtc", "--speech-pad-ms", "0", "--rttm", "-"]
    )
    assert result.exit_code == 0, result.output
    (line,) = result.output.splitlines()
    fields = line.split()
    assert fields[:3] == ["SPEAKER", "sense_and_sensibility_01_austen_64kb-0880", "1"]
    assert 0.2 < float(fields[3]) < 0.35 and 2.4 < float(fields[4]) < 2.8


def test_vad_command_reports_bad_files_and_options_and_writes_no_rttm(tmp_path: Path) -> None:
    notes = tmp_path / "notes.wav"
    notes.write_text("not audio")
    rttm = tmp_path / "vad.rttm"
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), str(notes), "--rttm", str(rttm), "--no-progress"])
    assert result.exit_code == 1
    assert "notes.wav: cannot decode as audio" in result.output
    assert not rttm.exists()
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--threshold", "2"])
    assert result.exit_code == 2 and "--threshold 2.0: " in result.output and "()" not in result.output
    assert "threshold: expected a probability in [0, 1], got 2.0" in result.output
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--model", "asr_nothing"])
    assert result.exit_code == 2  # a usage error, before anything loads
    assert (
        "--model asr_nothing: no such model; this command runs voice-activity-detection models (vad_silero, "
        "vad_webrtc)" in " ".join(result.output.split())
    )


@pytest.mark.slow
def test_vad_command_runs_as_a_program_offline() -> None:
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [str(Path(sys.executable).parent / "voicehub"), "vad", str(CLIP_0880)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "1 speech segment" in result.stdout


# ------------------------------------------------------------------ output destinations and inputs
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("/proc/x.rttm", "--rttm file /proc/x.rttm: cannot create files in /proc"),
        ("{clip}/x.rttm", "0880.wav is not a directory, so nothing can be created under it"),
        ("{tmp}", "is a directory"),
    ],
)
def test_vad_command_refuses_an_unwritable_rttm_destination_before_decoding(
    tmp_path: Path, where: str, message: str
) -> None:
    rttm = where.format(clip=CLIP_0880, tmp=tmp_path)
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--rttm", rttm])
    assert result.exit_code in (1, 2)  # 2: click's own check of a directory
    assert message in result.output
    assert "speech segment" not in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_vad_command_creates_missing_rttm_parents_with_ordinary_modes(tmp_path: Path) -> None:
    rttm = tmp_path / "a" / "b" / "vad.rttm"
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--rttm", str(rttm)])
    assert result.exit_code == 0, result.output
    assert (
        rttm.read_text()
        == "SPEAKER sense_and_sensibility_01_austen_64kb-0880 1 0.226 2.652 <NA> <NA> speech <NA> <NA>\n"
    )
    assert rttm.stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert [p.name for p in rttm.parent.iterdir()] == ["vad.rttm"]  # no temporary left


def test_vad_command_refuses_json_and_rttm_on_the_same_stdout() -> None:
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--json", "--rttm", "-"])
    assert result.exit_code == 2
    assert "--json and --rttm - would both print to standard output" in result.output
    assert "SPEAKER" not in result.output and "segments" not in result.output


def test_vad_command_gives_same_named_files_distinct_rttm_ids(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        shutil.copy(CLIP_0880, tmp_path / folder / "clip.wav")
    result = CliRunner().invoke(
        main,
        ["vad", str(tmp_path / "a" / "clip.wav"), str(tmp_path / "b" / "clip.wav"), "--rttm", "-", "--no-progress"],
    )
    assert result.exit_code == 0, result.output
    assert [line.split()[1] for line in result.output.splitlines()] == ["a/clip", "b/clip"]
    assert rttm_file_ids([Path("x/talk.wav"), Path("x/talk.flac")]) == ["talk.wav", "talk.flac"]
    assert rttm_file_ids([Path("x/my talk.wav"), Path("y/other.wav")]) == ["my_talk", "other"]


def test_vad_command_applies_the_default_model_to_a_source_weight_file() -> None:
    v5 = ROOT / "tests" / "data" / "silero" / "v5" / "silero_vad.jit"
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--source", str(v5), "--json"])
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.output)
    assert record["metadata"]["model_type"] == "vad_silero" and record["metadata"]["model_version"] == "v5"
    assert len(record["segments"]) == 1 and record["segments"][0]["start_sample"] == 3616


def test_vad_command_says_a_missing_source_is_not_found() -> None:
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--source", "/nonexistent"])
    assert result.exit_code == 1
    assert "/nonexistent' not found" in result.output and "speech segment" not in result.output


def test_vad_command_reads_headerless_pcm_only_with_a_sample_rate() -> None:
    raw = ROOT / "tests" / "data" / "goforward.raw"  # s16le 16 kHz mono, "go forward ten meters"
    result = CliRunner().invoke(main, ["vad", str(raw)])
    assert result.exit_code == 2
    assert (
        "headerless raw PCM" in result.output
        and "--sample-rate" in result.output
        and "ffmpeg -f s16le" in result.output
    )
    result = CliRunner().invoke(main, ["vad", str(raw), "--sample-rate", "16000"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{raw}: 1 speech segment in 2.79 s (1.82 s of speech)"
    assert lines[1].split()[:3] == ["0.482", "-", "2.302"]
