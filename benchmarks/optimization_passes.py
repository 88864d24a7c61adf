"""Benchmark every optimization pass on every registered model, in one run.

For each model in ``voicehub.list_model_specs()`` and each registered pass, the script loads the
model on the CPU in float32, times the normalized task call (VAD: ``detect`` on 60 s of speech;
SV: ``embed`` on 6.9 s of speech) eagerly and with the pass applied, and reports:

* the outcome the manifest recorded (``configured``, ``quantized``, ``not-applicable``...);
* the speed ratio, eager time / optimized time (> 1 is faster), each the best of ``--repeats``
  calls, same process, same inputs, eager and optimized calls alternating;
* the output difference: VAD, the largest change of a chunk's speech probability and whether
  the segments changed; SV, the cosine distance between the embeddings.

``compile`` is timed after one warm-up call (the compilation), whose duration is reported too.
The table is printed; ``--record`` appends the run to ``benchmarks/results/optimization_passes.jsonl``
and ``--write-docs`` also rewrites the table of the tracked ``docs/optimization.md`` from that file
(``benchmarks/report.py``; never by default).

Usage: ``HF_HUB_OFFLINE=1 uv run python benchmarks/optimization_passes.py [--repeats 7] [--write-docs]``
(prints the table; ``--record`` appends the run to the results file, ``--write-docs`` records it and rewrites the
measured table in ``docs/optimization.md``)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

import voicehub
from _results import RunRecorder, add_record_option
from voicehub.core.errors import CheckpointError
from voicehub.core.tasks import SpeechTask

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
VAD_AUDIO = ROOT / "tests" / "data" / "silero" / "test.wav"
SV_AUDIO = ROOT / "tests" / "data" / "librivox" / "sense_and_sensibility_01_austen_64kb-0870.wav"


@dataclass
class Row:
    model_type: str
    pass_name: str
    outcome: str
    eager_ms: float
    optimized_ms: float
    difference: str
    note: str

    @property
    def ratio(self) -> float:
        return self.eager_ms / self.optimized_ms if self.optimized_ms else float("nan")


def _vad(model: Any) -> Any:
    return model.detect(str(VAD_AUDIO), return_probabilities=True)


def _vad_difference(reference: Any, output: Any) -> str:
    delta = float(np.abs(output.probabilities - reference.probabilities).max())
    same = len(output.segments) == len(reference.segments)
    shift = (
        max(
            max(abs(a.start_s - b.start_s), abs(a.end_s - b.end_s))
            for a, b in zip(output.segments, reference.segments, strict=True)
        )
        if same and output.segments
        else float("nan")
    )
    segments = f"{len(output.segments)}/{len(reference.segments)} segments, boundaries moved <= {shift * 1000:.0f} ms"
    return f"max dp {delta:.2e}; {segments}" if same else f"max dp {delta:.2e}; segments CHANGED ({segments})"


def _sv(model: Any) -> Any:
    return model.embed(str(SV_AUDIO))


def _sv_difference(reference: Any, output: Any) -> str:
    a, b = reference.embedding.astype(np.float64), output.embedding.astype(np.float64)
    return f"cosine distance {1.0 - float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))):.2e}"


PROBES: dict[SpeechTask, tuple[Callable[[Any], Any], Callable[[Any, Any], str], str]] = {
    SpeechTask.VOICE_ACTIVITY_DETECTION: (_vad, _vad_difference, "detect(60 s)"),
    SpeechTask.SPEAKER_VERIFICATION: (_sv, _sv_difference, "embed(6.9 s)"),
}


def _timed_ms(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def bench_model(model_type: str, passes: tuple[str, ...], repeats: int) -> list[Row]:
    """Time one model eagerly and under each pass.

    Eager and optimized calls alternate (apply, call, restore, call...), so load from other
    processes on the machine hits both alike; ``compile`` is timed in two blocks instead, since
    re-applying it would recompile.
    """
    spec = voicehub.get_model_spec(model_type)
    if spec.task not in PROBES:
        print(f"# {model_type}: no probe for task {spec.task.value}; skipped")
        return []
    probe, difference, _ = PROBES[spec.task]
    model = voicehub.AutoModel.from_pretrained(model_type=model_type, device="cpu")
    try:
        model.load()
    except CheckpointError as err:
        # A model without registered weights (sv_xvector): timing passes on random weights would report
        # speed-ups and output differences of a model nobody runs, so it is listed as skipped, with the reason.
        reason = f"skipped: no weights to load ({str(err).splitlines()[0]})"
        print(f"# {model_type}: {reason}")
        return [Row(model_type, "(all passes)", "skipped", float("nan"), float("nan"), "-", reason)]
    reference = probe(model)
    probe(model)  # warm caches
    rows = []
    first: list[float] = []
    second: list[float] = []
    for _ in range(repeats):  # alternating, like the pass rows
        first.append(_timed_ms(lambda: probe(model)))
        second.append(_timed_ms(lambda: probe(model)))
    rows.append(Row(model_type, "(eager vs eager)", "noise", min(first), min(second), "exact", "no pass applied"))
    for name in passes:
        if name == "threads":  # its eager baseline is the process default: all cores
            with _threads(os.cpu_count() or 1):
                rows.extend(_bench_pass(model, model_type, name, probe, difference, reference, repeats))
            continue
        rows.extend(_bench_pass(model, model_type, name, probe, difference, reference, repeats))
    return rows


@contextlib.contextmanager
def _threads(num_threads: int) -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _bench_pass(
    model: Any,
    model_type: str,
    name: str,
    probe: Callable[[Any], Any],
    difference: Callable[[Any, Any], str],
    reference: Any,
    repeats: int,
) -> list[Row]:
    rows: list[Row] = []
    from voicehub.optimization import OPTIMIZATION_PASSES

    if "inference" not in OPTIMIZATION_PASSES.create(name).capabilities.to_dict()["modes"]:
        rows.append(Row(model_type, name, "training-only", 0.0, 0.0, "n/a", "not an inference pass; not timed here"))
        return rows
    result = model.apply_optimization_plan(name, mode="inference")
    outcome = result.outcomes()[name]
    manifest = result.manifest()["passes"][0]
    if outcome == "not-applicable":
        model.restore_optimization_plan("inference")
        eager_ms = min(_timed_ms(lambda: probe(model)) for _ in range(repeats))
        rows.append(Row(model_type, name, outcome, eager_ms, eager_ms, "unchanged", manifest["metadata"]["reason"]))
        return rows
    note = ""
    first_ms = _timed_ms(lambda: probe(model))  # includes compilation for 'compile'
    output = probe(model)
    eager: list[float] = []
    optimized: list[float] = []
    if "runtime_status" in manifest:  # a lazily compiled pass: eager, compiled, eager blocks (no recompiling)
        model.restore_optimization_plan("inference")
        eager = [_timed_ms(lambda: probe(model)) for _ in range(repeats // 2 + 1)]
        result = model.apply_optimization_plan(name, mode="inference")
        probe(model)  # recompiles only if torch's cache missed
        optimized = [_timed_ms(lambda: probe(model)) for _ in range(repeats)]
        status = result.manifest()["passes"][0]["runtime_status"]
        model.restore_optimization_plan("inference")
        eager += [_timed_ms(lambda: probe(model)) for _ in range(repeats // 2 + 1)]
        outcome = f"{outcome} / {status['status']}"
        note = f"first call (compilation) {first_ms / 1000:.1f} s"
        reasons = status.get("fallback_reasons") or {}
        if reasons:
            note += "; " + "; ".join(f"{k}: {v[:160]}" for k, v in reasons.items())
    else:
        for index in range(repeats):
            if index:
                model.apply_optimization_plan(name, mode="inference")
            optimized.append(_timed_ms(lambda: probe(model)))
            model.restore_optimization_plan("inference")
            eager.append(_timed_ms(lambda: probe(model)))
    row = Row(model_type, name, outcome, min(eager), min(optimized), "", note)
    row.difference = difference(reference, output)
    rows.append(row)
    print(f"{model_type:12s} {name:15s} {row.outcome:24s} ratio {row.ratio:5.2f}  {row.difference}", flush=True)
    return rows


def table(rows: list[Row], repeats: int, load: tuple[float, float]) -> str:
    lines = [
        f"Measured on {platform.machine()} with {os.cpu_count()} CPU cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} intra-op thread(s) (the `threads` rows: eager on all {os.cpu_count()} cores "
        f"against the pass's 1 thread), float32 CPU runtimes, best of {repeats} calls "
        "each (the minimum, the estimate least affected by other processes), eager and optimized calls "
        "alternating in the same process (`HF_HUB_OFFLINE=1 uv run python benchmarks/optimization_passes.py "
        "--write-docs`). "
        "Speed ratio = eager time / optimized time (> 1 is faster). VAD: `detect` on "
        "`tests/data/silero/test.wav` (60 s); SV: `embed` on a 6.9 s LibriVox clip. The machine was shared with "
        f"other jobs (load average {load[0]:.1f} at the start and {load[1]:.1f} at the end, on "
        f"{os.cpu_count()} cores): the `(eager vs eager)` row of each model times the same eager call against "
        "itself and shows how far a ratio moves by noise alone; multi-threaded eager calls suffer more from "
        "that contention than single-threaded ones.",
        "",
        "| model | pass | outcome | eager ms | optimized ms | speed ratio | output difference | note |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for row in rows:
        untimed = row.outcome in ("not-applicable", "training-only", "skipped")
        ratio = "n/a" if untimed else f"{row.ratio:.2f}"
        optimized = "n/a" if untimed else f"{row.optimized_ms:.1f}"
        eager = "n/a" if row.outcome in ("training-only", "skipped") else f"{row.eager_ms:.1f}"
        note = row.note.replace("|", "/")
        lines.append(
            f"| {row.model_type} | {row.pass_name} | {row.outcome} | {eager} | {optimized} | {ratio} | "
            f"{row.difference} | {note} |"
        )
    covered = sorted({voicehub.get_model_spec(r.model_type).task.value for r in rows if r.outcome != "skipped"})
    missing = sorted(t.value for t in SpeechTask if t.value not in covered)
    lines += ["", f"Tasks covered: {', '.join(covered)}. No registered model for: {', '.join(missing)}."]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The command line: nothing is written unless ``--write-docs`` is given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeats",
        type=int,
        default=7,
        help="timed calls of each kind per model and pass, eager and optimized alternating; the table reports the "
        "fastest (minimum) of each kind (default 7; must be >= 1)",
    )
    parser.add_argument("--models", nargs="*", default=None, help="model types (default: every registered one)")
    parser.add_argument("--passes", nargs="*", default=None, help="pass names (default: every registered one)")
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help="record the run (--record) and rewrite the measured table in the tracked docs/optimization.md "
        "(default: print only)",
    )
    add_record_option(parser)
    parser.add_argument(
        "--baseline-threads",
        type=int,
        default=1,
        help="intra-op threads for every row except 'threads' (default 1: stable numbers on a shared machine)",
    )
    return parser


def main() -> None:
    parser = build_parser()
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    torch.set_num_threads(args.baseline_threads)
    models = args.models or [spec.model_type for spec in voicehub.list_model_specs()]
    from voicehub.optimization import OPTIMIZATION_PASSES

    passes = tuple(args.passes or OPTIMIZATION_PASSES.list())
    recorder = RunRecorder("optimization_passes", threads=args.baseline_threads, parameters=vars(args))
    load_start = os.getloadavg()[0]
    rows = [row for model_type in models for row in bench_model(model_type, passes, args.repeats)]
    text = table(rows, args.repeats, (load_start, os.getloadavg()[0]))
    print(text)
    if args.record or args.write_docs:
        recorder.write([_result_row(row) for row in rows])
    if args.write_docs:
        import report  # benchmarks/report.py, beside this script

        for page_table in report.TABLES:
            if page_table.benchmark == "optimization_passes":
                page = ROOT / page_table.page
                page.write_text(report.rewritten(page.read_text(encoding="utf-8"), page_table), encoding="utf-8")
                print(f"updated {page_table.page}")


def _result_row(row: Row) -> tuple[dict[str, Any], dict[str, Any]]:
    """One table row as a results-file row (the keys docs/optimization.md's table reads)."""
    untimed = row.outcome in ("not-applicable", "training-only", "skipped")
    results = {
        "outcome": row.outcome,
        "eager_ms": None if row.outcome in ("training-only", "skipped") else row.eager_ms,
        "optimized_ms": None if untimed else row.optimized_ms,
        "speed_ratio": None if untimed else row.ratio,
        "output_difference": row.difference,
        "pass_note": row.note or None,
    }
    return {"model": row.model_type, "pass": row.pass_name}, results


if __name__ == "__main__":
    main()
