"""Audio inputs and model choice shared by the ``voicehub`` subcommands (``vad``, ``embed``, ``verify``...).

:func:`expand_audio_inputs` turns the command line's INPUT... into files, as speech command lines
do: files as given, a directory searched recursively for audio files (by suffix,
:data:`voicehub.core.audio.AUDIO_FILE_SUFFIXES`), a glob (``'clips/*.flac'``, ``'**'`` recursive)
for shells that did not expand it, and ``-`` for a list of paths on standard input, one a line.
Take the arguments as ``click.argument("inputs", nargs=-1, required=True)`` (plain strings) and
use :data:`INPUTS_HELP` in the command's help.
"""

from __future__ import annotations

import glob
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import click

from voicehub.core.audio import AUDIO_FILE_SUFFIXES, RAW_PCM_SUFFIXES, AudioLike, is_raw_pcm, load_raw_pcm
from voicehub.core.errors import ConfigError, InferenceOptionError, VoiceHubError
from voicehub.core.tasks import SpeechTask

SAMPLE_RATE_HELP = (
    "Sample rate in Hz of headerless raw PCM files (" + ", ".join(RAW_PCM_SUFFIXES) + "), which are read as 16-bit "
    "little-endian mono; files with a header (wav, flac, ogg, mp3) carry their own rate and ignore it."
)


INPUTS_HELP = (
    "INPUT is an audio file (wav, flac, ogg, mp3; m4a, mp4, webm with voicehub[av]), a directory (searched "
    "recursively for audio files), a quoted glob ('clips/*.wav'), or - to read a list of paths from standard input."
)

_GLOB_CHARACTERS = frozenset("*?[")


def _audio_files_under(directory: Path) -> list[Path]:
    return sorted(
        path for path in directory.rglob("*") if path.suffix.lower() in AUDIO_FILE_SUFFIXES and path.is_file()
    )


def expand_audio_inputs(inputs: Sequence[str], *, stdin: TextIO | None = None) -> list[Path]:
    """The audio files that the command line's INPUT arguments name, in order, each once.

    Args:
        inputs: the arguments: files (kept as given, whatever their suffix, so a bad file is
            reported by the decoder), directories (every audio file below them, sorted), globs
            (matches sorted; ``**`` recurses; a directory match is searched like a directory),
            and ``-`` (paths read from ``stdin``, one a line; blank lines skipped; each line is
            a file, directory or glob in turn, but not ``-`` again).
        stdin: where ``-`` reads from; default ``sys.stdin``.

    Returns:
        The files; a file named twice (e.g. by a glob and by name) comes once, at its first place.

    Raises:
        click.UsageError: for a glob that matches nothing, a directory without audio files, no
            inputs at all (e.g. empty standard input), ``-`` given twice or inside the list.
    """
    files: list[Path] = []
    seen: set[Path] = set()

    def add(path: Path) -> None:
        key = path.resolve() if path.exists() else path
        if key not in seen:
            seen.add(key)
            files.append(path)

    def expand(argument: str, *, from_stdin: bool) -> None:
        if not argument.strip():  # Path("") is the current directory: never search it by accident
            raise click.UsageError(
                'an INPUT argument is empty (an unset shell variable, e.g. "$FILE"?); name a file, a directory '
                "(. for the current one) or a glob"
            )
        path = Path(argument)
        if path.is_dir():
            found = _audio_files_under(path)
            if not found:
                raise click.UsageError(
                    f"directory {argument} holds no audio files (searched recursively for "
                    f"{', '.join(AUDIO_FILE_SUFFIXES)}); name files directly to use other suffixes"
                )
            for item in found:
                add(item)
        elif not path.exists() and _GLOB_CHARACTERS & set(argument):
            matches = sorted(glob.glob(argument, recursive=True))
            if not matches:
                raise click.UsageError(f"the pattern {argument!r} matches no file")
            for match in matches:
                match_path = Path(match)
                if match_path.is_dir():
                    for item in _audio_files_under(match_path):
                        add(item)
                else:
                    add(match_path)
        elif argument == "-" and from_stdin:
            raise click.UsageError("a path list read from standard input cannot itself contain '-'")
        else:
            add(path)  # a missing or unreadable file is reported, named, by the decoder

    stdin_used = False
    for argument in inputs:
        if argument == "-":
            if stdin_used:
                raise click.UsageError("'-' (paths from standard input) can be given only once")
            stdin_used = True
            for line in (stdin or sys.stdin).read().splitlines():
                if line.strip():
                    expand(line.strip(), from_stdin=True)
        else:
            expand(argument, from_stdin=False)
    if not files:
        raise click.UsageError("no input files: " + ("standard input listed no paths" if stdin_used else "none given"))
    return files


def default_model_help(task: SpeechTask) -> str:
    """The task's default model type for help texts, read from the catalog (declarations only, no torch)."""
    from voicehub.auto import get_default_model_spec

    try:
        return get_default_model_spec(task).model_type
    except VoiceHubError:  # no default registered (or a catalog problem, reported when a command runs)
        return "the task's default model"


def check_raw_inputs(files: Sequence[Path], sample_rate: int | None) -> None:
    """Refuse headerless files when no ``--sample-rate`` is given, and a non-positive rate.

    Raises:
        click.UsageError: naming the file and the two ways out.
    """
    if sample_rate is not None and sample_rate <= 0:
        raise click.UsageError(f"--sample-rate must be a positive number of Hz, got {sample_rate}")
    if sample_rate is None:
        for path in files:
            if is_raw_pcm(path):
                raise click.UsageError(
                    f"{path} is headerless raw PCM, so its sample rate is unknown: pass --sample-rate HZ (it is "
                    f"read as 16-bit little-endian mono), or convert it first, e.g. "
                    f"`ffmpeg -f s16le -ar 16000 -ac 1 -i {path} {path.with_suffix('.wav')}`"
                )


