"""Peak memory of ``voicehub vad`` and ``voicehub embed`` on long files, each run in a fresh process.

The long files are made by concatenating the committed 60 s speech file
(``tests/data/silero/test.wav``) to 1, 10 and 60 minutes (16 kHz, 16-bit PCM, written block by
block into a temporary directory that is removed afterwards; nothing is committed). Each command
runs once per file in a new process through the installed ``voicehub`` entry point; its peak
resident set size is read from the kernel (``os.wait4`` rusage ``ru_maxrss``) and its wall time
with ``time.perf_counter``.

The acceptance check of issue #15 is printed per command: peak RSS at 60 minutes at most 1.2x
that at 10 minutes (memory that does not grow with duration).

Usage::

    HF_HUB_OFFLINE=1 uv run python benchmarks/long_file_memory.py                 # vad and embed
    HF_HUB_OFFLINE=1 uv run python benchmarks/long_file_memory.py --commands vad --minutes 1 10 60
    HF_HUB_OFFLINE=1 uv run python benchmarks/long_file_memory.py --record   # append to benchmarks/results/
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import soundfile

from _results import RunRecorder, add_record_option

ROOT = Path(__file__).resolve().parents[1]
SPEECH = ROOT / "tests" / "data" / "silero" / "test.wav"
LIMIT = 1.2
COMMANDS = {
    "vad": lambda path, out: ["vad", str(path)],
    "embed": lambda path, out: ["embed", str(path), "--output", str(out / "embedding.npy")],
}


def make_long_file(directory: Path, minutes: int) -> Path:
    """Write ``minutes`` minutes of the 60 s speech file, repeated, without holding it in memory."""
    speech, rate = soundfile.read(SPEECH, dtype="int16")
    repeats = round(minutes * 60 * rate / speech.shape[0])
    path = directory / f"speech_{minutes}min.wav"
    with soundfile.SoundFile(path, "w", samplerate=rate, channels=1, subtype="PCM_16") as handle:
        for _ in range(repeats):
            handle.write(speech)
    return path


def peak_rss(arguments: list[str]) -> tuple[float, float]:
    """Run ``voicehub <arguments>`` in a fresh process: (peak RSS in MB, wall time in s)."""
    executable = shutil.which("voicehub") or str(Path(sys.executable).with_name("voicehub"))
    start = time.perf_counter()
    process = subprocess.Popen([executable, *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(f"voicehub {' '.join(arguments)} failed ({process.returncode}):\n{stderr}")
    return usage.ru_maxrss / 1024, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commands", nargs="+", choices=sorted(COMMANDS), default=["vad", "embed"])
    parser.add_argument("--minutes", nargs="+", type=int, default=[1, 10, 60])
    add_record_option(parser)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    recorder = RunRecorder("long_file_memory", threads=None, parameters=vars(args))
    recorded = []
    results: dict[str, dict[int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="voicehub-long-") as tmp:
        directory = Path(tmp)
        files = {minutes: make_long_file(directory, minutes) for minutes in args.minutes}
        print(f"{'command':<8} {'minutes':>7} {'peak RSS MB':>12} {'wall s':>8}")
        for command in args.commands:
            for minutes, path in files.items():
                rss, elapsed = peak_rss(COMMANDS[command](path, directory))
                results.setdefault(command, {})[minutes] = rss
                recorded.append(({"command": command, "minutes": minutes}, {"peak_rss_mb": rss, "wall_s": elapsed}))
                print(f"{command:<8} {minutes:>7} {rss:>12.0f} {elapsed:>8.1f}", flush=True)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for command, by_minutes in results.items():
        if 10 in by_minutes and 60 in by_minutes:
            ratio = by_minutes[60] / by_minutes[10]
            verdict = "PASS" if ratio <= LIMIT else "FAIL"
            print(f"{command}: peak RSS 60 min / 10 min = {ratio:.2f} (limit {LIMIT}): {verdict}")
    if args.record:
        recorder.write(recorded)


if __name__ == "__main__":
    main()
