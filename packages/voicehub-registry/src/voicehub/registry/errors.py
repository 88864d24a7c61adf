"""Errors of the registry layer.

Each error subclasses the matching :mod:`voicehub.core.errors` class (and through it a builtin),
so callers can catch ``KeyError``/``ValueError``/``FileNotFoundError`` as they would elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from voicehub.core.errors import CheckpointError, RegistryError


class DuplicateRegistrationError(RegistryError):
    """A name, alias or task default is already taken by another registration.

    Attributes:
        name: the name that collided.
        owner: the registered name that already holds it.
    """

    def __init__(self, message: str, *, name: str, owner: str):
        super().__init__(message)
        self.name = name
        self.owner = owner


class SpecError(RegistryError):
    """A ``ModelSpec`` or ``ArchitectureSpec`` field is invalid (bad reference, empty name...).

    Attributes:
        field: the offending field.
    """

    def __init__(self, message: str, *, field: str):
        super().__init__(message)
        self.field = field


class PluginError(RegistryError):
    """An entry-point plug-in or catalog reference could not be loaded or is not a spec.

    Attributes:
        reference: the ``module:attr`` reference or entry-point description at fault.
    """

    def __init__(self, message: str, *, reference: str):
        super().__init__(message)
        self.reference = reference


class UnsupportedByArchitectureError(RegistryError):
    """A device, dtype, task, feature or pass kind is not verified for an architecture.

    Attributes:
        architecture_id: the architecture asked.
        kind: ``"device"``, ``"dtype"``, ``"task"``, ``"feature"`` or ``"optimization pass"``.
        requested: the value asked for.
        verified: the values the architecture declares as verified.
    """

    def __init__(self, architecture_id: str, kind: str, requested: str, verified: Iterable[str]):
        self.architecture_id = architecture_id
        self.kind = kind
        self.requested = requested
        self.verified = tuple(verified)
        super().__init__(
            f"architecture {architecture_id!r} has no verified support for {kind} {requested!r}; "
            f"verified: {', '.join(self.verified) or '(none)'}"
        )


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """A checkpoint source does not resolve to an existing file or directory.

    Attributes:
        source: the source string (``dist:...``, ``hf:...`` or a path) that failed.
    """

    def __init__(self, message: str, *, source: str):
        super().__init__(message, path=source)
        self.source = source

    def __str__(self) -> str:  # FileNotFoundError would otherwise format errno fields
        return str(self.args[0])


class ChecksumMismatchError(CheckpointError):
    """A checkpoint file's SHA-256 digest differs from the expected one.

    Attributes:
        expected: the expected hexadecimal digest.
        actual: the digest of the file on disk.
    """

    def __init__(self, message: str, *, path: str, expected: str, actual: str):
        super().__init__(message, path=path)
        self.expected = expected
        self.actual = actual


__all__ = [
    "CheckpointNotFoundError",
    "ChecksumMismatchError",
    "DuplicateRegistrationError",
    "PluginError",
    "SpecError",
    "UnsupportedByArchitectureError",
]
