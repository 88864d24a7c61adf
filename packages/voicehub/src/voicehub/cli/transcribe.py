"""``voicehub transcribe``: speech to text for files, directories or standard input, in the formats of the
openai-whisper command line (txt, json, srt, vtt, tsv)."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from voicehub.cli._inputs import (
    SAMPLE_RATE_HELP,
    audio_input,
    check_raw_inputs,
    cli_model_type,
    default_model_help,
    expand_audio_inputs,
    resolve_cli_options,
)
from voicehub.cli._options import CommonOptions, common_options
from voicehub.cli.vad import rttm_file_ids
from voicehub.core import strict_json
from voicehub.core.audio import RAW_PCM_SUFFIXES, AudioLike
from voicehub.core.errors import AudioDecodeError, VoiceHubError
from voicehub.core.files import atomic_write, check_output_directory
from voicehub.core.outputs import ASROutput
from voicehub.core.tasks import SpeechTask

_LOG = logging.getLogger(__name__)

STDIN = "-"
"""The argument naming audio on standard input (any format libsndfile reads; outputs are named ``stdin``).

Unlike ``vad`` and ``embed``, where ``-`` reads a list of paths, ``transcribe -`` reads the audio
itself, as a pipe from a recorder or ``ffmpeg ... -f wav -`` would give it.
"""


# --------------------------------------------------------------------------- formats
def _clock(seconds: float, separator: str) -> str:
    """``HH:MM:SS<separator>mmm`` (rounded to the millisecond)."""
    total_ms = round(seconds * 1000)
    hours, rest = divmod(total_ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, ms = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{ms:03d}"


def format_txt(output: ASROutput) -> str:
    """One line per segment."""
    return "".join(f"{segment.text}\n" for segment in output.segments)


def format_srt(output: ASROutput) -> str:
    """SubRip: numbered cues, ``HH:MM:SS,mmm --> HH:MM:SS,mmm``, a blank line after each."""
    cues = [
        f"{index}\n{_clock(s.start_s, ',')} --> {_clock(s.end_s, ',')}\n{s.text}\n"
        for index, s in enumerate(output.segments, 1)
    ]
    return "\n".join(cues)


def format_vtt(output: ASROutput) -> str:
    """WebVTT: the ``WEBVTT`` header, then ``HH:MM:SS.mmm --> HH:MM:SS.mmm`` cues."""
    cues = [f"{_clock(s.start_s, '.')} --> {_clock(s.end_s, '.')}\n{s.text}\n" for s in output.segments]
    return "WEBVTT\n\n" + "\n".join(cues)


def format_tsv(output: ASROutput) -> str:
    """Tab-separated ``start``, ``end`` (integer milliseconds) and ``text``, with a header (openai-whisper's)."""
    rows = [
        f"{round(s.start_s * 1000)}\t{round(s.end_s * 1000)}\t{s.text.replace(chr(9), ' ')}" for s in output.segments
    ]
    return "start\tend\ttext\n" + "".join(f"{row}\n" for row in rows)


def format_json(output: ASROutput) -> str:
    """The whole :class:`~voicehub.core.ASROutput` as strict JSON (text, segments, words, language...)."""
    return strict_json.dumps(output.to_dict(), indent=2) + "\n"


FORMATS: dict[str, Callable[[ASROutput], str]] = {
    "txt": format_txt,
    "json": format_json,
    "srt": format_srt,
    "vtt": format_vtt,
    "tsv": format_tsv,
}
"""Output format name -> writer; ``all`` writes every one."""


# --------------------------------------------------------------------------- inputs
def expand_inputs(arguments: Sequence[str]) -> list[Path]:
    """Files of the arguments, as :func:`~voicehub.cli._inputs.expand_audio_inputs` expands them, ``-`` kept.

    ``-`` stands for audio on standard input, at its place in the order, once.

    Raises:
        click.UsageError: for ``-`` given twice, a glob that matches nothing or a directory without
            audio files.
    """
    if sum(argument == STDIN for argument in arguments) > 1:
        raise click.UsageError("'-' (audio from standard input) can be given only once")
    files: list[Path] = []
    for argument in arguments:
        for path in [Path(STDIN)] if argument == STDIN else expand_audio_inputs([argument]):
            if path not in files:
                files.append(path)
    return files


def _read_stdin() -> AudioLike:
    import soundfile

    data = sys.stdin.buffer.read()
    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (RuntimeError, soundfile.LibsndfileError) as err:
        raise AudioDecodeError(
            f"standard input ({len(data)} bytes): cannot decode it ({err}); pipe a wav, flac, ogg or mp3 stream",
            source="stdin",
        ) from err
    return samples.T, int(rate)


def _duration_s(path: Path, sample_rate: int | None) -> float:
    """Length of a file in seconds for the progress bar (0 when unknown)."""
    if str(path) == STDIN:
        return 0.0
    if path.suffix.lower() in RAW_PCM_SUFFIXES:
        return path.stat().st_size / 2 / sample_rate if sample_rate else 0.0
    import soundfile

    try:
        return float(soundfile.info(str(path)).duration)
    except (RuntimeError, soundfile.LibsndfileError):
        return 0.0


def _write(output: ASROutput, name: str, directory: Path, formats: Sequence[str]) -> None:
    for fmt in formats:
        target = directory / f"{name}.{fmt}"
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, _text_writer(FORMATS[fmt](output)), what=f"{fmt} output")


