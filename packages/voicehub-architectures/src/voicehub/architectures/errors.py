"""Errors of the architectures layer.

Each error subclasses the matching :mod:`voicehub.core.errors` class (and through it a builtin),
so callers can catch ``ValueError`` as they would elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from voicehub.core.errors import AudioError, CheckpointError, InferenceOptionError


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


class CheckpointCorruptError(CheckpointError):
    """A checkpoint file is truncated or its bytes do not follow its format; nothing was loaded.

    Attributes:
        offset: byte offset in the file (or in the concatenation of its parts) where reading failed.
        tensor: name of the tensor being read there, when the damage lies inside a tensor record.
    """

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = None, tensor: str | None = None):
        super().__init__(message, path=path)
        self.offset = offset
        self.tensor = tensor


class DecodingOptionError(InferenceOptionError):
    """A decoding option (beam size, temperature, task, prompt...) is out of range.

    Attributes:
        option: the option's name as the caller spelt it (``beam_size``).
        expected: what would have been accepted, in words.
        actual: the value given.
    """

    def __init__(self, option: str, *, expected: str, actual: object, fix: str = ""):
        self.option = option
        self.expected = expected
        self.actual = actual
        message = f"decoding option {option}: expected {expected}, got {actual!r}"
        super().__init__(message + (f"; {fix}" if fix else ""))


class UnsupportedLanguageError(DecodingOptionError):
    """A language code the checkpoint has no token for, or any language other than English for an
    English-only checkpoint.

    Attributes:
        language: the code given.
        supported: the codes this checkpoint accepts, in vocabulary order.
    """

    def __init__(self, language: object, supported: Iterable[str], *, fix: str = ""):
        self.language = language
        self.supported = tuple(supported)
        super().__init__(
            "language",
            expected=f"one of this checkpoint's language codes ({', '.join(self.supported)})",
            actual=language,
            fix=fix,
        )


class NoSpeechFoundError(AudioError):
    """A front end's silence trimming found no speech in the input (switching trimming off embeds it as it is).

    Digital silence (all zeros) is a plain :class:`~voicehub.core.errors.AudioError`: no option helps there.
    """


__all__ = [
    "CheckpointCorruptError",
    "CheckpointMismatchError",
    "DecodingOptionError",
    "NoSpeechFoundError",
    "UnsupportedLanguageError",
]
