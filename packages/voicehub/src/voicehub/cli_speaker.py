"""``voicehub embed`` and ``voicehub verify``: speaker embeddings and same-speaker decisions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from voicehub._cli_audio import SAMPLE_RATE_HELP, audio_input, check_raw_inputs, cli_model_type, default_model_help
from voicehub.core import strict_json
from voicehub.core.errors import VoiceHubError
from voicehub.core.files import atomic_write as write_file_atomic
from voicehub.core.files import check_output_file
from voicehub.core.outputs import SpeakerOutput, VerificationOutput
from voicehub.core.tasks import SpeechTask

_DEFAULT_MODEL = default_model_help(SpeechTask.SPEAKER_VERIFICATION)
_MODEL_HELP = (
    f"A registered speaker-verification model type or alias (default: {_DEFAULT_MODEL}); see "
    "`voicehub models --task sv`."
)
_SOURCE_HELP = (
    "Checkpoint source (file, directory, hf:owner/name); default: the model's own. A weight file is read as "
    f"--model (default: {_DEFAULT_MODEL})."
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


_NO_TRIM_HELP = (
    "Embed the audio as it is, without silence trimming (for clips in which the VAD finds no speech; models "
    "without the trim_silence option refuse it)."
)


def _trim_override(model: Any, no_trim: bool) -> dict[str, Any]:
    """``{"trim_silence": False}`` for --no-trim-silence, validated against the model's options."""
    if not no_trim:
        return {}
    if "trim_silence" not in model.options_class.known_keys():
        raise click.UsageError(f"--no-trim-silence: model {model.model_type!r} has no silence trimming to switch off")
    return {"trim_silence": False}


