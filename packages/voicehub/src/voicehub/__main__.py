"""``python -m voicehub``: the ``voicehub`` command (:mod:`voicehub.cli`)."""

from __future__ import annotations

from voicehub.cli import main

if __name__ == "__main__":
    main(prog_name="voicehub")
