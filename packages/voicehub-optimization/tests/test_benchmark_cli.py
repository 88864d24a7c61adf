"""``benchmarks/optimization_passes.py``: printing is the default, rewriting the tracked docs is opt-in.

Needs the ``voicehub`` meta-package (the benchmark times real wrappers); skipped when this member
is tested alone.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

pytest.importorskip("voicehub.modeling")

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "optimization_passes.py"


def _benchmark(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # as when run as a script: its helpers beside it
    spec = importlib.util.spec_from_file_location("optimization_passes_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_prints_without_touching_the_docs_unless_write_docs_is_given(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    benchmark = _benchmark(monkeypatch)
    parser = benchmark.build_parser()
    assert parser.parse_args([]).write_docs is False and parser.parse_args(["--write-docs"]).write_docs is True
    assert "the table reports the fastest (minimum)" in " ".join(parser.format_help().split())  # --repeats
    doc = ROOT / "docs" / "optimization.md"
    results = ROOT / "benchmarks" / "results" / "optimization_passes.jsonl"
    before, results_before = doc.read_bytes(), results.read_bytes()
    # webrtc runtimes are not torch modules: eval-mode reports not-applicable, so this run is quick.
    argv = ["optimization_passes.py", "--models", "vad_webrtc", "--passes", "eval-mode", "--repeats", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    threads = torch.get_num_threads()
    try:
        benchmark.main()
    finally:
        torch.set_num_threads(threads)  # main() sets the baseline thread count for the process
    out = capsys.readouterr().out
    assert "| vad_webrtc | eval-mode | not-applicable |" in out and "updated docs" not in out
    assert doc.read_bytes() == before
    assert results.read_bytes() == results_before  # recorded only with --record or --write-docs
    monkeypatch.setattr(sys, "argv", [*argv[:-1], "0"])
    with pytest.raises(SystemExit):
        benchmark.main()
    assert "--repeats must be at least 1, got 0" in capsys.readouterr().err
