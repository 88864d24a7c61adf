"""``voicehub transcribe`` inputs and outputs as a newcomer found them: stdout by default (nothing
written to the working directory), one format or JSON Lines on stdout, audio on standard input in
any format or as raw PCM, odd file names, and the checks made before the model loads."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from voicehub.cli import main
from voicehub.cli._outputs import input_ids

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
CLIP_0930 = DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0930.wav"
TEXT_0930 = "He might even have been made amiable himself."


def _words(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]", "", text.lower()).strip()


def test_without_output_dir_nothing_is_written_and_one_format_or_jsonl_goes_to_stdout(tmp_path: Path) -> None:
    odd = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9.wav"))  # a non-UTF-8 name
    shutil.copy(CLIP_0930, odd)
    (tmp_path / "utt.wav").write_bytes(CLIP_0930.read_bytes())
    reference = tmp_path / "utt.txt"
    reference.write_text("the human reference transcript\n")  # must survive
    runner = CliRunner()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        lines = runner.invoke(main, ["transcribe", str(tmp_path / "utt.wav"), str(odd), "--jsonl", "--no-progress"])
        assert lines.exit_code == 0, lines.output
        records = [json.loads(line) for line in lines.stdout.splitlines()]
        wholes = [record for record in records if "segment" not in record]  # one per input, after its segments
        assert [record["text"] for record in wholes] == [TEXT_0930, TEXT_0930]
        assert wholes[1]["path"].endswith("caf\\xe9.wav")  # printable
        first = records[: records.index(wholes[0])]  # the first input's segments, printed as decoded
        assert [r["segment"]["text"] for r in first] == [s["text"] for s in wholes[0]["segments"]]
        assert all(r["path"] == wholes[0]["path"] for r in first) and first
        srt = runner.invoke(main, ["transcribe", str(tmp_path / "utt.wav"), "-f", "srt", "--no-progress"])
        assert srt.exit_code == 0 and srt.stdout.startswith("1\n00:00:00,") and TEXT_0930 in srt.stdout
        mixed = runner.invoke(main, ["transcribe", str(tmp_path / "utt.wav"), str(odd), "-f", "vtt"])
        assert mixed.exit_code == 2 and "-o DIR" in mixed.output
        assert list(cwd.iterdir()) == []
    finally:
        os.chdir(previous)
    assert reference.read_text() == "the human reference transcript\n"


def test_standard_input_takes_any_format_or_raw_pcm_and_dash_files_and_empty_arguments(tmp_path: Path) -> None:
    runner = CliRunner()
    raw = runner.invoke(
        main, ["transcribe", "-", "--sample-rate", "16000"], input=(DATA / "goforward.raw").read_bytes()
    )
    assert raw.exit_code == 0, raw.output
    assert _words(raw.stdout) in {"go forward ten meters", "go forward 10 meters"}
    listing = runner.invoke(main, ["transcribe", "-"], input=f"{CLIP_0930}\n".encode())
    assert listing.exit_code == 1
    assert "standard input" in listing.output and "list of paths" in listing.output and "BytesIO" not in listing.output
    dash = tmp_path / "-"
    shutil.copy(CLIP_0930, dash)
    named_dash = runner.invoke(main, ["transcribe", str(dash)], input=b"")
    assert named_dash.exit_code == 0 and named_dash.stdout.strip() == TEXT_0930
    empty = runner.invoke(main, ["transcribe", ""])
    assert empty.exit_code == 2 and "empty" in empty.output
    unknown = runner.invoke(main, ["transcribe", str(CLIP_0930), "--model", "nonesuch"])
    assert unknown.exit_code == 2 and "no such model" in unknown.output


def test_output_ids_of_a_file_do_not_depend_on_the_rest_of_the_batch() -> None:
    files = [Path("a/talk.wav"), Path("b/talk.wav"), Path("c/solo.wav"), Path("d/clip.m4a"), Path("d/clip.webm")]
    assert input_ids(files) == ["a/talk", "b/talk", "solo", "clip.m4a", "clip.webm"]
    assert input_ids([Path("c/solo.wav")]) == ["solo"]
