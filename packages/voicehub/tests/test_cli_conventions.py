"""The command-line conventions of speech tools, on real speech: inputs, outputs, common options, plots.

Inputs (files, directories, globs, ``-`` lists), ``-`` as standard output for every output option,
``--output-dir``, ``--jsonl``, ``--speech-out``, ``--plot``, ``--device``/``--threads``/``-v``/``-q``
and ``--progress``: the shared helpers of :mod:`voicehub.cli` as ``vad``, ``embed`` and ``verify`` use them.
"""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from voicehub.cli import main
from voicehub.cli._inputs import expand_audio_inputs
from voicehub.cli._options import CommonOptions, configure_logging
from voicehub.core.audio import load_audio

ROOT = Path(__file__).resolve().parents[3]
LIBRIVOX_DIR = ROOT / "tests" / "data" / "librivox"
LIBRIVOX = sorted(LIBRIVOX_DIR.glob("*.wav"))
CLIP_0880 = LIBRIVOX_DIR / "sense_and_sensibility_01_austen_64kb-0880.wav"


def _vad_jsonl(*arguments: str, stdin: str | None = None) -> list[dict[str, object]]:
    result = CliRunner().invoke(main, ["vad", *arguments, "--jsonl", "--no-progress"], input=stdin)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_inputs_directory_glob_and_stdin_list_name_the_same_files_once(tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "notes.txt").write_text("not audio")
    (tmp_path / "nested" / "clip.wav").write_bytes(CLIP_0880.read_bytes())
    assert expand_audio_inputs([str(tmp_path)]) == [tmp_path / "nested" / "clip.wav"]  # recursive, by suffix
    by_directory = expand_audio_inputs([str(LIBRIVOX_DIR)])
    assert by_directory == LIBRIVOX
    assert expand_audio_inputs([str(LIBRIVOX_DIR / "*-08?0.wav"), str(CLIP_0880)]) == LIBRIVOX[:3]
    listed = "\n".join(map(str, LIBRIVOX[::-1])) + "\n\n"
    assert expand_audio_inputs(["-"], stdin=io.StringIO(listed)) == LIBRIVOX[::-1]
    records = _vad_jsonl("-", stdin=f"{LIBRIVOX[1]}\n{LIBRIVOX_DIR / '*-09*.wav'}\n")
    assert [Path(str(r["source"])).name for r in records] == [LIBRIVOX[1].name, LIBRIVOX[3].name, LIBRIVOX[4].name]
    assert records[0]["segments"][0]["start_sample"] == 3616  # type: ignore[index]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["no/such/*.wav"], "the pattern 'no/such/*.wav' matches no file"),
        (["-", "-"], "'-' (paths from standard input) can be given only once"),
    ],
)
def test_inputs_that_name_nothing_are_refused_by_name(arguments: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["vad", *arguments], input="")
    assert result.exit_code == 2 and message in result.output


def test_a_directory_without_audio_and_an_empty_stdin_list_are_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not audio")
    result = CliRunner().invoke(main, ["embed", str(tmp_path)])
    assert result.exit_code == 2 and f"directory {tmp_path} holds no audio files" in result.output
    result = CliRunner().invoke(main, ["embed", "-"], input="\n")
    assert result.exit_code == 2 and "standard input listed no paths" in result.output


@pytest.mark.slow
def test_embed_output_dash_writes_the_npy_array_to_stdout(tmp_path: Path) -> None:
    runner = CliRunner()
    to_stdout = runner.invoke(main, ["embed", *map(str, LIBRIVOX[:2]), "--output", "-", "--no-progress"])
    assert to_stdout.exit_code == 0, to_stdout.stderr
    assert not Path("-").exists()
    from_stdout = np.load(io.BytesIO(to_stdout.stdout_bytes))
    to_file = runner.invoke(main, ["embed", *map(str, LIBRIVOX[:2]), "--output", str(tmp_path / "e.npy")])
    assert to_file.exit_code == 0, to_file.output
    np.testing.assert_array_equal(from_stdout, np.load(tmp_path / "e.npy"))
    assert from_stdout.shape == (2, 256) and from_stdout.dtype == np.float32
    refused = runner.invoke(main, ["embed", str(CLIP_0880), "--output", "-", "--json"])
    assert refused.exit_code == 2 and "--json and --output - would both print to standard output" in refused.output


