"""``voicehub verify``: whether a test clip is spoken by the speaker of one or more enrolment clips."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from voicehub.cli._inputs import SAMPLE_RATE_HELP, check_raw_inputs, expand_audio_inputs, resolve_cli_options
from voicehub.cli._options import CommonOptions, common_options, progress
from voicehub.cli._speaker import MODEL_HELP, NO_TRIM_HELP, SOURCE_HELP, embed_file, load_model, trim_override
from voicehub.core import strict_json
from voicehub.core.errors import VoiceHubError
from voicehub.core.outputs import VerificationOutput

_FLAGS = {"scoring": "--scoring", "threshold": "--threshold", "backend_threshold": "--backend-threshold"}
_LOG = logging.getLogger(__name__)


@click.command("verify")
@click.argument("arguments", nargs=-1, required=True, metavar="[ENROLLMENT]... TEST")
@click.option(
    "--enroll",
    "enroll",
    multiple=True,
    metavar="INPUT",
    help=(
        "Enrolment audio (repeat for several): a file, a directory (searched recursively), a quoted glob, or - for "
        "a list of paths on standard input; then the only argument is TEST."
    ),
)
@click.option("--model", "model_type", default=None, metavar="MODEL_TYPE", help=MODEL_HELP)
@click.option("--source", default=None, help=SOURCE_HELP)
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
@click.option("--no-trim-silence", "no_trim", is_flag=True, help=NO_TRIM_HELP)
@common_options
def verify_command(
    arguments: tuple[str, ...],
    enroll: tuple[str, ...],
    model_type: str | None,
    source: str | None,
    backend: Path | None,
    scoring: str | None,
    threshold: float | None,
    backend_threshold: float | None,
    as_json: bool,
    sample_rate: int | None,
    no_trim: bool,
    common: CommonOptions,
) -> None:
    """Decide whether TEST is spoken by the speaker of the ENROLLMENT clip(s) (audio files).

    `voicehub verify ENROLLMENT TEST` compares two files; with several enrolment clips
    (`voicehub verify E1 E2 E3 TEST`, or `--enroll E1 --enroll E2 TEST`) the speaker is enrolled
    with all of them (cosine: mean embedding; PLDA: mean in the back-end's space). An ENROLLMENT
    may also be a directory (searched recursively for audio files), a quoted glob, or - for a list
    of paths on standard input; TEST is one file. Every file is checked, each bad one is reported,
    and the exit status is then 1 without a decision.
    """
    if enroll:
        if len(arguments) != 1:
            raise click.UsageError(
                f"with --enroll, give exactly one TEST file as argument, got {len(arguments)}: {' '.join(arguments)}"
            )
        enrollment, test = expand_audio_inputs(enroll), Path(arguments[0])
    else:
        if len(arguments) < 2:
            raise click.UsageError("expected ENROLLMENT... TEST (at least two files), or --enroll FILE TEST")
        enrollment, test = expand_audio_inputs(arguments[:-1]), Path(arguments[-1])
    _check_scoring_flags(backend, scoring, threshold, backend_threshold)
    overrides: dict[str, object] = {
        key: value
        for key, value in (("scoring", scoring), ("threshold", threshold), ("backend_threshold", backend_threshold))
        if value is not None
    }
    check_raw_inputs((*enrollment, test), sample_rate)
    try:
        model = load_model(model_type, source, backend, device=common.device)
        overrides.update(trim_override(model, no_trim))
        resolve_cli_options(model, overrides, _FLAGS)  # a bad option names its --flag, before decoding
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    embeddings, failures = [], []
    for path in progress((*enrollment, test), common, desc="verify"):
        result, failure = embed_file(model, path, sample_rate, overrides)
        if result is None:
            failures.append(failure)
        else:
            embeddings.append(result)
    if failures:
        for message in failures:
            _LOG.error("%s", message)
        _LOG.error("%d of %d file(s) failed; no decision made", len(failures), len(enrollment) + 1)
        raise click.exceptions.Exit(1)
    try:
        decision: VerificationOutput = model.score_embeddings(embeddings[:-1], embeddings[-1], **overrides)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    for output in embeddings:
        warning = output.metadata.get("warning")
        if isinstance(warning, str):
            _LOG.warning("%s: %s", output.source, warning)
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


__all__ = ["verify_command"]
