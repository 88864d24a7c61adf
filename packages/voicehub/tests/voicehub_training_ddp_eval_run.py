"""Evaluation of Silero VAD on 5 real clips, started by the DDP evaluation test under ``torchrun`` (or in one process).

Usage: ``python -m torch.distributed.run --standalone --nproc-per-node 2 voicehub_training_ddp_eval_run.py OUT``.
Each rank writes ``OUT/rank<r>.json`` with the evaluation metrics it ends with (the same on every rank).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch

from voicehub import AutoModel
from voicehub.training import AutoTrainingAdapter, Trainer, TrainerConfig, get_training_spec
from voicehub.training.distributed import DistributedContext
from voicehub_training_data import vad_records

EVAL_RECORDS = 5
"""Not a multiple of 2 ranks x batch 2: the last global batch holds one record."""


def evaluate(output_dir: Path) -> dict[str, float]:
    """``Trainer.evaluate()`` on ``EVAL_RECORDS`` clips, in the process group torchrun set up (if any)."""
    model = AutoModel.from_pretrained(model_type="vad_silero")
    records = vad_records(EVAL_RECORDS)
    adapter = AutoTrainingAdapter.from_host(model, get_training_spec("vad_silero"), records=records)
    config = TrainerConfig(max_steps=1, batch_size=2)
    trainer = Trainer(adapter, config, train_records=records, eval_records=records, output_dir=output_dir)
    trainer.dist = DistributedContext.from_environment(device=torch.device("cpu"))
    try:
        metrics = trainer.evaluate()
        rank = trainer.dist.rank
    finally:
        trainer.dist.close()
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / f"rank{rank}.json").write_text(json.dumps(metrics))
    return metrics


if __name__ == "__main__":
    evaluate(Path(sys.argv[1]))
