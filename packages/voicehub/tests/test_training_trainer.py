"""The Trainer on real Silero VAD weights and real speech: exact resume, checkpoints, callbacks."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
import torch

from voicehub import AutoModel
from voicehub.core.errors import AudioDecodeError
from voicehub.training import (
    AutoTrainingAdapter,
    EarlyStopping,
    JSONLMetricsLog,
    ManifestRecord,
    ResumeMismatchError,
    Trainer,
    TrainerCallback,
    TrainerConfig,
    TrainingError,
    get_training_spec,
)
from voicehub.training.adapters.frame_classification import FrameClassificationAdapter
from voicehub.training.callbacks import Metrics
from voicehub_training_data import vad_records

CONFIG = TrainerConfig(
    max_steps=4, batch_size=2, grad_accumulation_steps=2, learning_rate=1e-3, scheduler="linear", warmup_steps=1,
    max_grad_norm=0.5, seed=11,
)  # fmt: skip


class StopAt(TrainerCallback):
    """Interrupts a run after ``step`` (as a crash right after a checkpoint would)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, trainer: Trainer, metrics: Metrics) -> None:
        if trainer.state.step == self.step:
            trainer.request_stop("interrupted for the test")


def _trainer(output_dir: Path, config: TrainerConfig = CONFIG, callbacks: tuple[TrainerCallback, ...] = ()) -> Trainer:
    model = AutoModel.from_pretrained(model_type="vad_silero")
    records = vad_records(6)
    adapter = AutoTrainingAdapter.from_host(model, get_training_spec("vad_silero"), records=records)
    return Trainer(
        adapter, config, train_records=records, eval_records=records[:2], output_dir=output_dir, callbacks=callbacks
    )


def _tensors(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in trainer.module.state_dict().items()}


def test_resumed_run_equals_an_uninterrupted_run_bit_for_bit(tmp_path: Path) -> None:
    straight = _trainer(tmp_path / "straight")
    before = _tensors(straight)
    result = straight.fit()
    assert result.step == 4 and result.resumed_from is None and result.stop_reason is None
    expected = _tensors(straight)
    changed = [name for name in expected if not torch.equal(expected[name], before[name])]
    assert changed and all(name.startswith("graph.branches.16k.") for name in changed)

    first = _trainer(tmp_path / "resumed", callbacks=(StopAt(2),))
    stopped = first.fit()
    assert stopped.step == 2 and stopped.stop_reason == "interrupted for the test"
    second = _trainer(tmp_path / "resumed")  # a new model, as a new process would build
    resumed = second.fit()
    assert resumed.resumed_from == 2 and resumed.step == 4
    actual = _tensors(second)
    assert all(torch.equal(actual[name], expected[name]) for name in expected)
    assert resumed.metrics["loss"] == result.metrics["loss"]
    assert resumed.metrics["eval_loss"] == result.metrics["eval_loss"]


def test_resume_refuses_a_changed_plan(tmp_path: Path) -> None:
    _trainer(tmp_path, callbacks=(StopAt(1),)).fit()
    changed = TrainerConfig.from_dict({**CONFIG.to_dict(), "learning_rate": 5e-4})
    with pytest.raises(ResumeMismatchError, match=r"trainer\.learning_rate: saved 0\.001, now 0\.0005"):
        _trainer(tmp_path, config=changed).fit()
    with pytest.raises(TrainingError, match="already holds checkpoints"):
        _trainer(tmp_path).fit(resume=False)


def test_metrics_log_and_early_stopping(tmp_path: Path) -> None:
    config = TrainerConfig.from_dict({**CONFIG.to_dict(), "max_steps": 6, "eval_every_steps": 1})
    log = tmp_path / "metrics.jsonl"
    stopper = EarlyStopping(patience=1, min_delta=10.0)  # no decrease of 10 nats: stops at the 2nd evaluation
    result = _trainer(tmp_path / "run", config=config, callbacks=(JSONLMetricsLog(log), stopper)).fit()
    assert result.step == 2 and result.stop_reason == "eval_loss did not improve for 1 evaluation(s)"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(row["event"], row["step"]) for row in rows] == [("step", 1), ("evaluate", 1), ("step", 2), ("evaluate", 2)]
    assert rows[0]["learning_rate"] == pytest.approx(1e-3 / 2)  # warm-up: (0 + 1) / (1 + 1)
    assert all(row["loss"] > 0 for row in rows if row["event"] == "step")


def test_micro_batches_are_decoded_in_data_workers_and_train_the_same_tensors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded_by = tmp_path / "pids"
    collate = FrameClassificationAdapter.collate

    def recording(self: FrameClassificationAdapter, records: list[ManifestRecord]) -> object:
        with decoded_by.open("a") as file:  # the workers are processes: they report through a file
            file.write(f"{os.getpid()}\n")
        return collate(self, records)

    monkeypatch.setattr(FrameClassificationAdapter, "collate", recording)
    records = vad_records(6)
    tensors = {}
    for workers in (1, 0):
        model = AutoModel.from_pretrained(model_type="vad_silero")
        adapter = AutoTrainingAdapter.from_host(model, get_training_spec("vad_silero"), records=records)
        config = dataclasses.replace(CONFIG, data_workers=workers)
        trainer = Trainer(adapter, config, train_records=records, output_dir=tmp_path / f"workers-{workers}")
        trainer.fit()
        pids = set(decoded_by.read_text().split())
        decoded_by.unlink()
        # with a worker, not one micro-batch was decoded by the training process; without, all were
        assert (str(os.getpid()) in pids) == (workers == 0) and len(pids) == 1
        tensors[workers] = _tensors(trainer)
    assert tensors[0].keys() == tensors[1].keys()
    assert all(torch.equal(tensors[0][name], tensors[1][name]) for name in tensors[0])  # bit for bit


def test_a_record_that_fails_to_decode_in_a_data_worker_raises_its_own_error(tmp_path: Path) -> None:
    records = vad_records(4)
    records[1] = dataclasses.replace(records[1], audio_path=tmp_path / "gone.wav")  # removed after validation
    model = AutoModel.from_pretrained(model_type="vad_silero")
    adapter = AutoTrainingAdapter.from_host(model, get_training_spec("vad_silero"), records=records)
    trainer = Trainer(adapter, CONFIG, train_records=records, output_dir=tmp_path / "run")
    with pytest.raises(AudioDecodeError, match=r"gone\.wav"):  # as on the training thread, not a worker traceback
        trainer.fit()
