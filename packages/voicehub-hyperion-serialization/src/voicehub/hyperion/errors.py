"""Errors of the ``voicehub.hyperion`` layer.

Every error derives from a :mod:`voicehub.core.errors` class (and so from :class:`VoiceHubError`
and the matching builtin). Errors about a file carry its ``path`` and name it in the message.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from voicehub.core.errors import CheckpointError, RegistryError, UnknownModelError, VoiceHubError


class HyperionError(VoiceHubError):
    """Root of the errors raised by ``voicehub.hyperion``."""


class HyperionFileError(HyperionError, CheckpointError):
    """A Hyperion model or trial file is missing, truncated, corrupt or malformed.

    Attributes:
        path: the file at fault (``CheckpointError.path``).
    """

    def __init__(self, message: str, *, path: str | Path | None = None):
        CheckpointError.__init__(self, message, path=path)


class UnsafeFormatError(HyperionFileError):
    """A pickle file was given to a loader without the explicit ``allow_pickle=True`` opt-in."""


class UnknownHyperionClassError(HyperionError, UnknownModelError):
    """A serialized ``class_name`` is not a registered Hyperion model class.

    Attributes:
        name: the class name that was looked up.
        available: the registered class names, sorted.
        path: the file whose config named the class, when known.
    """

    def __init__(self, name: str, available: Iterable[str], *, path: str | Path | None = None):
        UnknownModelError.__init__(self, name, available, kind="Hyperion model class")
        self.path = str(path) if path is not None else None
        if path is not None:
            self.args = (f"{path}: {self.args[0]}",)


class HyperionRegistryError(HyperionError, RegistryError):
    """Two different classes claim the same Hyperion ``class_name`` (a registry collision)."""


class NotFittedError(HyperionError, RuntimeError):
    """A model was used for prediction or saving before it was fitted or loaded."""


class HyperionInputError(HyperionError, ValueError):
    """An array given to a Hyperion model has the wrong shape, dtype or values."""


__all__ = [
    "HyperionError",
    "HyperionFileError",
    "HyperionInputError",
    "HyperionRegistryError",
    "NotFittedError",
    "UnknownHyperionClassError",
    "UnsafeFormatError",
]
