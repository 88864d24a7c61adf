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
from voicehub.cli.transcribe import FORMATS, echo_segments, format_json, format_srt, format_tsv, format_vtt
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
    expected = f"{join_segments(output.segments)}\n" if output_format == "txt" else FORMATS[output_format](output, None)
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
    words = [w["word"] for s in record["segments"] for w in s["words"]]  # openai-whisper's schema: "word"
    assert words == [" He", " might", " even", " have", " been", " made", " amiable", " himself."]


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


# --------------------------------------------------------------------------- whisper JSON and its readers
def _whisper_writers(record: dict, directory: Path, **options: object) -> dict[str, str]:
    """What openai-whisper's own SRT, VTT and TSV writers make of a result dict (our JSON file, read back)."""
    from whisper.utils import WriteSRT, WriteTSV, WriteVTT

    directory.mkdir(exist_ok=True)
    written = {}
    for writer in (WriteSRT, WriteVTT, WriteTSV):
        writer(str(directory))(record, "talk.wav", options)
        written[writer.extension] = (directory / f"talk.{writer.extension}").read_text(encoding="utf-8")
    return written


def _vtt_cues(document: str) -> list[tuple[int, int, str]]:
    """(start ms, end ms, text) per WebVTT cue; openai-whisper leaves out zero hours, we write them."""
    cues = []
    for block in document.strip().split("\n\n")[1:]:
        timing, text = block.split("\n", 1)
        start, end = (_seconds(t if t.count(":") == 2 else "00:" + t) for t in timing.split(" --> "))
        cues.append((round(start * 1000), round(end * 1000), text))
    return cues


