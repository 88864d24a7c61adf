"""Errors of the architectures layer.

Each error subclasses the matching :mod:`voicehub.core.errors` class (and through it a builtin),
so callers can catch ``ValueError`` as they would elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from voicehub.core.errors import CheckpointError


class CheckpointMismatchError(CheckpointError):
    """A checkpoint's tensors do not fit the native graph; nothing was loaded.

    Raised by the strict checkpoint adapters *before* the model is touched, with every problem
    listed at once.

    Attributes:
        missing: native parameter names the checkpoint provides no tensor for, sorted.
        unexpected: checkpoint tensor names no rule consumes, sorted.
        mismatched: ``(native name, expected shape, checkpoint shape)`` triples, sorted by name.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        missing: Iterable[str] = (),
        unexpected: Iterable[str] = (),
        mismatched: Iterable[tuple[str, tuple[int, ...], tuple[int, ...]]] = (),
    ):
        super().__init__(message, path=path)
        self.missing = tuple(sorted(missing))
        self.unexpected = tuple(sorted(unexpected))
        self.mismatched = tuple(sorted(mismatched))


__all__ = ["CheckpointMismatchError"]
