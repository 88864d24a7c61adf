"""The ``voicehub`` command: one module per subcommand.

* :mod:`voicehub.cli.models`: ``voicehub models`` (the registered models; imports none of them);
* :mod:`voicehub.cli.vad`: ``voicehub vad`` (speech segments as text, strict JSON or RTTM);
* :mod:`voicehub.cli.embed`: ``voicehub embed`` (speaker embeddings);
* :mod:`voicehub.cli.verify`: ``voicehub verify`` (same-speaker decisions);
* :mod:`voicehub.cli.transcribe`: ``voicehub transcribe`` (speech to text: txt, json, srt, vtt, tsv);
* :mod:`voicehub.cli.synthesize`: ``voicehub synthesize`` (text to speech: a file, one file per line, raw PCM);
* :mod:`voicehub.cli.evaluate`: ``voicehub evaluate asr MANIFEST`` (WER with jiwer, real-time factor);
* :mod:`voicehub.cli.train`: ``voicehub train CONFIG`` (training from a run config file);
* :mod:`voicehub.cli.batch`: ``voicehub batch vad|embed|transcribe`` (corpus jobs into Parquet, local or Ray).

A new command is a module here with one ``click`` command, added to :data:`main` below with one
``main.add_command(...)`` line. ``python -m voicehub`` runs the same group.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

import click

from voicehub.cli.batch import batch_group
from voicehub.cli.embed import embed_command
from voicehub.cli.evaluate import evaluate_group
from voicehub.cli.models import models_command, weights_install_command, weights_status
from voicehub.cli.synthesize import synthesize_command
from voicehub.cli.train import train_command
from voicehub.cli.transcribe import transcribe_command
from voicehub.cli.vad import vad_command
from voicehub.cli.verify import verify_command
from voicehub.core.version import distribution_version

_WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG})
"""Errors of a write that failed for want of room or a broken device (a closed pipe, EPIPE, is click's)."""


class _VoiceHubGroup(click.Group):
    """The command group: a failed write to standard output is one clear error, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # buffered output fails here, not later at interpreter exit
            return result
        except OSError as err:
            if err.errno not in _WRITE_FAILURES:
                raise
            where = "standard output" if err.filename is None else str(err.filename)
            try:
                sys.stdout.flush()
            except OSError:  # standard output itself is what fails: nothing more can go there
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                where = "standard output"
            raise click.ClickException(
                f"could not write to {where}: {err.strerror}; free space on its device or write elsewhere "
                "(-o / --output-dir)"
            ) from err


@click.group(cls=_VoiceHubGroup)
@click.version_option(distribution_version("voicehub"), prog_name="voicehub")
def main() -> None:
    """VoiceHub: speech models (TTS, ASR, VAD, speaker verification) behind one API."""
    # The command leaves the OpenMP runtime's settings to the environment, so that a command and the
    # Python API with the same arguments run the same code and give the same output.
    _exit_cleanly_on_sigterm()


def _raise_system_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _exit_cleanly_on_sigterm() -> None:
    """Turn SIGTERM (``kill``, a job scheduler, ``timeout``) into ``SystemExit(143)``.

    Python's default for SIGTERM ends the process at once, so no ``finally`` runs and a write in
    progress leaves its staging file (``.NAME.*.partial``) behind. As an exception, every command's
    cleanup runs: staging files are removed and the destination keeps its previous content. Only the
    default disposition is replaced (a handler the embedding program set stays), and only in the
    main thread (the only one where Python allows it).
    """
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_system_exit)


main.add_command(models_command)
main.add_command(vad_command)
main.add_command(embed_command)
main.add_command(verify_command)
main.add_command(transcribe_command)
main.add_command(synthesize_command)
main.add_command(evaluate_group)
main.add_command(train_command)
main.add_command(batch_group)

__all__ = ["main", "models_command", "weights_install_command", "weights_status"]
