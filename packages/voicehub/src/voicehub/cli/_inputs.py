"""Audio inputs and model choice shared by the ``voicehub`` subcommands (``vad``, ``embed``, ``verify``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from voicehub.core.audio import RAW_PCM_SUFFIXES, AudioLike, is_raw_pcm, load_raw_pcm
from voicehub.core.errors import ConfigError, InferenceOptionError, VoiceHubError
from voicehub.core.tasks import SpeechTask

SAMPLE_RATE_HELP = (
    "Sample rate in Hz of headerless raw PCM files (" + ", ".join(RAW_PCM_SUFFIXES) + "), which are read as 16-bit "
    "little-endian mono; files with a header (wav, flac, ogg, mp3) carry their own rate and ignore it."
)


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


def cli_model_type(task: SpeechTask, model_type: str | None, source: str | None) -> str | None:
    """The ``--model`` to load: as given, else the task's default when ``--source`` names no saved directory.

    ``--help`` documents the task default; a ``--source`` weight file carries no model type, so the
    default applies to it (a directory written by ``save_pretrained`` names its own type).

    Args:
        task: the command's task.
        model_type: the ``--model`` given.
        source: the ``--source`` given.
    """
    if model_type is not None or source is None:
        return model_type
    from voicehub.auto import get_default_model_spec, local_config_file

    try:
        if local_config_file(source) is not None:
            return None
        return get_default_model_spec(task).model_type
    except VoiceHubError:
        return None


__all__ = [
    "SAMPLE_RATE_HELP",
    "audio_input",
    "check_raw_inputs",
    "cli_model_type",
    "default_model_help",
    "resolve_cli_options",
]
