"""The ``voicehub`` command."""

from __future__ import annotations

import click


@click.group()
@click.version_option("0.1.0", prog_name="voicehub")
def main() -> None:
    """VoiceHub: speech models (TTS, ASR, VAD, speaker verification) behind one API."""


__all__ = ["main"]