def _embed_file(model: Any, path: Path, sample_rate: int | None, overrides: dict[str, Any]) -> tuple[Any, str]:
    """Embed one file: ``(output, "")``, or ``(None, message)`` naming the file when it fails."""
    try:
        return model.embed(audio_input(path, sample_rate), **overrides), ""
    except VoiceHubError as err:
        message = str(err)
        return None, message if str(path) in message else f"{path}: {message}"
    except Exception as err:  # an unexpected failure: report it for this file and go on with the others
        return None, f"{path}: unexpected {type(err).__name__}: {err} (please report this as a bug)"


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
@click.option("--no-trim-silence", "no_trim", is_flag=True, help=_NO_TRIM_HELP)
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
        model = _load(model_type, source, None)
        overrides = _trim_override(model, no_trim)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    outputs: list[SpeakerOutput] = []
    failures: list[str] = []
    for path in files:
        result, failure = _embed_file(model, path, sample_rate, overrides)
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
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="[ENROLLMENT]... TEST")
@click.option(
    "--enroll",
    "enroll",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="An enrolment clip (repeat for several); then the only argument is TEST.",
)
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
@click.option(
    "--threshold",
    type=float,
    default=None,
    help=(
        "Cosine decision threshold in [-1, 1] (default: the model's own threshold option, printed with the "
        "decision); not with --backend unless --scoring cosine."
    ),
)
@click.option(
    "--backend-threshold", type=float, default=None, help="LLR decision threshold (default 0); needs --backend."
)
@click.option("--json", "as_json", is_flag=True, help="Print strict JSON.")
@click.option("--sample-rate", type=int, default=None, metavar="HZ", help=SAMPLE_RATE_HELP)
@click.option("--no-trim-silence", "no_trim", is_flag=True, help=_NO_TRIM_HELP)
def verify_command(
    files: tuple[Path, ...],
    enroll: tuple[Path, ...],
    model_type: str | None,
    source: str | None,
    backend: Path | None,
    scoring: str | None,
    threshold: float | None,
    backend_threshold: float | None,
    as_json: bool,
    sample_rate: int | None,
    no_trim: bool,
) -> None:
    """Decide whether TEST is spoken by the speaker of the ENROLLMENT clip(s) (audio files).

    `voicehub verify ENROLLMENT TEST` compares two files; with several enrolment clips
    (`voicehub verify E1 E2 E3 TEST`, or `--enroll E1 --enroll E2 TEST`) the speaker is enrolled
    with all of them (cosine: mean embedding; PLDA: mean in the back-end's space). Every file is
    checked, each bad one is reported, and the exit status is then 1 without a decision.
    """
    if enroll:
        if len(files) != 1:
            raise click.UsageError(
                f"with --enroll, give exactly one TEST file as argument, got {len(files)}: {' '.join(map(str, files))}"
            )
        enrollment, test = list(enroll), files[0]
    else:
        if len(files) < 2:
            raise click.UsageError("expected ENROLLMENT... TEST (at least two files), or --enroll FILE TEST")
        enrollment, test = list(files[:-1]), files[-1]
    _check_scoring_flags(backend, scoring, threshold, backend_threshold)
    overrides = {
        key: value
        for key, value in (("scoring", scoring), ("threshold", threshold), ("backend_threshold", backend_threshold))
        if value is not None
    }
    check_raw_inputs((*enrollment, test), sample_rate)
    try:
        model = _load(model_type, source, backend)
        overrides.update(_trim_override(model, no_trim))
        model.resolve_options(**overrides)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    embeddings, failures = [], []
    for path in (*enrollment, test):
        result, failure = _embed_file(model, path, sample_rate, overrides)
        if result is None:
            failures.append(failure)
        else:
            embeddings.append(result)
    if failures:
        for message in failures:
            click.echo(f"Error: {message}", err=True)
        click.echo(f"Error: {len(failures)} of {len(enrollment) + 1} file(s) failed; no decision made", err=True)
        raise click.exceptions.Exit(1)
    try:
        decision: VerificationOutput = model.score_embeddings(embeddings[:-1], embeddings[-1], **overrides)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    for output in embeddings:
        warning = output.metadata.get("warning")
        if isinstance(warning, str):
            click.echo(f"Warning: {output.source}: {warning}", err=True)
    if as_json:
        record = {
            "enrollment": str(enrollment[0]) if len(enrollment) == 1 else [str(p) for p in enrollment],
            "test": str(test),
            "score": decision.score,
            "threshold": decision.threshold,
            "is_same_speaker": decision.is_same_speaker,
            "scoring": decision.scoring,
        }
        click.echo(strict_json.dumps(record, indent=2))
    else:
        verdict = "same speaker" if decision.is_same_speaker else "different speakers"
        relation = ">=" if decision.is_same_speaker else "<"
        enrolled = f" (enrolled with {len(enrollment)} clips)" if len(enrollment) > 1 else ""
        click.echo(
            f"{verdict}: {decision.scoring} score {decision.score:.4f} {relation} threshold "
            f"{decision.threshold:g}{enrolled}"
        )


def _check_scoring_flags(
    backend: Path | None, scoring: str | None, threshold: float | None, backend_threshold: float | None
) -> None:
    """Refuse flag combinations whose threshold would be silently ignored.

    Raises:
        click.UsageError: naming the flags and what to use instead.
    """
    uses_backend = backend is not None and scoring != "cosine"
    if scoring == "backend" and backend is None:
        raise click.UsageError("--scoring backend needs a PLDA back-end: add --backend DIRECTORY")
    if threshold is not None and uses_backend:
        raise click.UsageError(
            "--threshold is the cosine threshold, but --backend scores log-likelihood ratios: use "
            "--backend-threshold LLR, or add --scoring cosine to score by cosine similarity"
        )
    if backend_threshold is not None and not uses_backend:
        raise click.UsageError(
            "--backend-threshold applies to PLDA back-end scores: add --backend DIRECTORY"
            + (" and drop --scoring cosine" if scoring == "cosine" else "")
            + ", or use --threshold for the cosine score"
        )


__all__ = ["embed_command", "verify_command"]
