"""``voicehub embed`` and ``voicehub verify``: speaker embeddings and same-speaker decisions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from voicehub._cli_audio import SAMPLE_RATE_HELP, audio_input, check_raw_inputs, cli_model_type
from voicehub._output_paths import check_output_file, write_file_atomic
from voicehub.core import strict_json
from voicehub.core.errors import VoiceHubError
from voicehub.core.outputs import SpeakerOutput, VerificationOutput

_MODEL_HELP = (
    "A registered speaker-verification model type or alias (default: sv_ge2e); see `voicehub models --task sv`."
)
_SOURCE_HELP = (
    "Checkpoint source (file, directory, hf:owner/name); default: the model's own. A weight file is read as "
    "--model (default sv_ge2e)."
)


def _load(model_type: str | None, source: str | None, backend: Path | None) -> Any:
    from voicehub.auto import AutoModelForSpeakerVerification

    model_type = cli_model_type(AutoModelForSpeakerVerification, model_type, source)
    model = AutoModelForSpeakerVerification.from_pretrained(source, model_type=model_type)
    model.load()  # a missing checkpoint (or a model without pretrained weights) is reported once, up front
    if backend is not None:
        set_backend = getattr(model, "set_backend", None)
        if not callable(set_backend):
            raise click.ClickException(f"model {model.model_type!r} does not support a scoring back-end")
        set_backend(backend)
    return model


def _embedding_record(output: SpeakerOutput) -> dict[str, Any]:
    return {
        "source": output.source,
        "duration_s": output.duration_s,
        "embedding_dim": output.embedding_dim,
        "embedding": [float(v) for v in output.embedding],
        "metadata": dict(output.metadata),
    }


@click.command("embed")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--model", "model_type", default=None, metavar="MODEL_TYPE", help=_MODEL_HELP)
@click.option("--source", default=None, help=_SOURCE_HELP)
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
def embed_command(
    files: tuple[Path, ...],
    model_type: str | None,
    source: str | None,
    as_json: bool,
    output: Path | None,
    sample_rate: int | None,
) -> None:
    """Compute the speaker embedding of each FILE (wav, flac, ogg, mp3, or raw PCM with --sample-rate).

    Exits with status 1 if any file fails; the .npy file is then not written.
    """
    check_raw_inputs(files, sample_rate)
    try:
        if output is not None:
            check_output_file(output, what="--output file")  # before loading or decoding anything
        model = _load(model_type, source, None)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    outputs: list[SpeakerOutput] = []
    failures: list[str] = []
    for path in files:
        try:
            result = model.embed(audio_input(path, sample_rate))
        except VoiceHubError as err:
            failures.append(str(err))
            continue
        outputs.append(result)
        if not as_json:
            speech = result.metadata.get("speech_duration_s")
            detail = f" ({speech:.2f} s of speech)" if isinstance(speech, (int, float)) else ""
            click.echo(f"{result.source}: {result.embedding_dim}-dim embedding, {result.duration_s:.2f} s{detail}")
    if as_json:
        click.echo(strict_json.dumps([_embedding_record(o) for o in outputs], indent=2))
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
            write_file_atomic(output, write, what="--output file")
        except VoiceHubError as err:
            raise click.ClickException(str(err)) from err


@click.command("verify")
@click.argument("enrollment", type=click.Path(path_type=Path))
@click.argument("test", type=click.Path(path_type=Path))
@click.option("--model", "model_type", default=None, metavar="MODEL_TYPE", help=_MODEL_HELP)
@click.option("--source", default=None, help=_SOURCE_HELP)
@click.option(
    "--backend",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="Directory of a PLDA back-end (transform.h5, plda.h5, calibration.h5) to score with.",
)
@click.option(
    "--scoring",
    type=click.Choice(["auto", "cosine", "backend"]),
    default=None,
    help="auto (default): the back-end when given, else cosine.",
)
@click.option("--threshold", type=float, default=None, help="Cosine decision threshold in [-1, 1] (default 0.75).")
@click.option("--backend-threshold", type=float, default=None, help="LLR decision threshold (default 0).")
@click.option("--json", "as_json", is_flag=True, help="Print strict JSON.")
@click.option("--sample-rate", type=int, default=None, metavar="HZ", help=SAMPLE_RATE_HELP)
def verify_command(
    enrollment: Path,
    test: Path,
    model_type: str | None,
    source: str | None,
    backend: Path | None,
    scoring: str | None,
    threshold: float | None,
    backend_threshold: float | None,
    as_json: bool,
    sample_rate: int | None,
) -> None:
    """Decide whether ENROLLMENT and TEST (audio files) are the same speaker.

    Prints the decision, the score and the threshold; exits with status 1 on error.
    """
    overrides = {
        key: value
        for key, value in (("scoring", scoring), ("threshold", threshold), ("backend_threshold", backend_threshold))
        if value is not None
    }
    check_raw_inputs((enrollment, test), sample_rate)
    try:
        model = _load(model_type, source, backend)
        model.resolve_options(**overrides)
        result: VerificationOutput = model.verify(
            audio_input(enrollment, sample_rate), audio_input(test, sample_rate), **overrides
        )
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    if as_json:
        record = {
            "enrollment": str(enrollment),
            "test": str(test),
            "score": result.score,
            "threshold": result.threshold,
            "is_same_speaker": result.is_same_speaker,
            "scoring": result.scoring,
        }
        click.echo(strict_json.dumps(record, indent=2))
    else:
        verdict = "same speaker" if result.is_same_speaker else "different speakers"
        relation = ">=" if result.is_same_speaker else "<"
        click.echo(f"{verdict}: {result.scoring} score {result.score:.4f} {relation} threshold {result.threshold:g}")


__all__ = ["embed_command", "verify_command"]
