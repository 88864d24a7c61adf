"""``voicehub train CONFIG`` pointing at lhotse cut manifests (Silero VAD, real speech)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from voicehub.cli import main
from voicehub_training_data import LIBRIVOX_DIR

lhotse = pytest.importorskip("lhotse", reason="lhotse is the voicehub[lhotse] extra")


def _cuts(path: Path, stems: tuple[str, ...]) -> Path:
    """Two 2 s cuts of each LibriVox clip, speech supervised from 0.2 s to 1.8 s of each cut."""
    cuts = []
    for stem in stems:
        recording = lhotse.Recording.from_file(LIBRIVOX_DIR / f"sense_and_sensibility_01_austen_64kb-{stem}.wav")
        for offset in (0.0, 0.9):
            cut = recording.to_cut().truncate(offset=offset, duration=2.0)
            cut.supervisions = [
                lhotse.SupervisionSegment(
                    id=f"{cut.id}-speech", recording_id=recording.id, start=0.2, duration=1.6, speaker="reader"
                )
            ]
            cuts.append(cut)
    lhotse.CutSet.from_cuts(cuts).to_file(path)
    return path


def test_train_command_trains_on_lhotse_cut_manifests(tmp_path: Path) -> None:
    _cuts(tmp_path / "train_cuts.jsonl.gz", ("0880", "0890"))
    _cuts(tmp_path / "valid_cuts.jsonl.gz", ("0930",))
    config = tmp_path / "run.toml"
    config.write_text(
        """
model = "vad_silero"
train_manifest = "train_cuts.jsonl.gz"
eval_manifest = "valid_cuts.jsonl.gz"
output_dir = "out"
export = false

[trainer]
max_steps = 1
batch_size = 2
learning_rate = 0.001
checkpoint_at_end = false
""",
        encoding="utf-8",
    )
    done = CliRunner().invoke(main, ["train", str(config), "--no-progress"])
    assert done.exit_code == 0, done.output
    assert done.output.startswith("trained vad_silero to step 1: loss ") and "eval_loss" in done.output


def test_train_command_reports_a_bad_cut_before_loading(tmp_path: Path) -> None:
    manifest = _cuts(tmp_path / "train_cuts.jsonl", ("0880",))
    lines = manifest.read_text(encoding="utf-8").splitlines()
    manifest.write_text("\n".join([lines[0], lines[1].replace('"start": 0.9', '"start": 9.0')]) + "\n")
    config = tmp_path / "run.toml"
    config.write_text(
        'model = "vad_silero"\ntrain_manifest = "train_cuts.jsonl"\noutput_dir = "out"\n[trainer]\nmax_steps = 1\n',
        encoding="utf-8",
    )
    done = CliRunner().invoke(main, ["train", str(config), "--no-progress"])
    assert done.exit_code != 0
    assert "1 problem(s) in 1 row(s)" in done.output and "line 2: duration_s:" in done.output, done.output
    assert not (tmp_path / "out").exists()