@pytest.fixture(scope="module")
def librivox_talk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The five LibriVox clips one after another with 1 s of silence between them: 29.7 s, one window."""
    import numpy as np

    pieces = []
    for path in sorted((DATA / "librivox").glob("*.wav")):
        samples, rate = soundfile.read(str(path), dtype="float32")
        assert rate == 16000
        pieces += [samples, np.zeros(16000, dtype=np.float32)]
    path = tmp_path_factory.mktemp("talk") / "talk.wav"
    soundfile.write(str(path), np.concatenate(pieces[:-1]), 16000)
    return path


@pytest.mark.parametrize(
    "flags",
    [[], ["--word-timestamps"], ["--max_line_width", "42", "--max-line-count", "2"]],
    ids=["segments", "words", "lines"],
)
def test_openai_whispers_own_writers_read_our_json_and_write_our_srt_vtt_and_tsv(
    flags: list[str], librivox_talk: Path, tmp_path: Path
) -> None:
    ours = tmp_path / "ours"
    args = ["transcribe", str(librivox_talk), "-f", "all", "-o", str(ours), "--device", "cpu", "--no-progress"]
    result = CliRunner().invoke(main, args + flags)
    assert result.exit_code == 0, result.output
    record = json.loads((ours / "talk.json").read_text(encoding="utf-8"))
    segments = record["segments"]
    assert len(segments) >= 4 and record["language"] == "en" and record["language_probability"] == 1.0
    assert [s["id"] for s in segments] == list(range(len(segments)))
    timed = bool(flags)  # the line options turn word timestamps on
    assert all(("words" in s) == timed for s in segments)
    for segment in segments:
        assert {"seek", "start", "end", "text", "tokens", "temperature", "avg_logprob", "compression_ratio",
                "no_speech_prob"} <= set(segment)  # fmt: skip
        assert segment["tokens"][0] >= 50363 and segment["temperature"] == 0.0  # a timestamp token first
        if timed:
            assert "".join(w["word"] for w in segment["words"]) == segment["text"]
    options = {"max_line_width": 42, "max_line_count": 2} if flags[:1] == ["--max_line_width"] else {}
    theirs = _whisper_writers(record, tmp_path / "theirs", **options)
    srt = (ours / "talk.srt").read_text(encoding="utf-8")
    assert srt.strip() == theirs["srt"].strip()  # cue for cue, byte for byte
    assert _vtt_cues((ours / "talk.vtt").read_text(encoding="utf-8")) == _vtt_cues(theirs["vtt"])
    assert (ours / "talk.tsv").read_text(encoding="utf-8") == theirs["tsv"]
    cues = srt.strip().split("\n\n")
    if options:  # lines of at most 42 characters (a longer word alone), at most 2 lines per cue
        assert any(len(block.split("\n")) == 4 for block in cues)  # number, times, two lines
        assert all(len(block.split("\n")) <= 4 for block in cues)
        assert all(len(line) <= 42 or " " not in line for block in cues for line in block.split("\n")[2:])
    else:
        assert len(cues) == len(segments)


@pytest.fixture(scope="module")
def timed_talk(librivox_talk: Path) -> ASROutput:
    from voicehub.auto import AutoModelForSpeechRecognition

    model = AutoModelForSpeechRecognition.from_pretrained(device="cpu")
    return model.transcribe(str(librivox_talk), word_timestamps=True)


@pytest.mark.parametrize(
    "options",
    [
        {"highlight_words": True},
        {"max_words_per_line": 3},
        {"max_line_width": 20},
        {"max_line_width": 30, "max_line_count": 1},
        {"max_line_width": 30, "max_line_count": 3, "highlight_words": True},
    ],
    ids=["highlight", "words-per-line", "width", "width-count", "width-count-highlight"],
)
def test_subtitle_options_cut_cues_as_openai_whisper_does(
    options: dict[str, object], timed_talk: ASROutput, tmp_path: Path
) -> None:
    from voicehub.cli._subtitles import SubtitleOptions

    record = json.loads(format_json(timed_talk))
    theirs = _whisper_writers(record, tmp_path, **options)
    ours = SubtitleOptions(**options)  # type: ignore[arg-type]
    assert format_srt(timed_talk, ours).strip() == theirs["srt"].strip()
    assert _vtt_cues(format_vtt(timed_talk, ours)) == _vtt_cues(theirs["vtt"])
    words = sum(len(s.words) for s in timed_talk.segments)
    if options.get("highlight_words"):  # one cue per word, the word underlined (and gaps shown plain)
        assert format_srt(timed_talk, ours).count("<u>") == words
    if options == {"max_words_per_line": 3}:
        assert all(len(block.split("\n")[2].split()) <= 3 for block in theirs["srt"].strip().split("\n\n"))


def test_streamed_srt_with_words_equals_the_document(timed_talk: ASROutput, capsys: pytest.CaptureFixture[str]) -> None:
    from voicehub.cli._subtitles import SubtitleOptions

    options = SubtitleOptions(max_line_width=30, max_line_count=2)
    echo_segments(iter(timed_talk.segments), "srt", "", options)
    assert capsys.readouterr().out == format_srt(timed_talk, options)


def test_subtitle_options_need_srt_or_vtt(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["transcribe", str(CLIP_0930), "-f", "txt", "-o", str(tmp_path), "--max-line-width", "20"]
    )
    assert result.exit_code == 2 and "--max-line-width cut srt and vtt subtitles" in result.output
    assert "-f srt" in result.output and not any(tmp_path.iterdir())


# --------------------------------------------------------------------------- openai-whisper's flags
def test_openai_whisper_flags_and_underscore_spellings_reach_the_decoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from voicehub.models.asr_whisper import wrapper

    seen = []
    real = wrapper.decoding_options

    def record(options):  # type: ignore[no-untyped-def]
        seen.append(options)
        return real(options)

    monkeypatch.setattr(wrapper, "decoding_options", record)
    args = [
        "transcribe", str(CLIP_0930), "--model", "tiny.en", "--output_dir", str(tmp_path), "--output_format", "json",
        "--word_timestamps", "--beam_size", "2", "--best_of", "3", "--patience", "1.5",
        "--initial_prompt", "Mr. Dashwood.", "--no_condition_on_previous_text", "--compression-ratio-threshold", "None",
        "--logprob_threshold", "-2", "--no-speech-threshold", "0.5", "--device", "cpu", "--no-progress",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    options = seen[0]
    assert (options.beam_size, options.best_of, options.patience) == (2, 3, 1.5)
    assert (options.initial_prompt, options.condition_on_previous_text) == ("Mr. Dashwood.", False)
    assert (options.compression_ratio_threshold, options.logprob_threshold, options.no_speech_threshold) == (
        None,
        -2.0,
        0.5,
    )
    record_ = json.loads((tmp_path / f"{CLIP_0930.stem}.json").read_text())
    assert record_["text"] == TEXT_0930 and record_["segments"][0]["words"]  # --word_timestamps took effect


def test_model_names_of_openai_whisper(tmp_path: Path) -> None:
    from voicehub.auto import get_model_spec

    assert get_model_spec("tiny.en").model_type == "asr_whisper"
    assert get_model_spec("base").model_type == "asr_whisper_base"
    for name, repository in (("small", "openai/whisper-small"), ("tiny", "openai/whisper-tiny")):
        result = CliRunner().invoke(main, ["transcribe", str(CLIP_0930), "--model", name, "-o", str(tmp_path)])
        assert result.exit_code == 2, result.output
        assert f"--model {name}: this checkpoint's weights are not shipped" in result.output
        assert f"hf download {repository}" in result.output and "--model asr_whisper --source DIR" in result.output
        assert "asr_whisper_base (whisper-base, base)" in result.output  # what is shipped, by name


def test_bad_threshold_values_name_the_flag(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["transcribe", str(CLIP_0930), "--no_speech_threshold", "2", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "--no-speech-threshold 2.0: " in result.output and "[0, 1]" in result.output
    result = CliRunner().invoke(main, ["transcribe", str(CLIP_0930), "--logprob-threshold", "low"])
    assert result.exit_code == 2 and "expected a number or None, got 'low'" in result.output


def test_faster_whisper_decoding_flags_reach_the_decoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from voicehub.models.asr_whisper import wrapper

    seen = []
    real = wrapper.decoding_options

    def record(options):  # type: ignore[no-untyped-def]
        seen.append(options)
        return real(options)

    monkeypatch.setattr(wrapper, "decoding_options", record)
    long_file = ROOT / "tests" / "data" / "silero" / "test.wav"
    args = [
        "transcribe", str(long_file), "--no-vad", "--clip_timestamps", "10,25", "--hotwords", "Piketty",
        "--suppress-tokens", "-1,50", "--repetition_penalty", "1.2", "--no-repeat-ngram-size", "4",
        "--word-timestamps", "--hallucination-silence-threshold", "2", "--device", "cpu", "--no-progress",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    options = seen[-1]
    assert (options.clip_timestamps, options.hotwords, options.suppress_tokens) == ((10.0, 25.0), "Piketty", (-1, 50))
    assert (options.repetition_penalty, options.no_repeat_ngram_size) == (1.2, 4)
    assert options.hallucination_silence_threshold == 2.0 and options.prefix is None
    # Only 10-25 s of the 60 s file ("much of political philosophy ... argue about in the"): not the
    # words before 10 s (Dublin) nor after 25 s (Piketty, tax).
    text = result.output
    assert "political philosophy" in text and not any(word in text for word in ("Dublin", "Piketty", "tax"))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--clip-timestamps", "10,x"], "expected comma-separated seconds such as 1,2,3, got '10,x'"),
        (["--clip-timestamps", "10"], "applies to the sequential long-form algorithm only"),
        (["--suppress-tokens", "99999"], "token ids below the vocabulary size 51864"),
        (["--repetition-penalty", "0"], "repetition_penalty: expected a number > 0"),
        (["--beam-size", "1000000"], "beam_size: expected an integer from 1 (greedy decoding) to 128"),
        (["--best-of", "1000000"], "best_of: expected an integer from 1 to 128"),
        (["--threads", "100000"], "expected 1 to 1024 threads, got 100000"),
    ],
)
def test_bad_decoding_flags_are_refused_before_any_file(tmp_path: Path, flags: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["transcribe", str(CLIP_0930), "-o", str(tmp_path), *flags])
    assert result.exit_code != 0 and message in result.output, result.output
    assert not any(tmp_path.iterdir())
