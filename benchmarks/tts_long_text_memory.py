"""Peak memory of ``voicehub synthesize -o FILE`` on long texts, each run in a fresh process.

The texts are everyday English sentences (written for this benchmark) repeated to 500 and 5000
words, in two styles: ``sentences`` (with their punctuation) and ``run-on`` (every punctuation
mark removed, so the whole text is one "sentence": the case that grew past 24 GB before the text
front end cut sentences to ``MAX_SENTENCE_PHONEMES``). Each text is synthesized once per style
in a new process through the installed ``voicehub`` entry point into a temporary WAV file
(removed afterwards); peak resident set size is read from the kernel (``os.wait4`` rusage
``ru_maxrss``), wall time with ``time.perf_counter``, audio duration from the file.

The check printed per style: peak RSS at 5000 words at most 1.2x that at 500 words (memory that
does not grow with the text).

Usage::

    HF_HUB_OFFLINE=1 OMP_WAIT_POLICY=PASSIVE uv run python benchmarks/tts_long_text_memory.py
    HF_HUB_OFFLINE=1 uv run python benchmarks/tts_long_text_memory.py --words 500 --styles run-on --threads 1
    HF_HUB_OFFLINE=1 uv run python benchmarks/tts_long_text_memory.py --record   # append to benchmarks/results/
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path

import soundfile

from _results import RunRecorder, add_record_option
from long_file_memory import peak_rss  # the same fresh-process peak-RSS measurement (run as a script)

SENTENCES = (
    "The bakery on the corner opens at six, and by seven the line reaches the bus stop.",
    "Nobody remembered who had planted the old pear tree behind the library.",
    "When the rain stopped, the children ran outside to measure the puddles with sticks.",
    "She wrote three letters that week: one to her sister, one to the bank, and one to the mayor.",
    "The ferry was late again, so we watched the gulls argue over a piece of bread.",
    "In winter the lake freezes thick enough for the whole village to skate across it.",
    "He kept a notebook of every bird he saw, with the date, the weather and a small drawing.",
    "Our neighbour fixes bicycles in his garage and never charges more than the price of the parts.",
)
LIMIT = 1.2
STYLES = ("sentences", "run-on")


def make_text(words: int, style: str) -> str:
    """The benchmark text: the sentences repeated to ``words`` words, punctuation removed for ``run-on``."""
    pool = " ".join(SENTENCES).split()
    text = " ".join(pool[i % len(pool)] for i in range(words))
    if style == "run-on":
        return re.sub(r"[^\w\s]", "", text).lower()
    return text if text.endswith(".") else text.rstrip(",:;") + "."


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--words", nargs="+", type=int, default=[500, 5000])
    parser.add_argument("--styles", nargs="+", choices=STYLES, default=list(STYLES))
    parser.add_argument("--threads", type=int, default=2)
    add_record_option(parser)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    recorder = RunRecorder("tts_long_text_memory", threads=args.threads, parameters=vars(args))
    recorded = []
    results: dict[str, dict[int, float]] = {}
    print(f"{'style':<10} {'words':>6} {'audio s':>8} {'peak RSS MB':>12} {'wall s':>8}")
    with tempfile.TemporaryDirectory(prefix="voicehub-tts-long-") as tmp:
        directory = Path(tmp)
        for style in args.styles:
            for words in args.words:
                text_file = directory / f"{style}_{words}.txt"
                text_file.write_text(make_text(words, style), encoding="utf-8")
                out = directory / "out.wav"
                command = ["synthesize", "--text-file", str(text_file), "-o", str(out), "--seed", "1"]
                rss, elapsed = peak_rss([*command, "--threads", str(args.threads), "--no-progress"])
                duration_s = soundfile.info(str(out)).duration
                results.setdefault(style, {})[words] = rss
                recorded.append(
                    ({"style": style, "words": words}, {"audio_s": duration_s, "peak_rss_mb": rss, "wall_s": elapsed})
                )
                print(f"{style:<10} {words:>6} {duration_s:>8.1f} {rss:>12.0f} {elapsed:>8.1f}", flush=True)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for style, by_words in results.items():
        if len(by_words) > 1:
            smallest, largest = min(by_words), max(by_words)
            ratio = by_words[largest] / by_words[smallest]
            verdict = "PASS" if ratio <= LIMIT else "FAIL"
            print(f"{style}: peak RSS {largest} / {smallest} words = {ratio:.2f} (limit {LIMIT}): {verdict}")
    if args.record:
        recorder.write(recorded)


if __name__ == "__main__":
    main()
