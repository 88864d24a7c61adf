"""``voicehub train CONFIG`` on real Silero VAD weights and real speech."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from click.testing import CliRunner

from voicehub import AutoModel
from voicehub.cli import main
from voicehub.training import write_manifest
from voicehub_training_data import vad_records


def _config(tmp_path: Path, max_steps: int) -> Path:
    write_manifest(vad_records(4), tmp_path / "data" / "train.jsonl")
    write_manifest(vad_records(2), tmp_path / "data" / "valid.jsonl")
    config = tmp_path / "run.toml"
    config.write_text(
        f"""
model = "silero"
train_manifest = "data/train.jsonl"
eval_manifest = "data/valid.jsonl"
output_dir = "out"

[trainer]
max_steps = {max_steps}
batch_size = 2
learning_rate = 0.001
""",
        encoding="utf-8",
    )
    return config


def test_train_command_trains_logs_checkpoints_exports_and_resumes(tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(main, ["train", str(_config(tmp_path, 2)), "--no-progress"])
    assert done.exit_code == 0, done.output
    assert done.output.startswith("trained vad_silero to step 2: loss ")
    assert f"checkpoint: {tmp_path / 'out' / 'checkpoints' / 'step-00000002'}" in done.output
    rows = [json.loads(line) for line in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    assert [(row["event"], row["step"]) for row in rows] == [("step", 1), ("step", 2), ("evaluate", 2)]

    exported = AutoModel.from_pretrained(tmp_path / "out" / "model").load()
    trained = torch.load(tmp_path / "out/checkpoints/step-00000002/model.pt", weights_only=True)
    assert exported.runtime is not None
    for name, tensor in exported.runtime.module.state_dict().items():
        assert torch.equal(tensor, trained[f"graph.{name}"]), name

    again = runner.invoke(main, ["train", str(_config(tmp_path, 3)), "--no-progress"])
    assert again.exit_code == 0, again.output
    assert "to step 3" in again.output and "(resumed from step 2)" in again.output

    shutil.rmtree(tmp_path / "out" / "model")
    rerun = runner.invoke(main, ["train", str(_config(tmp_path, 3)), "--no-progress"])  # the finished run, again
    assert rerun.exit_code == 0, rerun.output
    assert rerun.output.startswith(f"vad_silero: the run in {tmp_path / 'out'} was already complete at step 3")
    assert "nan" not in rerun.output and "resumed" not in rerun.output
    assert f"checkpoint: {tmp_path / 'out' / 'checkpoints' / 'step-00000003'}" in rerun.output
    assert f"model: {tmp_path / 'out' / 'model'}" in rerun.output
    assert AutoModel.from_pretrained(tmp_path / "out" / "model").model_type == "vad_silero"  # exported again


def test_train_command_reports_every_bad_manifest_row_before_loading(tmp_path: Path) -> None:
    config = _config(tmp_path, 1)
    rows = (tmp_path / "data" / "train.jsonl").read_text().splitlines()
    broken = [
        rows[0],
        rows[1].replace('"duration_s":', '"duration_s":-'),
        "{not json",
        rows[2].replace(".flac", ".missing"),
    ]
    (tmp_path / "data" / "train.jsonl").write_text("\n".join(broken) + "\n")
    done = CliRunner().invoke(main, ["train", str(config)])
    assert done.exit_code == 1
    assert "3 problem(s) in 3 row(s)" in done.output
    assert "line 2: duration_s: expected seconds > 0" in done.output
    assert "line 3: json: not valid JSON" in done.output
    assert "line 4: audio_path: missing file" in done.output
    assert not (tmp_path / "out").exists()


def test_train_command_refuses_unknown_keys_and_untrainable_models(tmp_path: Path) -> None:
    config = tmp_path / "run.json"
    config.write_text(
        json.dumps({"model": "vad_silero", "train_manifest": "t", "output_dir": "o", "trainer": {"steps": 1}})
    )
    done = CliRunner().invoke(main, ["train", str(config)])
    assert done.exit_code == 1 and "trainer: unknown key(s) ['steps']; known keys are" in done.output
    config.write_text(
        json.dumps({"model": "vad_webrtc", "train_manifest": "t", "output_dir": "o", "trainer": {"max_steps": 1}})
    )
    done = CliRunner().invoke(main, ["train", str(config)])
    assert (
        done.exit_code == 1 and "vad_webrtc cannot be trained: the WebRTC detector is a fixed-point GMM" in done.output
    )


def test_train_command_refuses_an_output_dir_that_is_not_a_directory_before_loading(tmp_path: Path) -> None:
    config = _config(tmp_path, 1)
    (tmp_path / "out").write_text("a file\n")
    done = CliRunner().invoke(main, ["train", str(config), "--no-progress"])
    assert done.exit_code == 1 and done.exception is not None and isinstance(done.exception, SystemExit)
    assert f"training output_dir {tmp_path / 'out'} exists and is not a directory" in done.output
    assert "Traceback" not in done.output and "trained" not in done.output  # refused before step 1
    config.write_text(config.read_text().replace('output_dir = "out"', 'output_dir = "/dev/null"'))
    done = CliRunner().invoke(main, ["train", str(config), "--no-progress"])
    assert done.exit_code == 1 and "training output_dir /dev/null exists and is not a directory" in done.output
