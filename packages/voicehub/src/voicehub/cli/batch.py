"""``voicehub batch vad|embed|transcribe``: a corpus job (:func:`voicehub.batch.map_corpus`) from the command line.

Each subcommand runs one task step over INPUT... on worker processes (``--engine local``) or Ray
(``--engine ray``), writes Parquet parts and ``_summary.json`` into ``--output`` and resumes a
killed job by default. A file that fails becomes a row with its error; the exit status is then 1.
An ``--address`` whose Ray cluster cannot be reached is a one-line error with exit status
:data:`EXIT_RAY_UNREACHABLE` (3), told apart from failed files (1) and usage errors (2).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from voicehub.cli._inputs import (
    _GLOB_CHARACTERS,
    INPUTS_HELP,
    cli_model_type,
    default_model_help,
    expand_audio_inputs,
)
from voicehub.cli._options import CommonOptions, common_options, verbosity_level
from voicehub.core.errors import VoiceHubError
from voicehub.errors import BatchEngineUnreachableError

if TYPE_CHECKING:
    from tqdm import tqdm

EXIT_RAY_UNREACHABLE = 3
"""The exit status when ``--engine ray --address`` names a cluster that cannot be reached."""


class _RayUnreachable(click.ClickException):
    """The one-line error for an unreachable ``--address``, with its own exit status."""

    exit_code = EXIT_RAY_UNREACHABLE


_LIST_HELP = (
    " A .txt/.lst/.list file is read as a list of paths (one a line) and a .jsonl file as a manifest "
    "(one object a line with 'path' or 'audio_filepath'); relative entries are relative to the file."
)


def _inputs(arguments: tuple[str, ...]) -> list[str]:
    """INPUT... as paths: path lists and manifests through :func:`voicehub.batch.expand_inputs`, the rest as usual.

    Raises:
        click.UsageError: for an INPUT that does not exist (a mistyped directory or list: a job
            of one error row is not what was meant), an unreadable or malformed path list or
            manifest (naming the file and line), and what :func:`expand_audio_inputs` refuses.
    """
    from voicehub.batch import expand_inputs
    from voicehub.batch._inputs import MANIFEST_SUFFIXES, PATH_LIST_SUFFIXES
    from voicehub.errors import BatchInputError

    for argument in arguments:
        if (
            argument.strip()
            and argument != "-"
            and not Path(argument).exists()
            and not _GLOB_CHARACTERS & set(argument)
        ):
            raise click.UsageError(
                f"INPUT {argument}: no such file or directory; name an existing audio file, directory, path list "
                f"(.txt, .lst, .list) or manifest (.jsonl)"
            )
    listed = MANIFEST_SUFFIXES + PATH_LIST_SUFFIXES
    paths: list[str] = []
    plain = [a for a in arguments if Path(a).suffix.lower() not in listed]
    for argument in arguments:
        if Path(argument).suffix.lower() in listed:
            try:
                paths.extend(expand_inputs(argument))
            except BatchInputError as err:
                raise click.UsageError(str(err)) from err
    if plain:
        paths.extend(str(path) for path in expand_audio_inputs(plain))
    return list(dict.fromkeys(paths))


def _output_directory(context: click.Context, parameter: click.Parameter, value: Path) -> Path:
    """``--output``: refused when it exists and is not a directory (a file, ``/dev/null``, a pipe)."""
    if value.exists() and not value.is_dir():
        raise click.BadParameter(
            f"{value} exists and is not a directory; --output is the directory the parts are written into",
            ctx=context,
            param=parameter,
        )
    return value


class _Progress:
    """A tqdm bar over the corpus's files, with the audio hours done as its postfix.

    :meth:`start` (``map_corpus``'s ``on_start``) opens it at the files an earlier run already
    wrote (``--resume``): the total stays the corpus, the bar and the hours start at what is done.
    """

    def __init__(self, enabled: bool, desc: str) -> None:
        self._enabled = enabled
        self._desc = desc
        self._bar: tqdm | None = None
        self._seconds = 0.0

    def start(self, total: int, done: int, seconds: float) -> None:
        from tqdm import tqdm

        self._seconds = seconds
        self._bar = tqdm(
            total=total, initial=done, desc=self._desc, unit="file", disable=not self._enabled, file=sys.stderr
        )
        self._bar.set_postfix_str(self._hours())

    def __call__(self, files: int, seconds: float) -> None:
        if self._bar is None:  # pragma: no cover - map_corpus calls on_start before any part
            raise RuntimeError("batch progress bar updated before it was started")
        self._seconds += seconds
        self._bar.set_postfix_str(self._hours(), refresh=False)
        self._bar.update(files)

    def _hours(self) -> str:
        return f"{self._seconds / 3600:.3f} h audio"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _make_command(step: str, task_help: str) -> click.Command:
    from voicehub.batch import STEP_TASKS

    task = STEP_TASKS[step]

    @click.command(step, epilog=INPUTS_HELP + _LIST_HELP)
    @click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
    @click.option(
        "--output",
        required=True,
        type=click.Path(file_okay=False, path_type=Path),
        callback=_output_directory,
        help="Directory for the Parquet parts (part-NNNNNN.parquet) and _summary.json.",
    )
    @click.option(
        "--model", "model_type", default=None, metavar="MODEL_TYPE", help=f"Default: {default_model_help(task)}."
    )
    @click.option("--source", default=None, help="Checkpoint of the model: a path, hf:owner/name or dist:...")
    @click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True)
    @click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="Worker processes or Ray actors (default: CPUs).",
    )
    @click.option("--cpus-per-worker", type=click.IntRange(min=1), default=1, show_default=True, metavar="N")
    @click.option(
        "--batch-size",
        type=click.IntRange(min=1),
        default=16,
        show_default=True,
        metavar="N",
        help="Files per batch and part.",
    )
    @click.option(
        "--resume/--no-resume",
        default=True,
        show_default=True,
        help="Skip the files --output already holds (--no-resume refuses an --output with parts).",
    )
    @click.option(
        "--retry-failed/--no-retry-failed",
        default=True,
        show_default=True,
        help="With --resume, run again the files whose row in --output holds an error; the new row supersedes it.",
    )
    @click.option(
        "--address",
        default=None,
        help="Ray cluster to join (auto: the one `ray start` runs; HOST:6379; ray://HOST:10001); --engine ray. "
        f"Unreachable: exit status {EXIT_RAY_UNREACHABLE}.",
    )
    @common_options
    def command(
        inputs: tuple[str, ...],
        output: Path,
        model_type: str | None,
        source: str | None,
        engine: str,
        workers: int | None,
        cpus_per_worker: int,
        batch_size: int,
        resume: bool,
        retry_failed: bool,
        address: str | None,
        common: CommonOptions,
    ) -> None:
        from voicehub.auto import AutoModel
        from voicehub.batch import Step, map_corpus

        paths = _inputs(inputs)
        try:
            kind = cli_model_type(task, model_type, source)
            if kind is None and source is None:
                from voicehub.auto import get_default_model_spec

                kind = get_default_model_spec(task).model_type
            model = AutoModel.from_pretrained(source, model_type=kind, device=common.device)
            bar = _Progress(common.show_progress(), desc=f"batch {step}")
            try:
                summary = map_corpus(
                    paths,
                    [Step(name=step, model=model)],
                    output=output,
                    engine=engine,  # type: ignore[arg-type]
                    workers=workers,
                    cpus_per_worker=cpus_per_worker,
                    batch_size=batch_size,
                    resume=resume,
                    retry_failed=retry_failed,
                    address=address,
                    ray_log_level=verbosity_level(common.verbosity),
                    progress=bar,
                    on_start=bar.start,
                )
            finally:
                bar.close()
        except BatchEngineUnreachableError as err:
            raise _RayUnreachable(str(err)) from err
        except VoiceHubError as err:
            raise click.ClickException(str(err)) from err
        click.echo(
            f"{summary.output}: {summary.files} files, {summary.audio_hours:.4f} h of audio, {summary.failures} "
            f"failed; this run: {summary.processed_files} files ({summary.skipped_files} already done, "
            f"{summary.retried_files} failed before and retried, {summary.changed_files} changed since and redone) in "
            f"{summary.wall_s:.1f} s, {summary.files_per_s:.2f} files/s, {summary.audio_hours_per_s * 3600:.1f} s of "
            f"audio per second"
        )
        if summary.failures:
            click.echo(f"{summary.failures} file(s) failed: see the 'error' column of the parts", err=True)
            raise click.exceptions.Exit(1)

    command.help = f"{task_help} of every INPUT, as a corpus job; results in --output as Parquet."
    return command


@click.group("batch")
def batch_group() -> None:
    """Corpus jobs: run one task over many files on worker processes or Ray (voicehub.batch)."""


batch_group.add_command(_make_command("vad", "Speech segments"))
batch_group.add_command(_make_command("embed", "The speaker embedding"))
batch_group.add_command(_make_command("transcribe", "The transcript"))


__all__ = ["EXIT_RAY_UNREACHABLE", "batch_group"]
