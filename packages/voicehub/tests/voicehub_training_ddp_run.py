"""A tiny Silero VAD training run, started by the DDP test under ``torchrun`` (or in one process).

Usage: ``python -m torch.distributed.run --standalone --nproc-per-node 2 voicehub_training_ddp_run.py OUT BATCH``.
Every rank trains on its slice of each global batch; rank 0 alone writes ``OUT/checkpoints``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from voicehub import AutoModel
from voicehub.training import AutoTrainingAdapter, Trainer, TrainerConfig, get_training_spec
from voicehub_training_data import vad_records

STEPS = 2
LEARNING_RATE = 1e-3
SEED = 5


def run(output_dir: Path, batch_size: int) -> Trainer:
    """Train ``STEPS`` steps of ``batch_size`` records per rank on 8 real clips; return the trainer."""
    model = AutoModel.from_pretrained(model_type="vad_silero")
    records = vad_records(8)
    adapter = AutoTrainingAdapter.from_host(model, get_training_spec("vad_silero"), records=records)
    config = TrainerConfig(
        max_steps=STEPS, batch_size=batch_size, learning_rate=LEARNING_RATE, seed=SEED, max_grad_norm=None
    )
    trainer = Trainer(adapter, config, train_records=records, output_dir=output_dir)
    trainer.fit(resume=False)
    return trainer


if __name__ == "__main__":
    run(Path(sys.argv[1]), int(sys.argv[2]))
