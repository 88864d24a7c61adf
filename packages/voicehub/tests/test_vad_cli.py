"""``voicehub vad``: text, strict JSON and RTTM output on real LibriVox clips."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from voicehub.cli import main

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
    assert result.exit_code == 1 and "threshold: expected a probability in [0, 1], got 2.0" in result.output
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--model", "asr_nothing"])
    assert result.exit_code == 1 and "unknown model" in result.output


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
