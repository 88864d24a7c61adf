"""Silero VAD training on 11 real clips, started by the uneven-DDP tests under ``torchrun`` (or in one process).

Usage: ``python -m torch.distributed.run --standalone --nproc-per-node 2 voicehub_training_ddp_uneven_run.py OUT MODE``.

* ``MODE=uneven``: 2 steps of 3 records per rank (global batch 6). 11 records make global
  batches of 6 and 5: the 5 split 3 + 2 over the ranks, so the ranks' losses must be weighted by
  record count to equal one process with batch 6. Rank 0 writes ``OUT/metrics.json`` (each step's
  loss and gradient norm) and the checkpoint.
* ``MODE=stall``: rank 1 stalls for 12 s after step 1 while rank 0 goes on; with
  ``distributed_timeout_s = 3`` each rank writes ``OUT/rank<r>.json`` with the error it ended on.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from voicehub import AutoModel
from voicehub.training import AutoTrainingAdapter, Trainer, TrainerCallback, TrainerConfig, get_training_spec
from voicehub.training.callbacks import Metrics
from voicehub.training.errors import DistributedTimeoutError
from voicehub_training_data import vad_records

RECORDS = 11
STEPS = 2
SEED = 5
STALL_S = 12.0
TIMEOUT_S = 3.0


class _Record(TrainerCallback):
    def __init__(self) -> None:
        self.steps: list[dict[str, float]] = []

    def on_step_end(self, trainer: Trainer, metrics: Metrics) -> None:
        self.steps.append({"loss": metrics["loss"], "grad_norm": metrics["grad_norm"]})


class _Stall(TrainerCallback):
    def on_step_end(self, trainer: Trainer, metrics: Metrics) -> None:
        if trainer.dist.rank == 1 and trainer.state.step == 1:
            time.sleep(STALL_S)


def run(output_dir: Path, batch_size: int, *, stall: bool = False) -> tuple[Trainer, list[dict[str, float]]]:
    """Train ``STEPS`` steps of ``batch_size`` records per rank on ``RECORDS`` real clips."""
    model = AutoModel.from_pretrained(model_type="vad_silero")
    records = vad_records(RECORDS)
    adapter = AutoTrainingAdapter.from_host(model, get_training_spec("vad_silero"), records=records)
    config = TrainerConfig(
        max_steps=STEPS, batch_size=batch_size, learning_rate=1e-3, seed=SEED, max_grad_norm=None,
        distributed_timeout_s=TIMEOUT_S if stall else 300.0, checkpoint_at_end=not stall,
    )  # fmt: skip
    recorder = _Record()
    callbacks = (recorder, _Stall()) if stall else (recorder,)
    trainer = Trainer(adapter, config, train_records=records, output_dir=output_dir, callbacks=callbacks)
    trainer.fit(resume=False)
    return trainer, recorder.steps


if __name__ == "__main__":
    out = Path(sys.argv[1])
    if sys.argv[2] == "stall":
        import os

        rank = int(os.environ["RANK"])
        try:
            run(out, 1, stall=True)
            ended: dict[str, object] = {"error": None}
        except DistributedTimeoutError as err:
            ended = {"error": type(err).__name__, "rank": err.rank, "where": err.where, "timeout_s": err.timeout_s}
        out.mkdir(parents=True, exist_ok=True)
        (out / f"rank{rank}.json").write_text(json.dumps(ended))
    else:
        trainer, steps = run(out, 3)
        if trainer.is_main:
            (out / "metrics.json").write_text(json.dumps(steps))
