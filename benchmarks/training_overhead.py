"""Benchmark the Trainer's overhead against a plain PyTorch loop on the same model and data, in one run.

Both sides train the same family module (the integration's graph plus its objective, built by
``AutoTrainingAdapter``) on the same real clips with the same collate function, batch size and
AdamW settings, on the CPU:

* plain: ``for indices in batches: batch = collate(...); loss = module(batch)["loss"];
  loss.backward(); clip_grad_norm_; optimizer.step(); optimizer.zero_grad()``;
* Trainer: ``Trainer(...).fit(resume=False)`` for the same number of steps (sampler, metrics,
  callbacks, learning-rate schedule; no checkpoint: ``checkpoint_at_end=False``).

Each of ``--repeats`` rounds runs the two one after the other, the order swapped every round (so
load from other processes hits both alike). The script reports samples per second of each (best
and median over rounds) and the Trainer's overhead ``trainer_time / plain_time - 1`` on the best
and median times, for wall-clock time and for process CPU time (``time.process_time``, all
threads): on a shared machine the CPU time is the steadier of the two, since waiting for a core
does not count.

Usage: ``HF_HUB_OFFLINE=1 uv run python benchmarks/training_overhead.py [--model sv_xvector]
[--steps 6] [--batch-size 4] [--repeats 5] [--threads 2] [--record]`` (``--record`` appends the run to
``benchmarks/results/training_overhead.jsonl``)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "packages" / "voicehub" / "tests"))

from _results import Row, RunRecorder, add_record_option  # noqa: E402
from voicehub import AutoModel  # noqa: E402
from voicehub.training import (  # noqa: E402
    AutoTrainingAdapter,
    LengthBucketBatchSampler,
    Trainer,
    TrainerConfig,
    get_training_spec,
)
from voicehub_training_data import librivox_records, speaker_records, vad_records  # noqa: E402

RECORDS = {
    "frame_classification": lambda: vad_records(8),
    "speaker_classification": lambda: speaker_records(4, 2),
    "sequence_to_sequence": lambda: librivox_records(("0870", "0880", "0890", "0920", "0930")),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="sv_xvector")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    add_record_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recorder = RunRecorder("training_overhead", threads=args.threads, parameters=vars(args))
    rows: list[Row] = []

    spec = get_training_spec(args.model)
    records = RECORDS[str(spec.family)]()
    model = AutoModel.from_pretrained(model_type=args.model, device="cpu")
    adapter = AutoTrainingAdapter.from_host(model, spec, records=records)
    config = TrainerConfig(
        max_steps=args.steps, batch_size=args.batch_size, learning_rate=1e-4, checkpoint_at_end=False, seed=0
    )
    module = adapter.module
    parameters = [p for p in module.parameters() if p.requires_grad]
    sampler = LengthBucketBatchSampler([r.duration_s for r in records], batch_size=args.batch_size, seed=0)

    def plain() -> int:
        optimizer = torch.optim.AdamW(parameters, lr=1e-4)
        module.train()
        done, samples, epoch = 0, 0, 0
        while done < args.steps:
            for indices in sampler.batches(epoch):
                batch = adapter.collate([records[i] for i in indices])
                loss = module(batch)["loss"]
                loss.backward()
                torch.nn.utils.clip_grad_norm_(parameters, 1.0)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                done, samples = done + 1, samples + len(indices)
                if done == args.steps:
                    break
            epoch += 1
        return samples

    def trainer() -> int:
        with tempfile.TemporaryDirectory() as directory:
            Trainer(adapter, config, train_records=records, output_dir=directory).fit(resume=False)
        return counts["plain"]  # the same sampler and steps: the same batches

    wall: dict[str, list[float]] = {"plain": [], "trainer": []}
    cpu: dict[str, list[float]] = {"plain": [], "trainer": []}
    counts: dict[str, int] = {"plain": plain()}  # also the warm-up (allocator, first-call costs)
    for round_index in range(args.repeats):
        order = (("plain", plain), ("trainer", trainer))
        for name, call in order if round_index % 2 == 0 else order[::-1]:  # neither always runs second
            start, start_cpu = time.perf_counter(), time.process_time()
            counts[name] = call()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    print(f"model {args.model}: {args.steps} steps of batch {args.batch_size}, {args.repeats} rounds")
    for label, times in (("wall", wall), ("cpu", cpu)):
        for name in ("plain", "trainer"):
            rates = [counts[name] / t for t in times[name]]
            print(f"  {label:4s} {name:8s} samples/s: best {max(rates):.3f}, median {statistics.median(rates):.3f}")
        best = min(times["trainer"]) / min(times["plain"]) - 1
        median = statistics.median(times["trainer"]) / statistics.median(times["plain"]) - 1
        print(f"  {label:4s} Trainer overhead: best {100 * best:+.1f} %, median {100 * median:+.1f} % (target < 5 %)")
        rows.append(({"clock": label}, {"overhead_best_percent": 100 * best, "overhead_median_percent": 100 * median}))
    if args.record:
        recorder.write(rows)


if __name__ == "__main__":
    main()
