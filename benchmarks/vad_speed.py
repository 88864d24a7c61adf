"""Silero VAD speed: upstream TorchScript and ONNX Runtime against both native VoiceHub paths, in one run.

Every implementation gets the same decoded float32 audio and returns speech segments:

* ``upstream-jit``: ``silero_vad.get_speech_timestamps`` with the upstream TorchScript model
  (one ``model(chunk, sr)`` call per 32 ms chunk, as upstream does);
* ``upstream-onnx``: the same function with upstream's ``OnnxWrapper`` (onnxruntime, CPU);
* ``native-whole-file``: ``vad_silero`` ``detect()``: STFT and encoder batched over all chunks,
  only the LSTM sequential;
* ``native-streaming``: ``vad_silero`` ``stream()`` fed one 32 ms chunk per ``push()``, as a live
  stream (one ``step()`` per chunk).

After one warm-up run of each, ``--repeats`` rounds call every implementation once in turn
(round-robin, so load from other processes hits all alike), with ``--threads`` intra-op threads
for torch and onnxruntime alike (default 1); the minimum and the median of each are reported,
and the speed-ups against upstream as ratios of minima and of medians. The script checks that
all four return the same segments. Real-time factor (RTF) = minimum processing time / audio duration.

Usage::

    uv run python benchmarks/vad_speed.py                       # 60 s test file, v6, 1 thread
    uv run python benchmarks/vad_speed.py --weights v5 --threads 2 --json
    uv run python benchmarks/vad_speed.py --record   # also append the run to benchmarks/results/vad_speed.jsonl
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from _results import RunRecorder, add_record_option

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = [ROOT / "tests" / "data" / "silero" / "test.wav"]


def _wheel_file(name: str) -> Path:
    return Path(str(importlib.metadata.distribution("silero-vad").locate_file(f"silero_vad/data/{name}")))


WEIGHTS = {
    "v6": (_wheel_file("silero_vad.jit"), _wheel_file("silero_vad.onnx")),
    "v5": (ROOT / "tests/data/silero/v5/silero_vad.jit", ROOT / "tests/data/silero/v5/silero_vad.onnx"),
}


def _interleaved(runs: dict[str, Callable[[], Any]], repeats: int) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Warm each run once (keeping its result), then time ``repeats`` round-robin rounds."""
    results = {name: run() for name, run in runs.items()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return times, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES, help="audio files (default: test.wav)")
    parser.add_argument("--weights", choices=sorted(WEIGHTS), default="v6")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads for torch and onnxruntime")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print strict JSON instead of a table")
    add_record_option(parser)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    import onnxruntime
    import silero_vad  # sets torch threads to 1 on import

    torch.set_num_threads(args.threads)
    from voicehub.core import load_audio
    from voicehub.models.vad_silero.wrapper import SileroVADModel

    jit_path, onnx_path = WEIGHTS[args.weights]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jit = torch.jit.load(str(jit_path), map_location="cpu")
        onnx = silero_vad.utils_vad.OnnxWrapper(str(onnx_path), force_onnx_cpu=True)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    providers = ["CPUExecutionProvider"]
    onnx.session = onnxruntime.InferenceSession(str(onnx_path), sess_options=options, providers=providers)
    native = SileroVADModel.from_pretrained(str(jit_path), lazy_load=False)

    waves = [load_audio(path, target_sample_rate=16000).samples for path in args.files]
    duration_s = sum(w.shape[0] for w in waves) / 16000

    def upstream(model: Any) -> Callable[[], Any]:
        def run() -> list[list[tuple[int, int]]]:
            with torch.inference_mode():
                return [
                    [(d["start"], d["end"]) for d in silero_vad.get_speech_timestamps(torch.from_numpy(w), model)]
                    for w in waves
                ]

        return run

    def native_whole_file() -> list[list[tuple[int, int]]]:
        outputs = native.detect([(w, 16000) for w in waves])
        return [[(s.start_sample, s.end_sample) for s in o.segments] for o in outputs]

    def native_streaming() -> list[list[tuple[int, int]]]:
        out = []
        for w in waves:
            session = native.stream(16000)
            for start in range(0, w.shape[0], 512):  # a live stream: one 32 ms chunk per push
                session.push(w[start : start + 512])
            session.flush()
            out.append([(s.start_sample, s.end_sample) for s in session.segments])
        return out

    runs = {
        "upstream-jit": upstream(jit),
        "upstream-onnx": upstream(onnx),
        "native-whole-file": native_whole_file,
        "native-streaming": native_streaming,
    }
    recorder = RunRecorder(
        "vad_speed", threads=args.threads, parameters=vars(args) | {"files": [str(p) for p in args.files]}
    )
    load = os.getloadavg()[0]
    times, segments = _interleaved(runs, args.repeats)
    results: dict[str, dict[str, Any]] = {}
    for name in runs:
        best, median = min(times[name]), statistics.median(times[name])
        results[name] = {"seconds": best, "median_seconds": median, "rtf": best / duration_s}
    reference = segments["upstream-jit"]
    for name in runs:
        row = results[name]
        row["same_segments_as_upstream_jit"] = segments[name] == reference
        for upstream_name, key in (("upstream-jit", "jit"), ("upstream-onnx", "onnx")):
            row[f"speedup_vs_upstream_{key}"] = results[upstream_name]["seconds"] / row["seconds"]
            row[f"median_speedup_vs_upstream_{key}"] = results[upstream_name]["median_seconds"] / row["median_seconds"]
    report = {
        "files": [str(p) for p in args.files],
        "audio_s": duration_s,
        "weights": args.weights,
        "threads": args.threads,
        "repeats": args.repeats,
        "load_average": load,
        "torch": torch.__version__,
        "onnxruntime": onnxruntime.__version__,
        "cpu": platform.processor() or platform.machine(),
        "results": results,
    }
    if args.record:
        recorder.write([({"implementation": name}, row | {"audio_s": duration_s}) for name, row in results.items()])
    if args.json:
        print(json.dumps(report, indent=2, allow_nan=False))
        return
    print(
        f"{duration_s:.1f} s of audio, Silero VAD {args.weights}, {args.threads} thread(s), {args.repeats} interleaved "
        f"rounds, torch {torch.__version__}, onnxruntime {onnxruntime.__version__}, load average {load:.2f}"
    )
    header = f"{'min ms':>8} {'median ms':>10} {'RTF':>8} {'x JIT min/med':>14} {'x ONNX min/med':>15}"
    print(f"{'implementation':<20} {header}  same")
    for name, row in results.items():
        jit_ratios = f"{row['speedup_vs_upstream_jit']:.2f}/{row['median_speedup_vs_upstream_jit']:.2f}"
        onnx_ratios = f"{row['speedup_vs_upstream_onnx']:.2f}/{row['median_speedup_vs_upstream_onnx']:.2f}"
        print(
            f"{name:<20} {row['seconds'] * 1000:>8.1f} {row['median_seconds'] * 1000:>10.1f} {row['rtf']:>8.4f} "
            f"{jit_ratios:>14} {onnx_ratios:>15}  {'yes' if row['same_segments_as_upstream_jit'] else 'NO'}"
        )
    if not all(row["same_segments_as_upstream_jit"] for row in results.values()):
        raise SystemExit("segments differ between implementations")


if __name__ == "__main__":
    main()
