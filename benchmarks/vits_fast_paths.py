"""What each part of the VITS fast CPU backend earns: ``tts_vits`` end to end with one part off
(running on the plain layers) against all parts on, paired, in one process.

Workloads are those of ``benchmarks/tts_speed.py`` (the same texts, voice and scales, 2 threads by
default): ``short`` (one sentence, ``generate``), ``long`` (the paragraph, ``stream``), ``16 one by
one`` and ``16 batched`` (``generate`` of each sentence, and of the list). Each repeat times every
variant once per workload, adjacent in time, the order reversed every other repeat, after a pause
(``--settle``); a variant's ratio is its time over the all-on time of the same repeat, and the row
gives the median of those ratios with their range. A part whose ratio stays under 1.05 on every
workload earns less than 5 % and is a candidate to drop (issue #29).

Usage: ``uv run python benchmarks/vits_fast_paths.py [--repeats 5] [--threads 2] [--settle 0.1] [--variants ...]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from _piper_ort import voice_onnx_path
from tts_speed import LONG, SHORT, SIXTEEN

VARIANTS = ("all", "no items", "no text", "no flow", "no decoder", "plain")
"""The variants: all parts on, one part off (``FastPaths``), and the plain backend (``--variants``;
all but ``plain`` by default)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--settle", type=float, default=0.1, help="seconds of pause before every timed call")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS[1:], default=list(VARIANTS[1:-1]))
    args = parser.parse_args()
    variants = ("all", *args.variants)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    import voicehub
    from voicehub.architectures.vits.backend import PLAIN, ExecutionBackend, FastCPUBackend, FastPaths

    torch.set_num_threads(args.threads)
    tts = voicehub.AutoModelForTextToSpeech.from_pretrained(
        voice_onnx_path(), model_type="tts_vits", device="cpu", lazy_load=False
    )
    runtime = tts.runtime
    assert runtime is not None
    backends: dict[str, ExecutionBackend] = {
        "all": FastCPUBackend(),
        "no items": FastCPUBackend(FastPaths(items=False)),
        "no text": FastCPUBackend(FastPaths(text=False)),
        "no flow": FastCPUBackend(FastPaths(flow=False)),
        "no decoder": FastCPUBackend(FastPaths(decoder=False)),
        "plain": PLAIN,
    }
    workloads: dict[str, Callable[[], object]] = {
        "short": lambda: tts.generate(SHORT, seed=1),
        "long": lambda: list(tts.stream(LONG, seed=1)),
        "16 one by one": lambda: [tts.generate(text, seed=1) for text in SIXTEEN],
        "16 batched": lambda: tts.generate(SIXTEEN, seed=1),
    }
    times: dict[tuple[str, str], list[float]] = {(w, v): [] for w in workloads for v in variants}

    def timed(workload: str, variant: str) -> float:
        runtime.module.backend = backends[variant]
        time.sleep(args.settle)
        start = time.perf_counter()
        workloads[workload]()
        return time.perf_counter() - start

    for workload in workloads:  # warm-up: packed weights, kernels, buffers
        for variant in variants:
            timed(workload, variant)
    for repeat in range(args.repeats):
        for workload in workloads:
            for variant in variants if repeat % 2 == 0 else variants[::-1]:
                times[workload, variant].append(timed(workload, variant))
    print(
        f"threads={args.threads} repeats={args.repeats} settle={args.settle} torch={torch.__version__} "
        f"load={os.getloadavg()[0]:.1f}; time with a part off / all on, same repeat: median (min-max)"
    )
    for workload in workloads:
        base = times[workload, "all"]
        cells = [f"{workload:<14} all {statistics.median(base):.3f} s"]
        for variant in variants[1:]:
            ratios = [t / b for t, b in zip(times[workload, variant], base, strict=True)]
            cells.append(f"{variant} {statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f})")
        print("  ".join(cells))


if __name__ == "__main__":
    main()