def _text_writer(text: str) -> Callable[[Path], None]:
    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    return write


TRANSCRIBE_INPUTS_HELP = (
    "INPUT is an audio file (wav, flac, ogg, mp3; m4a, mp4, webm with voicehub[av]), a directory (searched "
    "recursively for audio files), a quoted glob ('clips/*.wav'), or - for audio piped on standard input."
)

_DEFAULT_MODEL = default_model_help(SpeechTask.AUTOMATIC_SPEECH_RECOGNITION)


@click.command("transcribe", epilog=TRANSCRIBE_INPUTS_HELP)
@click.argument("inputs", nargs=-1, required=True, metavar="FILE|DIR|-...")
@click.option(
    "--model",
    "model_type",
    default=None,
    metavar="MODEL_TYPE",
    help=f"A registered ASR model type or alias (default: {_DEFAULT_MODEL}; whisper-base for Whisper base).",
)
@click.option("--source", default=None, help="Checkpoint source (file, directory, hf:owner/name).")
@click.option("--language", default=None, help="Language code of the speech (default: detected where possible).")
@click.option("--task", type=click.Choice(["transcribe", "translate"]), default=None, help="Transcribe or translate.")
@click.option("--beam-size", type=int, default=None, help="Beams at temperature 0 (default 1: greedy).")
@click.option("--temperature", type=float, default=None, help="A single decoding temperature (no fallback).")
@click.option("--word-timestamps", is_flag=True, help="Add word times (kept in the json output).")
@click.option("--batch-size", type=int, default=None, help="Windows decoded together (default 8).")
@click.option(
    "--vad/--no-vad",
    default=None,
    help="Long inputs: cut by the voice-activity detector and batched (default), or --no-vad for the model's "
    "sequential long-form algorithm.",
)
@click.option(
    "--output-format",
    "-f",
    type=click.Choice([*FORMATS, "all"]),
    default="txt",
    show_default=True,
    help="Format of the files written to --output-dir.",
)
@click.option(
    "--output-dir",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Directory the transcripts are written to (<name>.<format>; created if missing).",
)
@click.option("--sample-rate", type=int, default=None, metavar="HZ", help=SAMPLE_RATE_HELP)
@common_options
def transcribe_command(
    inputs: tuple[str, ...],
    model_type: str | None,
    source: str | None,
    language: str | None,
    task: str | None,
    beam_size: int | None,
    temperature: float | None,
    word_timestamps: bool,
    batch_size: int | None,
    vad: bool | None,
    output_format: str,
    output_dir: Path,
    sample_rate: int | None,
    common: CommonOptions,
) -> None:
    """Transcribe FILE|DIR|-... (audio files, directories of them, or - for standard input).

    Prints each transcript and writes it to --output-dir in --output-format. Exits with status 1
    if any input fails.
    """
    from voicehub.auto import AutoModelForSpeechRecognition

    files = expand_inputs(inputs)
    check_raw_inputs([f for f in files if str(f) != STDIN], sample_rate)
    overrides: dict[str, Any] = {
        key: value
        for key, value in (
            ("language", language),
            ("task", task),
            ("beam_size", beam_size),
            ("temperature", temperature),
            ("batch_size", batch_size),
            ("vad", vad),
        )
        if value is not None
    }
    if word_timestamps:
        overrides["word_timestamps"] = True
    formats = list(FORMATS) if output_format == "all" else [output_format]
    try:
        directory = check_output_directory(output_dir, what="--output-dir")
        model_type = cli_model_type(SpeechTask.AUTOMATIC_SPEECH_RECOGNITION, model_type, source)
        model = AutoModelForSpeechRecognition.from_pretrained(source, model_type=model_type, device=common.device)
        options = resolve_cli_options(model, overrides, {})  # bad options: a usage error naming the flag
        model.load()
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    names = rttm_file_ids([f if str(f) != STDIN else Path("stdin") for f in files])
    durations = [_duration_s(f, sample_rate) for f in files]
    from tqdm import tqdm

    failures: list[str] = []
    with tqdm(
        total=round(sum(durations), 2), unit="s", desc="transcribe", disable=not common.show_progress(), file=sys.stderr
    ) as bar:
        for index, (path, name, duration_s) in enumerate(zip(files, names, durations, strict=True)):
            bar.set_postfix_str(f"file {index + 1}/{len(files)}")
            try:
                audio = _read_stdin() if str(path) == STDIN else audio_input(path, sample_rate)
                output = model.transcribe(audio, options=options)
                _write(output, name, directory, formats)
            except VoiceHubError as err:
                failures.append(str(err))
                continue
            finally:
                bar.update(round(duration_s, 2))
            click.echo(f"{path}: {output.text}" if len(files) > 1 else output.text)
    if failures:
        for message in failures:
            _LOG.error("%s", message)
        raise click.exceptions.Exit(1)


__all__ = [
    "FORMATS",
    "expand_inputs",
    "format_json",
    "format_srt",
    "format_tsv",
    "format_txt",
    "format_vtt",
    "transcribe_command",
]
