"""The core of recipes/whisper_finetune.py in a tiny configuration: real tiny.en, one real LibriVox clip, 2 steps."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _recipe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("whisper_finetune_recipe", ROOT / "recipes" / "whisper_finetune.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_recipe_data_are_the_real_transcribed_clips_split_without_sharing_a_recording(tmp_path: Path) -> None:
    recipe = _recipe()
    records = recipe.real_utterances(tmp_path)
    assert len(records) == 6 and records[-1].text == "go forward ten meters"
    assert records[1].text == "he was not an ill disposed young man"
    assert abs(sum(r.duration_s for r in records[:5]) - 24.73) < 0.01  # the 5 LibriVox clips (measured)
    from voicehub.training import split_records

    splits = split_records(records, {"train": 0.6, "held_out": 0.4}, seed=0)
    assert splits["train"] and splits["held_out"]
    assert not {r.recording for r in splits["train"]} & {r.recording for r in splits["held_out"]}


@pytest.mark.slow
def test_lora_fine_tune_lowers_the_loss_and_the_adapter_and_merged_export_reload(tmp_path: Path) -> None:
    recipe = _recipe()
    clip = [r for r in recipe.real_utterances(tmp_path / "audio") if r.audio_path.stem.endswith("0880")]
    report = recipe.fine_tune("lora", clip, [], steps=2, learning_rate=1e-3, batch_size=1, out=tmp_path)
    assert report["trainable_parameters"] == 282_624  # the LoRA adapters of the decoder only
    assert len(report["losses"]) == 2 and all(math.isfinite(loss) for loss in report["losses"])
    before, after = report["before"]["train"], report["after"]["train"]
    assert after.loss < 0.8 * before.loss, (before.loss, after.loss)  # the same batch, teacher-forced
    assert after.hypotheses[0].strip().lower().startswith("he was not an ill")
    lora = report["lora"]
    assert lora["reload_max_abs_diff"] == 0.0  # the adapters alone, on a fresh base: identical logits
    assert lora["merged_max_abs_diff"] < 1e-3 and lora["merged_transcripts_equal"]
    assert (Path(lora["merged_dir"]) / "config.json").is_file()


@pytest.mark.slow
def test_full_fine_tune_trains_every_parameter_and_lowers_the_loss(tmp_path: Path) -> None:
    recipe = _recipe()
    clip = [r for r in recipe.real_utterances(tmp_path / "audio") if r.audio_path.stem.endswith("0880")]
    report = recipe.fine_tune("full", clip, [], steps=2, learning_rate=1e-5, batch_size=1, out=tmp_path)
    assert report["trainable_parameters"] == report["total_parameters"]  # the encoder too
    assert "lora" not in report and all(math.isfinite(loss) for loss in report["losses"])
    before, after = report["before"]["train"], report["after"]["train"]
    assert after.loss < 0.9 * before.loss, (before.loss, after.loss)
