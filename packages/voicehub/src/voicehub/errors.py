"""Errors of the meta-package (factories, task wrappers, pipelines)."""

from __future__ import annotations

from collections.abc import Iterable

from voicehub.core.errors import InferenceOptionError


class UnknownInferenceOptionError(InferenceOptionError, TypeError):
    """An inference call got an option its wrapper does not define.

    It is a ``TypeError`` like any unexpected keyword argument, and an ``InferenceOptionError``.

    Attributes:
        unknown: the unrecognised option names, sorted.
        known: every option the wrapper accepts, sorted.
    """

    def __init__(self, producer: str, unknown: Iterable[str], known: Iterable[str]):
        self.unknown = tuple(sorted(unknown))
        self.known = tuple(sorted(known))
        super().__init__(
            f"{producer}() got unknown option(s) {list(self.unknown)}; valid options are {list(self.known)}"
        )


__all__ = ["UnknownInferenceOptionError"]
