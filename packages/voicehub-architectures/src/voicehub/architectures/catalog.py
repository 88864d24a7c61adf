"""The built-in architecture declarations, as lazy ``"module:attr"`` references to ``ArchitectureSpec`` objects.

Declarative only: listing an entry here imports nothing; the registry resolves each reference
(a ``registration.py`` module, which imports no torch) on first read.
"""

from __future__ import annotations

BUILTIN_ARCHITECTURES: tuple[str, ...] = (
    "voicehub.architectures.silero.registration:ARCHITECTURE",
    "voicehub.architectures.ge2e.registration:ARCHITECTURE",
    "voicehub.architectures.xvector.registration:ARCHITECTURE",
    "voicehub.architectures.whisper.registration:ARCHITECTURE",
    "voicehub.architectures.vits.registration:ARCHITECTURE",
    "voicehub.architectures.moonshine.registration:ARCHITECTURE",
)
"""One reference per architecture family."""

__all__ = ["BUILTIN_ARCHITECTURES"]
