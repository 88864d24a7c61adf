"""``voicehub transcribe``: every output format's content, directories, standard input, raw PCM and errors,
on the default ASR (Whisper tiny.en) and real LibriVox clips."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import soundfile
from click.testing import CliRunner

from voicehub.cli import main
from voicehub.cli.transcribe import FORMATS, echo_segments, format_srt, format_tsv, format_vtt
from voicehub.core import ASROutput, ASRSegment
from voicehub.speech_recognition import join_segments

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
CLIP_0930 = DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0930.wav"
TEXT_0930 = "He might even have been made amiable himself."


def _output() -> ASROutput:
    segments = (
        ASRSegment(text="Hello there.", start_s=0.0, end_s=1.5),
        ASRSegment(text="General\tKenobi.", start_s=3661.25, end_s=3662.0004),
    )
    return ASROutput(text="Hello there. General Kenobi.", segments=segments)


def test_subtitle_formats_write_times_as_their_specs_ask() -> None:
    output = _output()
    assert format_srt(output) == (
        "1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n2\n01:01:01,250 --> 01:01:02,000\nGeneral\tKenobi.\n"
    )
    assert format_vtt(output).startswith("WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello there.\n\n01:01:01.250 -->")
    assert format_tsv(output) == "start\tend\ttext\n0\t1500\tHello there.\n3661250\t3662000\tGeneral Kenobi.\n"


@pytest.mark.parametrize("output_format", ["txt", "srt", "vtt", "tsv"])
def test_streamed_formats_print_each_segment_before_the_next_is_decoded_and_equal_the_document(
    output_format: str, capsys: pytest.CaptureFixture[str]
) -> None:
    output = _output()
    printed_before: list[str] = []

    def stream() -> Iterator[ASRSegment]:
        for segment in output.segments:
            printed_before.append(capsys.readouterr().out)
            yield segment

    echo_segments(stream(), output_format, "")
    printed = "".join(printed_before) + capsys.readouterr().out
    first = output.segments[0].text
    assert first in printed_before[1] and "Kenobi" not in printed_before[1]  # segment 1 out before 2 is decoded
    expected = f"{join_segments(output.segments)}\n" if output_format == "txt" else FORMATS[output_format](output)
    assert printed == expected


def test_transcribe_writes_every_format_of_a_librivox_clip(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["transcribe", str(CLIP_0930), "-f", "all", "-o", str(tmp_path), "--word-timestamps", "--device", "cpu"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == TEXT_0930
    stem = CLIP_0930.stem
    assert (tmp_path / f"{stem}.txt").read_text() == TEXT_0930 + "\n"
    srt = (tmp_path / f"{stem}.srt").read_text().splitlines()
    assert srt[0] == "1" and srt[2] == TEXT_0930
    start, end = (_seconds(t) for t in re.fullmatch(r"(\S+) --> (\S+)", srt[1]).groups())  # type: ignore[union-attr]
    duration_s = soundfile.info(str(CLIP_0930)).duration
    assert 0.0 <= start < 0.5 and duration_s - 1.0 < end <= duration_s + 5e-4
    vtt = (tmp_path / f"{stem}.vtt").read_text().splitlines()
    assert vtt[0] == "WEBVTT" and vtt[3] == TEXT_0930 and "." in vtt[2]
    tsv = (tmp_path / f"{stem}.tsv").read_text().splitlines()
    assert tsv[0] == "start\tend\ttext" and tsv[1].split("\t")[2] == TEXT_0930
    record = json.loads((tmp_path / f"{stem}.json").read_text())
    assert record["text"] == TEXT_0930 and record["language"] == "en"
    words = [w["text"] for s in record["segments"] for w in s["words"]]
    assert words == ["He", "might", "even", "have", "been", "made", "amiable", "himself."]


def _seconds(clock: str) -> float:
    hours, minutes, rest = clock.replace(",", ".").split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(rest)


@pytest.mark.slow
def test_transcribe_a_directory_and_standard_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["transcribe", str(DATA / "librivox"), "-", "-o", str(tmp_path), "--no-progress", "--device", "cpu"],
        input=CLIP_0930.read_bytes(),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in tmp_path.iterdir())
    assert len(written) == 6 and "stdin.txt" in written
    assert (tmp_path / "stdin.txt").read_text().strip() == TEXT_0930
    assert f"{CLIP_0930}: {TEXT_0930}" in result.output.splitlines()


def test_transcribe_raw_pcm_needs_its_rate(tmp_path: Path) -> None:
    raw = DATA / "goforward.raw"
    refused = CliRunner().invoke(main, ["transcribe", str(raw), "-o", str(tmp_path)])
    assert refused.exit_code == 2 and "--sample-rate" in refused.output
    result = CliRunner().invoke(main, ["transcribe", str(raw), "--sample-rate", "16000", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert re.sub(r"[^a-z0-9 ]", "", result.output.strip().lower()) in {"go forward ten meters", "go forward 10 meters"}


def test_transcribe_reports_bad_options_and_undecodable_files(tmp_path: Path) -> None:
    bad_beam = CliRunner().invoke(main, ["transcribe", str(CLIP_0930), "--beam-size", "0", "-o", str(tmp_path)])
    assert bad_beam.exit_code == 2 and "--beam-size 0:" in bad_beam.output  # the flag, not the Python name
    assert "transcribe()" not in bad_beam.output
    # A language the checkpoint lacks is one usage error before any file, not a failure per file.
    args = ["transcribe", str(CLIP_0930), str(CLIP_0930), "--language", "xx", "-o", str(tmp_path / "out")]
    bad_language = CliRunner().invoke(main, args)
    assert bad_language.exit_code == 2 and "--language xx:" in bad_language.output, bad_language.output
    assert "English-only" in bad_language.output and not (tmp_path / "out").exists()
    # So is translation on an English-only checkpoint.
    args = ["transcribe", str(CLIP_0930), "--task", "translate", "-o", str(tmp_path / "out")]
    bad_task = CliRunner().invoke(main, args)
    assert bad_task.exit_code == 2 and "--task translate:" in bad_task.output, bad_task.output
    assert "multilingual" in bad_task.output and not (tmp_path / "out").exists()
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"not audio at all")
    result = CliRunner().invoke(main, ["transcribe", str(junk), str(CLIP_0930), "-o", str(tmp_path), "--no-progress"])
    assert result.exit_code == 1
    assert "junk.wav" in result.output and TEXT_0930 in result.output
    assert not (tmp_path / "junk.txt").exists() and (tmp_path / f"{CLIP_0930.stem}.txt").is_file()


def test_transcribe_takes_globs_logs_a_missing_file_and_keeps_the_others(tmp_path: Path) -> None:
    pattern = str(DATA / "librivox" / "*-093[0].wav")
    missing = tmp_path / "gone.wav"
    result = CliRunner().invoke(main, ["transcribe", pattern, str(missing), "-o", str(tmp_path), "--no-progress"])
    assert result.exit_code == 1
    assert TEXT_0930 in result.stdout and "gone.wav" not in result.stdout
    assert "gone.wav" in result.stderr  # logged as an error, on stderr
    assert (tmp_path / f"{CLIP_0930.stem}.txt").read_text(encoding="utf-8").strip() == TEXT_0930
    twice = CliRunner().invoke(main, ["transcribe", "-", "-", "-o", str(tmp_path)], input=b"")
    assert twice.exit_code == 2 and "only once" in twice.output
