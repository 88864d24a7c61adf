"""The ``voicehub`` command: one module per subcommand.

* :mod:`voicehub.cli.models`: ``voicehub models`` (the registered models; imports none of them);
* :mod:`voicehub.cli.vad`: ``voicehub vad`` (speech segments as text, strict JSON or RTTM);
* :mod:`voicehub.cli.embed`: ``voicehub embed`` (speaker embeddings);
* :mod:`voicehub.cli.verify`: ``voicehub verify`` (same-speaker decisions);
* :mod:`voicehub.cli.transcribe`: ``voicehub transcribe`` (speech to text: txt, json, srt, vtt, tsv);
* :mod:`voicehub.cli.batch`: ``voicehub batch vad|embed|transcribe`` (corpus jobs into Parquet, local or Ray);
* :mod:`voicehub.cli.evaluate`: ``voicehub evaluate asr MANIFEST`` (WER with jiwer, real-time factor).

A new command is a module here with one ``click`` command, added to :data:`main` below with one
``main.add_command(...)`` line. ``python -m voicehub`` runs the same group.
"""

from __future__ import annotations

import click

from voicehub.cli.batch import batch_group
from voicehub.cli.embed import embed_command
from voicehub.cli.evaluate import evaluate_group
from voicehub.cli.models import models_command, weights_install_command, weights_status
from voicehub.cli.transcribe import transcribe_command
from voicehub.cli.vad import vad_command
from voicehub.cli.verify import verify_command
from voicehub.core.version import distribution_version


@click.group()
@click.version_option(distribution_version("voicehub"), prog_name="voicehub")
def main() -> None:
    """VoiceHub: speech models (TTS, ASR, VAD, speaker verification) behind one API."""


main.add_command(models_command)
main.add_command(vad_command)
main.add_command(embed_command)
main.add_command(verify_command)
main.add_command(transcribe_command)
main.add_command(evaluate_group)
main.add_command(batch_group)

__all__ = ["main", "models_command", "weights_install_command", "weights_status"]
