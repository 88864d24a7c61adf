"""Corpus throughput of ``voicehub.batch``: a plain one-thread loop, the local engine and Ray, in one run.

The corpus is ``--files`` long files (``--minutes`` each; default 40 files of 1 min; a longer
setting: ``--files 24 --minutes 5``, two hours of audio), built at run time from the
real test speech (the 60 s Silero test file, the LibriVox utterances and the synthetic voices,
concatenated in a seeded order), so every file differs. The job is VAD (Silero) + speaker
embedding (GE2E) per file. For ``--repeats`` rounds, interleaved so the machine's load hits all
alike, the script times:

* ``plain``: one process, one torch thread, ``detect`` then ``embed`` per file, in a loop;
* ``local``: ``map_corpus(engine="local", workers=--workers, cpus_per_worker=1)`` into a fresh
  directory: its wall time includes the engine start-up (model loads in the driver, forking the
  workers: the summary's ``startup_s`` is the time to the first finished batch);
* ``local-fs`` (with ``--forkserver``): the same with the workers started from a forkserver (a
  fresh process that imports torch, the workers then load their models: what ``cpus_per_worker
  > 1`` does), to compare the two start-ups;
* ``ray``: the same on a local Ray (``num_cpus=--workers``, dashboard off), Ray's own start-up
  (``ray.init``) timed separately and reported, not included.

Each engine's rate *once running* (files after its first batch, over the time from the first to
the last part) is also printed: what a corpus long enough to hide the start-up reaches.

It prints files/s and audio-hours/s per engine (min/median wall time), the ratio of each engine to
the plain loop, the start-up costs and the load average (``os.getloadavg``) around every run: the
machine is shared, so read the numbers next to the load.

Usage: ``HF_HUB_OFFLINE=1 uv run python benchmarks/batch_throughput.py [--files 40] [--minutes 1]
[--workers 2] [--repeats 2] [--batch-size 4] [--forkserver] [--no-ray] [--record]`` (``--record`` appends the
run to ``benchmarks/results/batch_throughput.jsonl``)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import numpy as np
import soundfile as sf

from _results import Row, RunRecorder, add_record_option

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def build_corpus(directory: Path, files: int, minutes: float, seed: int = 0) -> list[str]:
    """``files`` wav files of ``minutes`` each, concatenated from the test speech in a seeded order."""
    from voicehub.core.audio import load_audio

    sources = [DATA / "silero" / "test.wav", *sorted((DATA / "librivox").glob("*.wav"))]
    sources += sorted((DATA / "synthetic").glob("*.flac"))
    waves = [load_audio(path, target_sample_rate=16000).samples for path in sources]
    rng = np.random.default_rng(seed)
    target = int(minutes * 60 * 16000)
    paths = []
    for index in range(files):
        pieces: list[np.ndarray] = []
        total = 0
        while total < target:
            wave = waves[int(rng.integers(len(waves)))]
            pieces.append(wave)
            total += len(wave)
        path = directory / f"long-{index:03d}.wav"
        sf.write(path, np.concatenate(pieces)[:target], 16000, subtype="PCM_16")
        paths.append(str(path))
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--forkserver", action="store_true", help="also time the local engine's forkserver start-up")
    parser.add_argument("--no-ray", action="store_true")
    add_record_option(parser)
    args = parser.parse_args()

    import torch

    from voicehub import AutoModel
    from voicehub.batch import Step, _local, map_corpus

    torch.set_num_threads(1)
    recorder = RunRecorder("batch_throughput", threads=1, parameters=vars(args))
    work = Path(tempfile.mkdtemp(prefix="voicehub-batch-bench-"))
    (work / "corpus").mkdir()
    paths = build_corpus(work / "corpus", args.files, args.minutes)
    hours = sum(sf.info(p).duration for p in paths) / 3600

    def steps() -> list[Step]:
        return [
            Step(name="vad", model=AutoModel.from_pretrained(model_type="vad_silero", device="cpu")),
            Step(name="embed", model=AutoModel.from_pretrained(model_type="sv_ge2e", device="cpu")),
        ]

    plain_steps = steps()
    print(
        f"corpus: {len(paths)} files, {hours * 60:.1f} min of audio; cpus={os.cpu_count()}; workers={args.workers}; "
        f"local workers forked from the driver: {_local.forks_from_driver(1, plain_steps)}"
    )
    for step in plain_steps:  # the plain loop's models are loaded before timing (the engines load theirs inside)
        step.model.load()

    def plain() -> float | None:
        vad, embed = (step.model for step in plain_steps)
        for path in paths:
            vad.detect(path)
            embed.embed(path)
        return None

    steady: dict[str, list[float]] = {}
    first_files: dict[str, list[int]] = {}  # files in each run's first finished batch

    def engine(name: str) -> Callable[[], float | None]:
        def run() -> float | None:
            out = work / f"out-{name}"
            shutil.rmtree(out, ignore_errors=True)
            marks: list[tuple[float, int]] = []  # (time, files) of each written part
            with contextlib.ExitStack() as stack:
                if name == "local-fs":  # what cpus_per_worker > 1 does, with one thread per worker
                    stack.enter_context(mock.patch.object(_local, "forks_from_driver", lambda cpus, steps: False))
                summary = map_corpus(
                    paths,
                    steps(),
                    output=out,
                    engine="ray" if name == "ray" else "local",
                    workers=args.workers,
                    batch_size=args.batch_size,
                    progress=lambda files, seconds: marks.append((time.perf_counter(), files)),
                )
            if summary.failures:
                raise SystemExit(f"{name}: {summary.failures} files failed")
            if marks:
                first_files.setdefault(name, []).append(marks[0][1])
            if len(marks) > 1:  # files/s once running: the parts after the first, over the time they took
                steady.setdefault(name, []).append(sum(f for _, f in marks[1:]) / (marks[-1][0] - marks[0][0]))
            return summary.startup_s

        return run

    calls: dict[str, Callable[[], float | None]] = {"plain": plain, "local": engine("local")}
    if args.forkserver:
        calls["local-fs"] = engine("local-fs")
    ray_init_s = None
    if not args.no_ray:
        os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # same interpreter; do not ship the checkout
        import ray

        start = time.perf_counter()
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
        ray_init_s = time.perf_counter() - start
        calls["ray"] = engine("ray")
    times: dict[str, list[float]] = {name: [] for name in calls}
    startups: dict[str, list[float]] = {name: [] for name in calls}
    for round_index in range(args.repeats):
        for name, call in calls.items():
            load_before = os.getloadavg()[0]
            start = time.perf_counter()
            startup = call()
            elapsed = time.perf_counter() - start
            times[name].append(elapsed)
            if startup is not None:
                startups[name].append(startup)
            print(
                f"round {round_index + 1} {name:8s}: {elapsed:7.1f} s"
                + (f" (first batch after {startup:.1f} s)" if startup is not None else "")
                + f"; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    print()
    print(f"{'engine':8s} {'files/s min|med':>18s} {'audio h/s min|med':>22s} {'x plain min|med':>18s}")
    base_min, base_med = min(times["plain"]), statistics.median(times["plain"])
    for name, values in times.items():
        low, mid = min(values), statistics.median(values)
        print(
            f"{name:8s} {len(paths) / low:8.3f} | {len(paths) / mid:6.3f} {hours / low:10.5f} | {hours / mid:8.5f} "
            f"{base_min / low:8.2f} | {base_med / mid:5.2f}"
        )
    plain_rate = len(paths) / base_min
    for name, rates in steady.items():
        print(
            f"{name} once running (after its first batch): {max(rates):.3f} files/s at best, "
            f"{max(rates) / plain_rate:.2f} x the plain loop's best"
        )
    plain_file_s = base_min / len(paths)  # one file's work in the plain loop (its best round)
    for name, values in startups.items():
        if values:
            # the engine's own start-up: the time to the first finished batch less that batch's work
            # at the plain loop's per-file rate (what a plain loop would have spent on those files)
            overheads = [v - n * plain_file_s for v, n in zip(values, first_files[name], strict=True)]
            print(
                f"{name} start-up: first finished batch after min {min(values):.1f} s, max {max(values):.1f} s; "
                f"less that batch's work at the plain rate: min {min(overheads):.1f} s, max {max(overheads):.1f} s"
            )
    if ray_init_s is not None:
        print(f"ray.init (local, {args.workers} CPUs): {ray_init_s:.1f} s, not included above")
    if args.record:
        rows: list[Row] = []
        for name, values in times.items():
            results: dict[str, object] = {
                "wall_s": values,
                "files_per_s_best": len(paths) / min(values),
                "files_per_s_median": len(paths) / statistics.median(values),
                "x_plain_min": base_min / min(values),
                "x_plain_median": base_med / statistics.median(values),
            }
            if name in steady:
                results |= {
                    "files_per_s_once_running": max(steady[name]),
                    "x_plain_once_running": max(steady[name]) / plain_rate,
                }
            if startups[name]:
                results |= {
                    "startup_s": startups[name],
                    "startup_less_batch_work_s": [
                        v - n * plain_file_s for v, n in zip(startups[name], first_files[name], strict=True)
                    ],
                }
            if name == "ray":
                results["ray_init_s"] = ray_init_s
            rows.append(({"engine": name}, results))
        recorder.write(rows, note=f"{len(paths)} files, {hours * 60:.1f} min of audio")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
