"""``voicehub evaluate asr``: WER and RTF of the default ASR on a manifest of the LibriVox clips."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from voicehub.cli import main
from voicehub.cli.evaluate import normalise_text

DATA = Path(__file__).resolve().parents[3] / "tests" / "data" / "librivox"


def _manifest(tmp_path: Path) -> Path:
    lines = (DATA / "transcription").read_text(encoding="utf-8").splitlines()
    rows = []
    for line in lines:
        match = re.fullmatch(r"<s> (.*) </s> \((.*)\)", line.strip())
        if match:
            rows.append(f"{DATA / (match.group(2) + '.wav')}\t{match.group(1)}")
    path = tmp_path / "librivox.tsv"
    path.write_text("# audio<TAB>text\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_normalise_text_lowercases_and_drops_punctuation_but_keeps_apostrophes() -> None:
    assert normalise_text("He was not an ill-disposed young man. Isn't it?") == (
        "he was not an ill disposed young man isn't it"
    )


@pytest.mark.slow
def test_evaluate_asr_reports_wer_and_rtf_on_librivox(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["evaluate", "asr", str(_manifest(tmp_path)), "--json", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["files"], report["reference_words"]) == (5, 71)
    # tiny.en, measured: "mr" vs "mister", "ill disposed" heard as "old sposed", the extra "a" of the
    # reference: 4 edits in 71 words (5.63 %) with this basic normaliser.
    assert report["wer"] == (report["substitutions"] + report["deletions"] + report["insertions"]) / 71
    assert 0.0 < report["wer"] <= 0.08
    assert 0.0 < report["rtf"] < 2.0


def test_evaluate_asr_names_a_bad_manifest_line(tmp_path: Path) -> None:
    manifest = tmp_path / "bad.tsv"
    manifest.write_text("missing.wav\thello\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["evaluate", "asr", str(manifest)])
    assert result.exit_code == 2 and "bad.tsv:1" in result.output and "missing.wav" in result.output


@pytest.mark.slow
def test_evaluate_asr_names_the_flag_and_scores_the_files_that_decode(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path)
    bad_beam = CliRunner().invoke(main, ["evaluate", "asr", str(manifest), "--beam-size", "0"])
    assert bad_beam.exit_code == 2 and "--beam-size 0:" in bad_beam.output and "transcribe()" not in bad_beam.output
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"\x00" * 1000)
    first = manifest.read_text(encoding="utf-8").splitlines()[1]
    one = tmp_path / "one.tsv"
    one.write_text(f"{first}\n{junk}\tnothing here\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["evaluate", "asr", str(one), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert (report["files"], report["failed_files"]) == (1, 1) and "junk.wav" in report["errors"][0]
    assert report["reference_words"] == len(normalise_text(first.split("\t")[1]).split())
