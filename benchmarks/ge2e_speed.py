"""Benchmark the native GE2E encoder against resemblyzer 0.1.4 (the upstream), in one run.

For each input (the five LibriVox utterances, 25.7 s in all, and the 60 s Silero test file) the
script times ``--repeats`` rounds, same process, same CPU threads, the implementations interleaved
round-robin within each round (so load from other processes hits both alike):

* preprocessing: ``resemblyzer.preprocess_wav(path)`` against ``load_audio`` + ``ge2e.preprocess``;
* embedding: ``VoiceEncoder.embed_utterance(wav)`` against ``GE2ESpeakerEncoder.embed_utterances``
  on the same preprocessed samples;

and reports the speed ratios upstream / native (> 1: native is faster) of the minimum and of the
median times, and the largest absolute embedding difference. A batched row embeds all LibriVox
utterances in one native call; a long-file row embeds the 60 s file end to end, file to vector
(``resemblyzer.preprocess_wav`` + ``embed_utterance`` against ``GE2ESpeakerVerifier.embed_file``,
the block-by-block path ``embed`` takes for files over two minutes).

Usage: ``HF_HUB_OFFLINE=1 uv run python benchmarks/ge2e_speed.py [--repeats 5] [--threads 2] [--record]``
(``--record`` appends the run to ``benchmarks/results/ge2e_speed.jsonl``, one row per input and step)
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from _results import Row, RunRecorder, add_record_option

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def interleaved(repeats: int, calls: dict[str, Callable[[], Any]]) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Wall times in seconds of ``repeats`` rounds, each calling every entry once in turn, and the last results."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    results: dict[str, Any] = {}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            results[name] = call()
            times[name].append(time.perf_counter() - start)
    return times, results


def ratios(upstream: list[float], native: list[float]) -> str:
    """``min-ratio/median-ratio`` of upstream over native times."""
    return f"{min(upstream) / min(native):.2f}/{statistics.median(upstream) / statistics.median(native):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    add_record_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recorder = RunRecorder("ge2e_speed", threads=args.threads, parameters=vars(args))
    rows: list[Row] = []

    def row(step: str, upstream: list[float], native: list[float], max_abs_diff: float | None = None) -> None:
        speedup_min = min(upstream) / min(native)
        speedup_median = statistics.median(upstream) / statistics.median(native)
        results = {"upstream_min_s": min(upstream), "native_min_s": min(native), "speedup_min": speedup_min}
        rows.append(({"step": step}, results | {"speedup_median": speedup_median, "max_abs_diff": max_abs_diff}))

    from resemblyzer import VoiceEncoder, preprocess_wav  # type: ignore[import-untyped]

    from voicehub.architectures.ge2e import load_resemblyzer_checkpoint, preprocess
    from voicehub.core import load_audio

    upstream = VoiceEncoder(device="cpu", verbose=False)
    native = load_resemblyzer_checkpoint()
    files = [*sorted((DATA / "librivox").glob("*.wav")), DATA / "silero" / "test.wav"]

    def native_preprocess(path: Path) -> np.ndarray:
        return preprocess(load_audio(path, target_sample_rate=16000).samples, native.config)

    def native_embed(waves: list[np.ndarray]) -> np.ndarray:
        with torch.inference_mode():
            return native.embed_utterances([torch.from_numpy(w) for w in waves]).numpy()

    from voicehub.models.sv_ge2e.wrapper import GE2ESpeakerVerifier

    verifier = GE2ESpeakerVerifier.from_pretrained(lazy_load=False)
    load = os.getloadavg()
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), {args.repeats} interleaved rounds, "
        f"load average {load[0]:.2f}; ratio = upstream / native time, of the minima / of the medians"
    )
    columns = ("prep up", "prep us", "min/med", "emb up", "emb us", "min/med", "max|d|")
    widths = (8, 8, 9, 8, 8, 9, 9)
    print(f"{'input':<48} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    prepared = []
    for path in files:
        prep_times, preps = interleaved(
            args.repeats,
            {"up": functools.partial(preprocess_wav, str(path)), "us": functools.partial(native_preprocess, path)},
        )
        wav_up, wav_us = preps["up"], preps["us"]
        emb_times, embs = interleaved(
            args.repeats,
            {
                "up": functools.partial(upstream.embed_utterance, wav_up),
                "us": functools.partial(native_embed, [wav_us]),
            },
        )
        prepared.append(wav_us)
        row(f"preprocess {path.name}", prep_times["up"], prep_times["us"])
        emb_diff = float(np.abs(embs["up"] - embs["us"][0]).max())
        row(f"embed {path.name}", emb_times["up"], emb_times["us"], emb_diff)
        print(
            f"{path.name:<48} {min(prep_times['up']) * 1e3:7.1f}m {min(prep_times['us']) * 1e3:7.1f}m "
            f"{ratios(prep_times['up'], prep_times['us']):>9} "
            f"{min(emb_times['up']) * 1e3:7.1f}m {min(emb_times['us']) * 1e3:7.1f}m "
            f"{ratios(emb_times['up'], emb_times['us']):>9} {float(np.abs(embs['up'] - embs['us'][0]).max()):9.2e}"
        )
    librivox = prepared[:-1]
    batch_times, _ = interleaved(
        args.repeats,
        {"up": lambda: [upstream.embed_utterance(w) for w in librivox], "us": lambda: native_embed(librivox)},
    )
    print(
        f"{'5 LibriVox utterances, one native batch':<48} {'':>8} {'':>8} {'':>9} "
        f"{min(batch_times['up']) * 1e3:7.1f}m {min(batch_times['us']) * 1e3:7.1f}m "
        f"{ratios(batch_times['up'], batch_times['us']):>9}"
    )
    row("5 LibriVox utterances, one native batch", batch_times["up"], batch_times["us"])
    long_file = DATA / "silero" / "test.wav"
    file_times, vectors = interleaved(
        args.repeats,
        {
            "up": lambda: upstream.embed_utterance(preprocess_wav(str(long_file))),
            "us": lambda: verifier.embed_file(long_file).embedding,
        },
    )
    print(
        f"{'test.wav (60 s) file to vector, embed_file':<48} {'':>8} {'':>8} {'':>9} "
        f"{min(file_times['up']) * 1e3:7.1f}m {min(file_times['us']) * 1e3:7.1f}m "
        f"{ratios(file_times['up'], file_times['us']):>9} {float(np.abs(vectors['up'] - vectors['us']).max()):9.2e}"
    )

    file_diff = float(np.abs(vectors["up"] - vectors["us"]).max())
    row("60 s file to vector, embed_file", file_times["up"], file_times["us"], file_diff)
    if args.record:
        recorder.write(rows)


if __name__ == "__main__":
    main()
