"""``voicehub batch vad|embed|transcribe``: the corpus job from the command line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf
from click.testing import CliRunner

from voicehub.batch import read_output
from voicehub.cli import main
from voicehub.cli.batch import EXIT_RAY_UNREACHABLE

ROOT = Path(__file__).resolve().parents[3]
CLIPS = sorted((ROOT / "tests" / "data" / "librivox").glob("*.wav"))[:3]


def test_batch_vad_writes_parts_reports_failures_and_resumes(tmp_path: Path) -> None:
    listing = tmp_path / "inputs.txt"
    listing.write_text("\n".join([*(str(p) for p in CLIPS), str(tmp_path / "missing.wav")]) + "\n")
    output = tmp_path / "out"
    args = ["batch", "vad", str(listing), "--output", str(output), "--workers", "1", "--batch-size", "2"]
    result = CliRunner().invoke(main, [*args, "--progress", "--device", "cpu"])
    assert result.exit_code == 1, result.output
    assert "4 files" in result.stdout and "1 failed" in result.stdout
    assert "batch vad" in result.stderr and "h audio" in result.stderr  # the progress bar: files and audio hours
    rows = {row["path"]: row for row in read_output(output).to_pylist()}
    assert rows[str(tmp_path / "missing.wav")]["error"].startswith("read: AudioDecodeError")
    first = rows[str(CLIPS[1])]["vad_segments"][0]
    assert (first["start_s"], first["end_s"]) == (0.226, 2.878)  # the Silero segment of the 0880 clip
    again = CliRunner().invoke(main, [*args, "--progress", "--no-retry-failed"])
    assert "this run: 0 files (4 already done, 0 failed before and retried, 0 changed since and redone)" in again.stdout
    hours = sum(sf.info(path).duration for path in CLIPS) / 3600
    assert "4/4" in again.stderr and f"{hours:.3f} h audio" in again.stderr  # the resumed files count as done
    assert "0/4" not in again.stderr
    retried = CliRunner().invoke(main, [*args, "--progress"])  # the missing file is tried again, and fails again
    assert retried.exit_code == 1
    assert (
        "this run: 1 files (3 already done, 1 failed before and retried, 0 changed since and redone)" in retried.stdout
    )
    assert "3/4" in retried.stderr and "4 files" in retried.stdout and "1 failed" in retried.stdout
    refused = CliRunner().invoke(main, [*args, "--no-resume"])
    assert refused.exit_code == 1 and "pass resume=True" in refused.stderr


def test_batch_embed_refuses_a_model_of_another_task(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["batch", "embed", str(CLIPS[0]), "--output", str(tmp_path), "--model", "vad_silero"]
    )
    assert result.exit_code != 0 and "vad_silero" in result.output


def test_batch_resume_with_another_model_is_refused_before_any_work(tmp_path: Path) -> None:
    output = tmp_path / "out"
    args = ["batch", "vad", "--output", str(output), "--workers", "1", "--no-progress", "--device", "cpu"]
    first = CliRunner().invoke(main, [*args[:2], str(CLIPS[0]), str(CLIPS[1]), *args[2:]])
    assert first.exit_code == 0, first.output
    parts = sorted(output.glob("part-*.parquet"))
    other = CliRunner().invoke(main, [*args[:2], *map(str, CLIPS), *args[2:], "--model", "vad_webrtc"])
    assert other.exit_code == 1
    assert "BatchResumeMismatchError" not in other.stderr  # a clean message, not a traceback
    assert "steps[0].model_type: saved 'vad_silero', now 'vad_webrtc'" in other.stderr
    assert "steps[0].source: saved 'dist:silero-vad/silero_vad/data/silero_vad.jit', now None" in other.stderr
    assert sorted(output.glob("part-*.parquet")) == parts  # nothing ran: the third clip was not written
    assert read_output(output).column("path").to_pylist() == sorted(map(str, CLIPS[:2]))


def test_bad_inputs_and_settings_are_usage_errors_before_any_work(tmp_path: Path) -> None:
    output = tmp_path / "out"
    manifest = tmp_path / "in.jsonl"

    def refused(*arguments: str, inputs: tuple[str, ...] = (str(CLIPS[0]),), to: Path = output) -> str:
        result = CliRunner().invoke(main, ["batch", "vad", *inputs, "--output", str(to), *arguments])
        assert result.exit_code == 2, result.output  # a usage error, not a traceback (exit 1) or a job
        assert result.exception is None or isinstance(result.exception, SystemExit)
        return result.stderr

    manifest.write_text(f'{{"path": "{CLIPS[0]}"}}\n{{"path": oops}}\n')
    assert f"{manifest}:2: not a JSON object" in refused(inputs=(str(manifest),))
    manifest.write_text(f'{{"path": "{CLIPS[0]}"}}\n{{"audio": "a.wav"}}\n')
    assert f"{manifest}:2: expected an object with a string 'path'" in refused(inputs=(str(manifest),))
    missing_list = tmp_path / "missing.jsonl"
    assert f"INPUT {missing_list}: no such file or directory" in refused(inputs=(str(missing_list),))
    typo = tmp_path / "corpsu"
    assert f"INPUT {typo}: no such file or directory" in refused(inputs=(str(CLIPS[0]), str(typo)))
    assert "'--workers': 0 is not in the range x>=1" in refused("--workers", "0")
    assert "'--workers': -2 is not in the range x>=1" in refused("--workers", "-2")
    assert "'--batch-size': 0 is not in the range x>=1" in refused("--batch-size", "0")
    assert "'--cpus-per-worker': 0 is not in the range x>=1" in refused("--cpus-per-worker", "0")
    assert "/dev/null exists and is not a directory" in refused(to=Path("/dev/null"))
    manifest.write_text("a file\n")
    assert "is a file" in refused(to=manifest)
    assert not output.exists()


def test_an_unreachable_ray_address_is_one_line_with_its_own_exit_status(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    output = tmp_path / "out"
    arguments = ["batch", "vad", str(CLIPS[0]), "--output", str(output), "--engine", "ray", "--no-progress"]
    result = CliRunner().invoke(main, [*arguments, "--address", f"127.0.0.1:{port}", "--device", "cpu"])
    assert result.exit_code == EXIT_RAY_UNREACHABLE == 3, result.output
    assert result.stderr.splitlines() == [
        f"Error: ray cluster at '127.0.0.1:{port}' cannot be reached (TCP connection: Connection refused); start it "
        "(ray start --head) or give the address of a running one (HOST:6379, ray://HOST:10001, or auto for the one "
        "`ray start` runs here)"
    ]
    assert not output.exists()  # refused before any work


@pytest.mark.slow  # two local Ray starts: ~30 s each on 2 idle cores
def test_a_successful_ray_run_logs_no_error_line_and_nothing_with_quiet(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the ray engine's extra (voicehub[ray]) is not installed")
    # RAY_ADDRESS=local: a Ray of its own, never a cluster another process started on this machine
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RAY_ADDRESS": "local", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    env.pop("RAY_BACKEND_LOG_LEVEL", None)
    for flags, output in ((["-q"], tmp_path / "quiet"), ([], tmp_path / "default")):
        command = [sys.executable, "-m", "voicehub", "batch", "vad", str(CLIPS[1]), "--output", str(output)]
        done = subprocess.run(
            [*command, "--engine", "ray", "--workers", "1", "--no-progress", "--device", "cpu", *flags],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "1 files, 0.0008 h of audio, 0 failed" in done.stdout
        if flags:
            assert done.stderr == ""  # -q: Ray's own log is silent too
        else:  # Ray's warnings only: no INFO chatter, no error-level line (Python "ERROR", C++ " E ")
            assert {line.split()[2] for line in done.stderr.splitlines()} <= {"WARNING"}, done.stderr
    assert read_output(tmp_path / "quiet").column("vad_segments").to_pylist()[0][0]["end_s"] == 2.878
