"""``voicehub vad``: speech segments of audio files, as text, strict JSON or RTTM."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from voicehub.cli._inputs import (
    SAMPLE_RATE_HELP,
    audio_input,
    check_raw_inputs,
    cli_model_type,
    default_model_help,
    resolve_cli_options,
)
from voicehub.core import strict_json
from voicehub.core.errors import VoiceHubError
from voicehub.core.files import atomic_write as write_file_atomic
from voicehub.core.files import check_output_file
from voicehub.core.outputs import VADOutput
from voicehub.core.tasks import SpeechTask
from voicehub.speech_segmentation import VADOptions


def _format_text(output: VADOutput) -> str:
    count = len(output.segments)
    lines = [
        f"{output.source}: {count} speech segment{'' if count == 1 else 's'} in {output.duration_s:.2f} s "
        f"({output.speech_duration_s:.2f} s of speech)"
    ]
    for segment in output.segments:
        score = f"  score {segment.score:.2f}" if segment.score is not None else ""
        lines.append(f"  {segment.start_s:8.3f} - {segment.end_s:8.3f} s{score}")
    return "\n".join(lines)


def _json_record(output: VADOutput) -> dict[str, Any]:
    record = output.to_dict()
    if record.get("probabilities") is None:
        record.pop("probabilities", None)
        record.pop("frame_duration_s", None)
    return record


def rttm_file_ids(files: Sequence[Path]) -> list[str]:
    """One RTTM recording id per input file, unique across ``files``.

    The id is the file's stem (``talk`` for ``talk.wav``), as scoring tools expect. When stems
    collide (``a/talk.wav`` and ``b/talk.wav``), every id is the file's path relative to the
    inputs' common directory, without suffix (``a/talk``, ``b/talk``), or with it when that is
    still ambiguous (``talk.wav`` and ``talk.flac``). Whitespace becomes ``_``.
    """
    stems = [path.stem for path in files]
    if len(set(stems)) == len(stems):
        ids = stems
    else:
        resolved = [path.resolve() for path in files]
        common = Path(os.path.commonpath([str(path.parent) for path in resolved]))
        relative = [path.relative_to(common) for path in resolved]
        ids = [path.with_suffix("").as_posix() for path in relative]
        if len(set(ids)) != len(ids):
            ids = [path.as_posix() for path in relative]
    return ["_".join(name.split()) for name in ids]


_DEFAULT_MODEL = default_model_help(SpeechTask.VOICE_ACTIVITY_DETECTION)
_OPTIONS = VADOptions()  # the segmentation defaults of the built-in VAD models
_FLAGS = {
    "threshold": "--threshold",
    "min_speech_duration_ms": "--min-speech-ms",
    "min_silence_duration_ms": "--min-silence-ms",
    "speech_pad_ms": "--speech-pad-ms",
    "max_speech_duration_s": "--max-speech-s",
}


@click.command("vad")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--model",
    "model_type",
    default=None,
    metavar="MODEL_TYPE",
    help=f"A registered VAD model type or alias (default: {_DEFAULT_MODEL}); see `voicehub models --task vad`.",
)
@click.option(
    "--source",
    default=None,
    help=(
        "Checkpoint source (file, directory, hf:owner/name); a weight file is read as --model "
        f"(default {_DEFAULT_MODEL})."
    ),
)
@click.option(
    "--threshold",
    type=float,
    default=None,
    help=f"Speech probability threshold in [0, 1] (default {_OPTIONS.threshold:g}).",
)
@click.option(
    "--min-speech-ms",
    type=float,
    default=None,
    help=f"Drop segments not longer than this, in ms (default {_OPTIONS.min_speech_duration_ms:g}).",
)
@click.option(
    "--min-silence-ms",
    type=float,
    default=None,
    help=f"Silence that ends a segment, in ms (default {_OPTIONS.min_silence_duration_ms:g}).",
)
@click.option(
    "--speech-pad-ms",
    type=float,
    default=None,
    help=f"Padding on each side, in ms (default {_OPTIONS.speech_pad_ms:g}).",
)
@click.option("--max-speech-s", type=float, default=None, help="Cut longer segments, in seconds (default: none).")
@click.option("--json", "as_json", is_flag=True, help="Print strict JSON (a list, one object per file).")
@click.option(
    "--rttm",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=(
        "Also write the segments as RTTM to this file ('-' for standard output, not with --json); missing parent "
        "directories are created. Recording ids are the file stems, or relative paths when stems repeat."
    ),
)
@click.option("--sample-rate", type=int, default=None, metavar="HZ", help=SAMPLE_RATE_HELP)
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: on for several files).")
def vad_command(
    files: tuple[Path, ...],
    model_type: str | None,
    source: str | None,
    threshold: float | None,
    min_speech_ms: float | None,
    min_silence_ms: float | None,
    speech_pad_ms: float | None,
    max_speech_s: float | None,
    as_json: bool,
    rttm: Path | None,
    sample_rate: int | None,
    progress: bool | None,
) -> None:
    """Detect speech in FILE... (wav, flac, ogg, mp3; any sample rate) and print the segments.

    Exits with status 1 if any file fails; the RTTM file is then not written.
    """
    from voicehub.auto import AutoModelForVoiceActivityDetection

    overrides: dict[str, object] = {
        key: value
        for key, value in (
            ("threshold", threshold),
            ("min_speech_duration_ms", min_speech_ms),
            ("min_silence_duration_ms", min_silence_ms),
            ("speech_pad_ms", speech_pad_ms),
            ("max_speech_duration_s", max_speech_s),
        )
        if value is not None
    }
    to_stdout = rttm is not None and str(rttm) == "-"
    if as_json and to_stdout:
        raise click.UsageError(
            "--json and --rttm - would both print to standard output; write the RTTM to a file (--rttm out.rttm) "
            "or drop --json"
        )
    check_raw_inputs(files, sample_rate)
    try:
        if rttm is not None and not to_stdout:
            check_output_file(rttm, what="--rttm file")  # before loading or decoding anything
        model_type = cli_model_type(SpeechTask.VOICE_ACTIVITY_DETECTION, model_type, source)
        model = AutoModelForVoiceActivityDetection.from_pretrained(source, model_type=model_type)
        options = resolve_cli_options(model, overrides, _FLAGS)  # refuse bad options before decoding anything
        model.load()  # a missing or foreign checkpoint is reported once, not per file
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    show_progress = progress if progress is not None else len(files) > 1
    from tqdm import tqdm

    outputs: list[VADOutput] = []
    failures: list[str] = []
    for path in tqdm(files, desc="vad", unit="file", disable=not show_progress, file=sys.stderr):
        try:
            output = model.detect(audio_input(path, sample_rate), options=options)
        except VoiceHubError as err:
            failures.append(str(err))
            continue
        outputs.append(output)
        if not as_json and not to_stdout:
            click.echo(_format_text(output))
    if as_json:
        click.echo(strict_json.dumps([_json_record(o) for o in outputs], indent=2))
    if failures:
        for message in failures:
            click.echo(f"Error: {message}", err=True)
        raise click.exceptions.Exit(1)
    if rttm is not None:
        text = "".join(output.to_rttm(file_id) for output, file_id in zip(outputs, rttm_file_ids(files), strict=True))
        if to_stdout:
            click.echo(text, nl=False)
        else:
            try:
                write_file_atomic(rttm, lambda tmp: tmp.write_text(text, encoding="utf-8"), what="--rttm file")
            except VoiceHubError as err:
                raise click.ClickException(str(err)) from err


__all__ = ["rttm_file_ids", "vad_command"]
