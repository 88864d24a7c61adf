"""``voicehub embed``: the speaker embedding of each audio file, as text, strict JSON or a .npy matrix."""

from __future__ import annotations

from pathlib import Path

import click

from voicehub.cli._inputs import SAMPLE_RATE_HELP, check_raw_inputs
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
from voicehub.core.files import atomic_write, check_output_file
from voicehub.core.outputs import SpeakerOutput


@click.command("embed")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--model", "model_type", default=None, metavar="MODEL_TYPE", help=MODEL_HELP)
@click.option("--source", default=None, help=SOURCE_HELP)
@click.option(
    "--json", "as_json", is_flag=True, help="Print strict JSON (a list, one object per file, with the vector)."
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=(
        "Also write the embeddings as a float32 NumPy array (num_files, embedding_dim) to this .npy file; missing "
        "parent directories are created."
    ),
)
@click.option("--sample-rate", type=int, default=None, metavar="HZ", help=SAMPLE_RATE_HELP)
@click.option("--no-trim-silence", "no_trim", is_flag=True, help=NO_TRIM_HELP)
def embed_command(
    files: tuple[Path, ...],
    model_type: str | None,
    source: str | None,
    as_json: bool,
    output: Path | None,
    sample_rate: int | None,
    no_trim: bool,
) -> None:
    """Compute the speaker embedding of each FILE (wav, flac, ogg, mp3, or raw PCM with --sample-rate).

    A file that fails is reported and the others are still embedded; the exit status is then 1
    and the .npy file is not written.
    """
    check_raw_inputs(files, sample_rate)
    try:
        if output is not None:
            check_output_file(output, what="--output file")  # before loading or decoding anything
        model = load_model(model_type, source, None)
        overrides = trim_override(model, no_trim)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    outputs: list[SpeakerOutput] = []
    failures: list[str] = []
    for path in files:
        result, failure = embed_file(model, path, sample_rate, overrides)
        if result is None:
            failures.append(failure)
            continue
        outputs.append(result)
        if not as_json:
            speech = result.metadata.get("speech_duration_s")
            detail = f" ({speech:.2f} s of speech)" if isinstance(speech, (int, float)) else ""
            click.echo(f"{result.source}: {result.embedding_dim}-dim embedding, {result.duration_s:.2f} s{detail}")
            warning = result.metadata.get("warning")
            if isinstance(warning, str):
                click.echo(f"Warning: {result.source}: {warning}", err=True)
    if as_json:
        click.echo(strict_json.dumps([embedding_record(o) for o in outputs], indent=2))
    if failures:
        for message in failures:
            click.echo(f"Error: {message}", err=True)
        raise click.exceptions.Exit(1)
    if output is not None:
        import numpy as np

        matrix = np.stack([o.embedding for o in outputs]).astype(np.float32)

        def write(temporary: Path) -> None:
            with temporary.open("wb") as handle:  # a file object: np.save adds no ".npy" to the name
                np.save(handle, matrix)

        try:
            atomic_write(output, write, what="--output file")
        except VoiceHubError as err:
            raise click.ClickException(str(err)) from err


__all__ = ["embed_command"]
