"""``voicehub vad``: speech segments of audio files, as text, strict JSON or RTTM."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click

from voicehub.cli._inputs import (
    INPUTS_HELP,
    SAMPLE_RATE_HELP,
    audio_input,
    check_raw_inputs,
    cli_model_type,
    default_model_help,
    expand_audio_inputs,
    resolve_cli_options,
)
from voicehub.cli._options import CommonOptions, common_options, progress
from voicehub.cli._outputs import (
    check_destination,
    echo_json_line,
    input_ids,
    is_stdout,
    output_dir_paths,
    write_destination,
)
from voicehub.cli._vad_exports import check_plot_available, plot_timeline, speech_out_paths, write_speech_audio
from voicehub.core import strict_json
from voicehub.core.errors import VoiceHubError
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


rttm_file_ids = input_ids
"""One RTTM recording id per input file, unique across the inputs (:func:`voicehub.cli._outputs.input_ids`)."""


_DEFAULT_MODEL = default_model_help(SpeechTask.VOICE_ACTIVITY_DETECTION)
_OPTIONS = VADOptions()  # the segmentation defaults of the built-in VAD models
_FLAGS = {
    "threshold": "--threshold",
    "min_speech_duration_ms": "--min-speech-ms",
    "min_silence_duration_ms": "--min-silence-ms",
    "speech_pad_ms": "--speech-pad-ms",
    "max_speech_duration_s": "--max-speech-s",
}


_LOG = logging.getLogger(__name__)


@click.command("vad", epilog=INPUTS_HELP)
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
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
@click.option("--json", "as_json", is_flag=True, help="Print strict JSON (a list, one object per file) at the end.")
@click.option(
    "--jsonl",
    "as_jsonl",
    is_flag=True,
    help="Print one strict-JSON object per file as each finishes (JSON Lines, for long batches).",
)
@click.option(
    "--rttm",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=(
        "Also write the segments of every file as RTTM to this file ('-' for standard output, without --json or "
        "--jsonl); missing parent directories are created. Recording ids are the file stems, or relative paths when "
        "stems repeat."
    ),
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write one RTTM file per input into this directory, named by its recording id (<id>.rttm).",
)
@click.option(
    "--speech-out",
    type=click.Path(path_type=Path),
    default=None,
    help=(
        "Also write the speech of each input, its segments joined, at the file's own sample rate: with one input, "
        "to this file (format from the suffix: .wav, .flac, .ogg; '-' for WAV on standard output); with several, "
        "into this directory as <id>.wav."
    ),
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=(
        "Also draw the speech probability and the segments over time as a PNG (one input; needs matplotlib: "
        'pip install "voicehub[plot]").'
    ),
)
@click.option("--sample-rate", type=int, default=None, metavar="HZ", help=SAMPLE_RATE_HELP)
@common_options
def vad_command(
    inputs: tuple[str, ...],
    model_type: str | None,
    source: str | None,
    threshold: float | None,
    min_speech_ms: float | None,
    min_silence_ms: float | None,
    speech_pad_ms: float | None,
    max_speech_s: float | None,
    as_json: bool,
    as_jsonl: bool,
    rttm: Path | None,
    output_dir: Path | None,
    speech_out: Path | None,
    plot: Path | None,
    sample_rate: int | None,
    common: CommonOptions,
) -> None:
    """Detect speech in each INPUT (any sample rate) and print the segments.

    Exits with status 1 if any file fails; the --rttm, --speech-out and --plot files are then not
    written (--output-dir and --jsonl hold the files that succeeded).
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
    stdout_outputs = [name for name, flag in (("--json", as_json), ("--jsonl", as_jsonl)) if flag]
    stdout_outputs += [name for name, value in (("--rttm -", rttm), ("--speech-out -", speech_out)) if is_stdout(value)]
    if len(stdout_outputs) > 1:
        raise click.UsageError(
            f"{' and '.join(stdout_outputs)} would {'both' if len(stdout_outputs) == 2 else 'all'} print to standard "
            "output; write the RTTM or speech to a file (--rttm out.rttm, --speech-out speech.wav) or drop one"
        )
    files = expand_audio_inputs(inputs)
    if plot is not None and len(files) != 1:
        raise click.UsageError(f"--plot draws one file, got {len(files)} inputs; run once per file")
    check_raw_inputs(files, sample_rate)
    quiet_text = bool(stdout_outputs)  # the text report would mix into what goes to standard output
    try:
        check_destination(rttm, what="--rttm file")  # before loading or decoding anything
        check_destination(plot, what="--plot file")
        if plot is not None:
            check_plot_available()
            overrides["return_probabilities"] = True
        rttm_paths = output_dir_paths(output_dir, files, ".rttm") if output_dir is not None else None
        speech_paths = speech_out_paths(speech_out, files) if speech_out is not None else None
        model_type = cli_model_type(SpeechTask.VOICE_ACTIVITY_DETECTION, model_type, source)
        model = AutoModelForVoiceActivityDetection.from_pretrained(source, model_type=model_type, device=common.device)
        options = resolve_cli_options(model, overrides, _FLAGS)  # refuse bad options before decoding anything
        model.load()  # a missing or foreign checkpoint is reported once, not per file
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    ids = input_ids(files)
    outputs: list[VADOutput] = []
    succeeded: list[int] = []
    failures: list[str] = []
    for index, path in enumerate(progress(files, common, desc="vad")):
        try:
            output = model.detect(audio_input(path, sample_rate), options=options)
            if rttm_paths is not None:
                write_destination(rttm_paths[index], output.to_rttm(ids[index]), what="--output-dir file")
        except VoiceHubError as err:
            failures.append(str(err))
            continue
        _LOG.info("%s: %d segment(s), %.2f s of speech", path, len(output.segments), output.speech_duration_s)
        outputs.append(output)
        succeeded.append(index)
        if as_jsonl:
            echo_json_line(_json_record(output))
        elif not quiet_text:
            click.echo(_format_text(output))
    if as_json:
        click.echo(strict_json.dumps([_json_record(o) for o in outputs], indent=2))
    if failures:
        for message in failures:
            _LOG.error("%s", message)
        raise click.exceptions.Exit(1)
    try:
        if rttm is not None:
            text = "".join(output.to_rttm(ids[index]) for output, index in zip(outputs, succeeded, strict=True))
            write_destination(rttm, text, what="--rttm file")
        if speech_paths is not None:
            for path, output, target in zip(files, outputs, speech_paths, strict=True):
                write_speech_audio(audio_input(path, sample_rate), output, target)
        if plot is not None:
            plot_timeline(outputs[0], plot, threshold=options.threshold, audio=audio_input(files[0], sample_rate))
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err


__all__ = ["rttm_file_ids", "vad_command"]
