"""Messages that say what really happened: command-line option errors name the --flag, hints name
calls and flags that work, odd inputs (a FIFO, /dev/stdin, random bytes, a non-UTF-8 name, a
directory) are named as what they are, and boolean arguments refuse non-booleans."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from voicehub.cli import main
from voicehub.core import ArgumentTypeError, AudioDecodeError, AudioError, load_audio

ROOT = Path(__file__).resolve().parents[3]
LIBRIVOX = sorted((ROOT / "tests" / "data" / "librivox").glob("*.wav"))


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["vad", "--threshold", "3"], "--threshold 3.0"),
        (["vad", "--min-speech-ms", "-5"], "--min-speech-ms -5.0"),
        (["verify", "--threshold", "3"], "--threshold 3.0"),
    ],
)
def test_cli_option_errors_name_the_flag_not_a_python_method(args: list[str], flag: str) -> None:
    files = [str(LIBRIVOX[0])] if args[0] == "vad" else [str(LIBRIVOX[0]), str(LIBRIVOX[1])]
    result = CliRunner().invoke(main, [*args, *files])
    assert result.exit_code == 2, result.output
    assert flag in result.output
    assert "()" not in result.output and "Verifier" not in result.output and "Model." not in result.output


def test_digital_silence_does_not_suggest_a_flag_that_fails_the_same_way(tmp_path: Path) -> None:
    import soundfile

    silent = tmp_path / "silent.wav"
    soundfile.write(silent, np.zeros(32000, dtype=np.float32), 16000, subtype="PCM_16")
    for flags in ([], ["--no-trim-silence"]):
        result = CliRunner().invoke(main, ["embed", *flags, str(silent)])
        assert result.exit_code == 1
        assert "digital silence" in result.output and "--no-trim-silence" not in result.output


def test_no_speech_found_still_suggests_switching_trimming_off(tmp_path: Path) -> None:
    import soundfile

    hum = tmp_path / "hum.wav"
    t = np.arange(16000) / 16000
    soundfile.write(hum, (0.01 * np.sin(2 * np.pi * 50 * t)).astype(np.float32), 16000, subtype="PCM_16")
    result = CliRunner().invoke(main, ["embed", str(hum)])
    assert result.exit_code == 1 and "found no speech" in result.output and "--no-trim-silence" in result.output
    assert CliRunner().invoke(main, ["embed", "--no-trim-silence", str(hum)]).exit_code == 0


@pytest.mark.slow
def test_a_fifo_and_dev_stdin_given_as_audio_are_named_as_such(tmp_path: Path) -> None:
    fifo = tmp_path / "clip.wav"
    os.mkfifo(fifo)
    with pytest.raises(AudioDecodeError, match=r"clip\.wav: is a pipe or FIFO .*not a regular file"):
        load_audio(fifo)
    command = [sys.executable, "-m", "voicehub", "vad", "/dev/stdin"]
    piped = subprocess.run(command, input=LIBRIVOX[0].read_bytes(), capture_output=True, check=False)
    assert piped.returncode == 1
    stderr = piped.stderr.decode()
    assert "/dev/stdin: is a pipe or FIFO" in stderr and "save the stream to a file first" in stderr
    assert "Traceback" not in stderr
    with open(LIBRIVOX[0], "rb") as stdin:  # `< clip.wav` makes /dev/stdin a regular file: that works
        redirected = subprocess.run(command, stdin=stdin, capture_output=True, text=True, check=False)
    assert redirected.returncode == 0 and "1 speech segment" in redirected.stdout


def test_random_bytes_named_mp3_say_the_content_is_not_audio(tmp_path: Path) -> None:
    fake = tmp_path / "song.mp3"
    fake.write_bytes(np.random.default_rng(0).integers(0, 256, 20000, dtype=np.uint8).tobytes())
    with pytest.raises(AudioDecodeError, match=r"not in any audio format .*whatever its \.mp3 suffix says") as caught:
        load_audio(fake)
    assert "pipe" not in str(caught.value) and "does not exist" not in str(caught.value)


def test_a_non_utf8_file_name_decodes_and_prints(tmp_path: Path) -> None:
    odd = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9.wav"))  # Latin-1 bytes, not UTF-8
    shutil.copy(LIBRIVOX[0], odd)
    expected = load_audio(LIBRIVOX[0]).num_samples
    assert load_audio(odd).num_samples == expected
    from voicehub.core import audio_file_info, iter_audio_blocks  # the streaming readers too

    assert audio_file_info(odd).num_frames == expected
    assert sum(block.size for block in iter_audio_blocks(odd, block_samples=4000)) == expected
    odd.write_bytes(b"RIFF")
    with pytest.raises(AudioError) as caught:
        load_audio(odd)
    message = str(caught.value)
    message.encode("utf-8")  # printable: the odd byte is shown as an escape
    assert "caf\\xe9.wav" in message


def test_a_directory_given_to_auto_load_says_what_it_is(tmp_path: Path) -> None:
    from voicehub.hyperion.errors import HyperionFileError
    from voicehub.hyperion.np import HyperNPModel
    from voicehub.hyperion.torch import HyperTorchModel

    shutil.copy(LIBRIVOX[0], tmp_path / "a.wav")
    with pytest.raises(HyperionFileError, match=r"not a torch checkpoint \(it holds a\.wav\)"):
        HyperTorchModel.auto_load(tmp_path)
    with pytest.raises(HyperionFileError, match=r"is a directory; a Hyperion NumPy model is one HDF5 file"):
        HyperNPModel.auto_load(tmp_path)


@pytest.mark.parametrize("value", ["no", "false", 0, None])
def test_boolean_arguments_refuse_non_booleans(value: object) -> None:
    from voicehub import AutoModel
    from voicehub.models.vad_silero.wrapper import SileroVADModel

    with pytest.raises(ArgumentTypeError, match=rf"lazy_load must be True or False, got {value!r}"):
        AutoModel.from_pretrained(model_type="vad_silero", lazy_load=value)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="lazy_load must be True or False"):
        SileroVADModel.from_pretrained(lazy_load=value)  # type: ignore[arg-type]
    assert not SileroVADModel.from_pretrained(lazy_load=True).is_loaded


def test_a_failed_switch_back_names_unload_then_load() -> None:
    from voicehub.optimization import host

    source = Path(host.__file__).read_text(encoding="utf-8")
    assert "call unload() or load() yourself" not in source and "call unload() then load() yourself" in source
