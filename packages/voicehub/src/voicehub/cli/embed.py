"""``voicehub embed``: the speaker embedding of each audio file, as text, strict JSON (or JSON lines) or .npy."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import click

from voicehub.cli._inputs import INPUTS_HELP, SAMPLE_RATE_HELP, check_raw_inputs, expand_audio_inputs
from voicehub.cli._options import CommonOptions, common_options, progress
from voicehub.cli._outputs import check_destination, echo_json_line, is_stdout, output_dir_paths, write_destination
from voicehub.cli._speaker import (
    MODEL_HELP,
    NO_TRIM_HELP,
    SOURCE_HELP,
    embed_file,
    embedding_record,
    load_model,
    trim_override,
)
from voicehub.core import strict_json
from voicehub.core.errors import VoiceHubError
from voicehub.core.outputs import SpeakerOutput

_LOG = logging.getLogger(__name__)


def _npy_bytes(vectors: list[SpeakerOutput]) -> bytes:
    """The embeddings as the bytes of a float32 ``.npy`` array (num_files, embedding_dim)."""
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.stack([o.embedding for o in vectors]).astype(np.float32))
    return buffer.getvalue()


@click.command("embed", epilog=INPUTS_HELP)
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("--model", "model_type", default=None, metavar="MODEL_TYPE", help=MODEL_HELP)
@click.option("--source", default=None, help=SOURCE_HELP)
@click.option(
    "--json", "as_json", is_flag=True, help="Print strict JSON (a list, one object per file, with the vector)."
)
@click.option(
    "--jsonl",
    "as_jsonl",
    is_flag=True,
    help="Print one strict-JSON object per file (with the vector) as each finishes (JSON Lines, for long batches).",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=(
        "Also write the embeddings as a float32 NumPy array (num_files, embedding_dim) to this .npy file ('-' for "
        "standard output, without --json or --jsonl); missing parent directories are created."
    ),
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write each file's embedding as a float32 (embedding_dim,) .npy into this directory, as <id>.npy.",
)
@click.option("--sample-rate", type=int, default=None, metavar="HZ", help=SAMPLE_RATE_HELP)
@click.option("--no-trim-silence", "no_trim", is_flag=True, help=NO_TRIM_HELP)
@common_options
def embed_command(
    inputs: tuple[str, ...],
    model_type: str | None,
    source: str | None,
    as_json: bool,
    as_jsonl: bool,
    output: Path | None,
    output_dir: Path | None,
    sample_rate: int | None,
    no_trim: bool,
    common: CommonOptions,
) -> None:
    """Compute the speaker embedding of each INPUT (raw PCM needs --sample-rate).

    A file that fails is reported and the others are still embedded; the exit status is then 1
    and the --output file is not written (--output-dir and --jsonl hold the files that succeeded).
    """
    stdout_outputs = [name for name, flag in (("--json", as_json), ("--jsonl", as_jsonl)) if flag]
    stdout_outputs += ["--output -"] if is_stdout(output) else []
    if len(stdout_outputs) > 1:
        raise click.UsageError(
            f"{' and '.join(stdout_outputs)} would both print to standard output; write the array to a file "
            "(--output embeddings.npy) or drop one"
        )
    special = output is not None and output.exists() and not output.is_file() and not output.is_dir()
    if output is not None and not is_stdout(output) and not special and output.suffix.lower() != ".npy":
        raise click.UsageError(
            f"--output {output}: the embeddings are written as a NumPy array, so the file must end in .npy "
            f"(e.g. --output {output.with_suffix('.npy')}); for text, use --json or --jsonl"
        )
    files = expand_audio_inputs(inputs)
    check_raw_inputs(files, sample_rate)
    try:
        check_destination(output, what="--output file")  # before loading or decoding anything
        vector_paths = output_dir_paths(output_dir, files, ".npy") if output_dir is not None else None
        model = load_model(model_type, source, None, device=common.device)
        overrides = trim_override(model, no_trim)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    outputs: list[SpeakerOutput] = []
    failures: list[str] = []
    for index, path in enumerate(progress(files, common, desc="embed")):
        result, failure = embed_file(model, path, sample_rate, overrides)
        if result is not None and vector_paths is not None:
            try:
                write_destination(vector_paths[index], _vector_bytes(result), what="--output-dir file")
            except VoiceHubError as err:
                result, failure = None, str(err)
        if result is None:
            failures.append(failure)
            continue
        outputs.append(result)
        warning = result.metadata.get("warning")
        if isinstance(warning, str):
            _LOG.warning("%s: %s", result.source, warning)
        if as_jsonl:
            echo_json_line(embedding_record(result))
        elif not stdout_outputs:
            speech = result.metadata.get("speech_duration_s")
            detail = f" ({speech:.2f} s of speech)" if isinstance(speech, (int, float)) else ""
            click.echo(f"{result.source}: {result.embedding_dim}-dim embedding, {result.duration_s:.2f} s{detail}")
    if as_json:
        click.echo(strict_json.dumps([embedding_record(o) for o in outputs], indent=2))
    if failures:
        for message in failures:
            _LOG.error("%s", message)
        raise click.exceptions.Exit(1)
    if output is not None:
        try:
            write_destination(output, _npy_bytes(outputs), what="--output file")
        except VoiceHubError as err:
            raise click.ClickException(str(err)) from err


def _vector_bytes(result: SpeakerOutput) -> bytes:
    """One embedding as the bytes of a float32 ``.npy`` vector (embedding_dim,)."""
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.asarray(result.embedding, dtype=np.float32))
    return buffer.getvalue()


__all__ = ["embed_command"]