def audio_input(path: Path, sample_rate: int | None) -> AudioLike:
    """What to pass to a wrapper for ``path``: the path, or the decoded raw PCM (named by the path).

    Raises:
        AudioDecodeError: for a raw file that cannot be read or has an odd number of bytes.
    """
    if not is_raw_pcm(path) or sample_rate is None:
        return str(path)
    return load_raw_pcm(path, sample_rate=sample_rate)


def resolve_cli_options(model: Any, overrides: Mapping[str, object], flags: Mapping[str, str]) -> Any:
    """The model's options with the command-line overrides, or a usage error naming the ``--flag``.

    A wrapper names its own method in option errors (``GE2ESpeakerVerifier.embed(): threshold
    ...``); on the command line the user typed a flag, so the message names the flag instead.

    Args:
        model: the loaded wrapper.
        overrides: option name -> value, from the flags.
        flags: option name -> the flag that sets it (``{"min_speech_duration_ms": "--min-speech-ms"}``).

    Raises:
        click.UsageError: naming the flag, the value given and what is allowed.
    """
    try:
        return model.resolve_options(**overrides)
    except VoiceHubError as err:
        if not isinstance(err, (InferenceOptionError, ConfigError, TypeError)):
            raise
        for key, value in overrides.items():
            try:
                model.resolve_options(**{key: value})
            except VoiceHubError as single:
                reason = str(single).split("(): ", 1)[-1]
                flag = flags.get(key, "--" + key.replace("_", "-"))
                raise click.UsageError(f"{flag} {value}: {reason}") from err
        raise click.UsageError(str(err).split("(): ", 1)[-1]) from err


TASK_COMMANDS: Mapping[SpeechTask, str] = {
    SpeechTask.VOICE_ACTIVITY_DETECTION: "voicehub vad",
    SpeechTask.SPEAKER_VERIFICATION: "voicehub embed",
    SpeechTask.AUTOMATIC_SPEECH_RECOGNITION: "voicehub transcribe",
    SpeechTask.TEXT_TO_SPEECH: "voicehub synthesize",
}
"""The command that serves each task, named when ``--model`` belongs to another task."""


def _check_model_task(task: SpeechTask, model_type: str) -> None:
    """Refuse a ``--model`` registered for another task, or a path given where a name belongs.

    Raises:
        click.UsageError: naming the command for the model's task (or ``--source`` for a path) and
            this task's models.
    """
    from voicehub.auto import get_model_spec, list_model_specs

    names = ", ".join(spec.model_type for spec in list_model_specs(task))
    try:
        spec = get_model_spec(model_type)
    except KeyError:
        if "/" in model_type or "\\" in model_type or Path(model_type).exists():
            raise click.UsageError(
                f"--model takes a registered model name ({names}), got the path {model_type!r}; to load a "
                f"checkpoint file or a saved directory, pass it as --source {model_type}"
            ) from None
        from voicehub.registry import MODEL_CATALOG

        known = MODEL_CATALOG.find_known_checkpoint(model_type)
        if known is not None:
            spec, where = known
            siblings = [s for s in list_model_specs(task) if s.architecture == spec.architecture]
            shipped = "; ".join(f"{s.model_type} ({', '.join((*s.aliases, *s.shipped_checkpoints))})" for s in siblings)
            raise click.UsageError(
                f"--model {model_type}: this checkpoint's weights are not shipped with VoiceHub (shipped: {shipped}); "
                f"{spec.model_type} loads it from a local copy: download it from {where} (e.g. `hf download "
                f"{where.removeprefix('hf:')} --local-dir DIR`) and run with --model {spec.model_type} --source DIR"
            ) from None
        raise click.UsageError(
            f"--model {model_type}: no such model; this command runs {task.value} models ({names}); "
            "`voicehub models` lists every registered model"
        ) from None
    if spec.task != task:
        other = SpeechTask(spec.task)
        raise click.UsageError(
            f"--model {model_type} is a {other.value} model, and this command runs {task.value} models "
            f"({names}); for {other.value}, run `{TASK_COMMANDS[other]} --model {model_type}`"
        )


def cli_model_type(task: SpeechTask, model_type: str | None, source: str | None) -> str | None:
    """The ``--model`` to load: as given, else the task's default when ``--source`` names no saved directory.

    ``--help`` documents the task default; a ``--source`` weight file carries no model type, so the
    default applies to it (a directory written by ``save_pretrained`` names its own type).

    Args:
        task: the command's task.
        model_type: the ``--model`` given.
        source: the ``--source`` given.
    """
    if model_type is not None:
        _check_model_task(task, model_type)
        return model_type
    if source is None:
        return None
    from voicehub.auto import get_default_model_spec, local_config_file

    try:
        if local_config_file(source) is not None:
            return None
        return get_default_model_spec(task).model_type
    except VoiceHubError:
        return None


__all__ = [
    "INPUTS_HELP",
    "SAMPLE_RATE_HELP",
    "audio_input",
    "check_raw_inputs",
    "cli_model_type",
    "default_model_help",
    "expand_audio_inputs",
    "resolve_cli_options",
]
