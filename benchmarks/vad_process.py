"""Whole-process speed of ``voicehub vad CLIP`` against upstream silero-vad's own one-liner, interleaved.

The main job on a short clip is a fresh process: interpreter start, imports, model load, decode
and detection. Each round starts one process per command, in turn (hyperfine-style, but
interleaved so load from other processes on the machine hits both alike), and the minimum and
median wall times and their ratios are reported:

* ``voicehub``: the installed entry point, ``voicehub vad CLIP`` (default model ``vad_silero``);
* ``upstream``: ``python -c`` running silero-vad's README one-liner (``load_silero_vad()`` +
  ``get_speech_timestamps``) on the same clip, decoded with soundfile (upstream's ``read_audio``
  needs torchaudio or torchcodec, which are not installed here).

Usage: ``HF_HUB_OFFLINE=1 uv run python benchmarks/vad_process.py [--repeats 10] [--record] [CLIP]``
(``--record`` appends the run to ``benchmarks/results/vad_process.jsonl``)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _results import RunRecorder, add_record_option

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CLIP = ROOT / "tests" / "data" / "librivox" / "sense_and_sensibility_01_austen_64kb-0870.wav"
UPSTREAM = (
    "import soundfile, torch\n"
    "from silero_vad import load_silero_vad, get_speech_timestamps\n"
    "model = load_silero_vad()\n"
    "wav = torch.from_numpy(soundfile.read({clip!r}, dtype='float32')[0])\n"
    "print(get_speech_timestamps(wav, model))\n"
)


def run(command: list[str]) -> float:
    """Wall time in seconds of one fresh process (which must succeed)."""
    start = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{completed.stderr.decode(errors='replace')}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("clip", nargs="?", type=Path, default=DEFAULT_CLIP)
    parser.add_argument("--repeats", type=int, default=10)
    add_record_option(parser)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    executable = shutil.which("voicehub") or str(Path(sys.executable).with_name("voicehub"))
    commands = {
        "voicehub": [executable, "vad", str(args.clip)],
        "upstream": [sys.executable, "-W", "ignore", "-c", UPSTREAM.format(clip=str(args.clip))],
    }
    recorder = RunRecorder("vad_process", threads=None, parameters=vars(args) | {"clip": str(args.clip)})
    for command in commands.values():  # warm the page cache
        run(command)
    load = os.getloadavg()[0]
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeats):
        for name, command in commands.items():
            times[name].append(run(command))
    print(f"{args.clip.name}, {args.repeats} interleaved rounds, load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"{'command':<10} {'min s':>7} {'median s':>9}")
    for name, values in times.items():
        print(f"{name:<10} {min(values):>7.2f} {statistics.median(values):>9.2f}")
    best = min(times["upstream"]) / min(times["voicehub"])
    median = statistics.median(times["upstream"]) / statistics.median(times["voicehub"])
    print(f"upstream / voicehub: {best:.2f} (minima), {median:.2f} (medians); >= 1 means voicehub is no slower")
    if args.record:
        seconds = {
            f"{name}_{stat}_s": f(values)
            for name, values in times.items()
            for stat, f in (("min", min), ("median", statistics.median))
        }
        recorder.write([({}, seconds | {"upstream_over_voicehub_min": best, "upstream_over_voicehub_median": median})])


if __name__ == "__main__":
    main()