@pytest.mark.slow
def test_embed_output_dir_and_jsonl_give_one_vector_per_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["embed", str(LIBRIVOX_DIR), "--output-dir", str(tmp_path / "vectors"), "--jsonl", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [Path(r["source"]).name for r in records] == [p.name for p in LIBRIVOX]
    for path, record in zip(LIBRIVOX, records, strict=True):
        vector = np.load(tmp_path / "vectors" / f"{path.stem}.npy")
        assert vector.shape == (256,)
        np.testing.assert_allclose(vector, record["embedding"], rtol=0, atol=1e-7)


def test_vad_output_dir_writes_one_rttm_per_input_and_rttm_dash_prints_it(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["vad", *map(str, LIBRIVOX[:2]), "--output-dir", str(tmp_path), "--rttm", "-"])
    assert result.exit_code == 0, result.output
    first = (tmp_path / f"{LIBRIVOX[0].stem}.rttm").read_text()
    second = (tmp_path / f"{LIBRIVOX[1].stem}.rttm").read_text()
    assert result.stdout == first + second  # the combined RTTM on stdout, no text report mixed in
    fields = second.split()
    assert fields[1] == LIBRIVOX[1].stem and fields[3:5] == ["0.226", "2.652"]


def test_vad_speech_out_keeps_exactly_the_speech_samples(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--speech-out", str(tmp_path / "speech.wav")])
    assert result.exit_code == 0, result.output
    speech = load_audio(tmp_path / "speech.wav")
    original = load_audio(CLIP_0880)
    assert speech.num_samples == 46048 - 3616  # the one segment, samples 3616..46048
    np.testing.assert_allclose(speech.samples, original.samples[3616:46048], atol=1 / 32768)
    piped = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--speech-out", "-"])
    assert piped.exit_code == 0 and piped.stdout_bytes[:4] == b"RIFF"
    assert piped.stdout_bytes == (tmp_path / "speech.wav").read_bytes()
    several = CliRunner().invoke(main, ["vad", *map(str, LIBRIVOX[:2]), "--speech-out", str(tmp_path / "dir")])
    assert several.exit_code == 0, several.output
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == [f"{p.stem}.wav" for p in LIBRIVOX[:2]]


def test_vad_plot_writes_a_png_and_names_the_extra_without_matplotlib(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["vad", str(CLIP_0880), "--plot", str(tmp_path / "timeline.png")])
    assert result.exit_code == 0, result.output
    png = (tmp_path / "timeline.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    script = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from voicehub.cli import main\n"
        f"main(['vad', {str(CLIP_0880)!r}, '--plot', {str(tmp_path / 'none.png')!r}])\n"
    )
    missing = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert missing.returncode == 1
    assert 'pip install "voicehub[plot]"' in missing.stderr and "Traceback" not in missing.stderr
    assert not (tmp_path / "none.png").exists()


def test_vad_reads_an_m4a_made_from_the_same_speech(tmp_path: Path) -> None:
    import av

    samples = load_audio(CLIP_0880).samples
    target = tmp_path / "clip.m4a"
    with av.open(str(target), mode="w") as container:
        stream = container.add_stream("aac", rate=16000, layout="mono")
        frame = av.AudioFrame.from_ndarray(samples[np.newaxis, :], format="fltp", layout="mono")
        frame.sample_rate = 16000
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    (record,) = _vad_jsonl(str(target))
    (segment,) = record["segments"]  # type: ignore[misc]
    # AAC primes 1024 samples; the boundary moves by at most that plus a 512-sample Silero chunk.
    assert abs(segment["start_s"] - 0.226) < 0.1 and abs(segment["end_s"] - 2.878) < 0.1


def test_verbosity_quiet_and_threads_options(tmp_path: Path) -> None:
    import torch

    runner = CliRunner()
    threads = torch.get_num_threads()
    try:
        verbose = runner.invoke(main, ["vad", str(CLIP_0880), "-v", "--threads", "1"])
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    assert verbose.exit_code == 0
    assert f"{CLIP_0880}: 1 segment(s), 2.65 s of speech" in verbose.stderr
    quiet = runner.invoke(main, ["embed", str(CLIP_0880), str(tmp_path / "missing.wav"), "-q"])
    assert quiet.exit_code == 1 and "missing.wav" in quiet.stderr  # errors still shown with -q
    silent = runner.invoke(main, ["embed", str(CLIP_0880), str(tmp_path / "missing.wav"), "-qq"])
    assert silent.exit_code == 1 and silent.stderr == ""
    refused = runner.invoke(main, ["vad", str(CLIP_0880), "--threads", "0"])
    assert refused.exit_code == 2 and "'--threads': expected 1 to 1024 threads, got 0" in refused.output
    bad_device = runner.invoke(main, ["vad", str(CLIP_0880), "--device", "tpu"])
    assert bad_device.exit_code == 1 and "tpu" in bad_device.output and "Traceback" not in bad_device.output
    configure_logging(0)
    assert logging.getLogger("voicehub").level == logging.WARNING


def test_progress_bar_only_on_a_terminal_unless_asked() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert CommonOptions().show_progress(Terminal()) is True
    assert CommonOptions().show_progress(io.StringIO()) is False
    assert CommonOptions(verbosity=-1).show_progress(Terminal()) is False
    assert CommonOptions(progress=True).show_progress(io.StringIO()) is True
    assert CommonOptions(progress=False).show_progress(Terminal()) is False
    runner = CliRunner()
    default = runner.invoke(main, ["vad", *map(str, LIBRIVOX[:2])])
    assert "vad: 100%" not in default.stderr
    asked = runner.invoke(main, ["vad", *map(str, LIBRIVOX[:2]), "--progress"])
    assert "vad: 100%" in asked.stderr and "2/2" in asked.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["vad", "--model", "sv_ge2e"],
            r"sv_ge2e is a speaker-verification model.*run `voicehub embed --model sv_ge2e`",
        ),
        (["transcribe", "--model", "vad_silero"], r"voice-activity-detection model.*`voicehub vad --model vad_silero`"),
        (["embed", "--model", "tests/data"], r"--model takes a registered model name.*pass it as --source tests/data"),
    ],
)
def test_a_model_of_another_task_or_a_path_given_to_model_names_the_fix(arguments: list[str], message: str) -> None:
    result = CliRunner().invoke(main, [*arguments, str(CLIP_0880), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert re.search(message, result.output.replace("\n", " ")), result.output


def test_embed_output_must_be_an_npy_file_and_nothing_is_written_otherwise(tmp_path: Path) -> None:
    target = tmp_path / "vectors.txt"
    result = CliRunner().invoke(main, ["embed", str(CLIP_0880), "--output", str(target), "--no-progress"])
    assert result.exit_code == 2
    assert "must end in .npy" in result.output and "vectors.npy" in result.output
    assert not target.exists()
