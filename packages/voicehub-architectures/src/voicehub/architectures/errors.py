"""Errors of the architectures layer.

Each error subclasses the matching :mod:`voicehub.core.errors` class (and through it a builtin),
so callers can catch ``ValueError`` as they would elsewhere. :class:`CheckpointMismatchError`
lives in :mod:`voicehub.core.errors` (the one strict check,
:func:`voicehub.core.checkpoint.check_state_dict`, raises it) and is re-exported here, where the
adapters' callers have always imported it.
"""

from __future__ import annotations

from collections.abc import Iterable

from voicehub.core.errors import (
    AudioError,
    CheckpointError,
    CheckpointMismatchError,
    InferenceOptionError,
    VoiceHubError,
)


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


class UnknownSpeakerError(InferenceOptionError, KeyError):
    """A speaker name or index a multi-speaker model does not have.

    Attributes:
        speaker: what was asked for.
        available: the speaker names (or indices, as strings) the model has.
    """

    def __init__(self, speaker: object, available: Iterable[str], *, num_speakers: int):
        self.speaker = speaker
        self.available = tuple(available)
        shown = ", ".join(self.available[:20]) + (" ..." if len(self.available) > 20 else "")
        super().__init__(f"unknown speaker {speaker!r}: this voice has {num_speakers} speaker(s); use one of: {shown}")

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class TextFrontEndError(VoiceHubError, ValueError):
    """Text cannot be turned into the phoneme ids a model reads.

    Attributes:
        text: the text (or a prefix of it) that was at fault.
    """

    def __init__(self, message: str, *, text: str | None = None):
        super().__init__(message)
        self.text = text


class EmptyTextError(TextFrontEndError):
    """The text is empty or only whitespace."""


class NothingToPronounceError(TextFrontEndError):
    """The text has characters, but none the phonemizer can pronounce (only symbols or punctuation)."""


class UnknownSymbolError(TextFrontEndError, KeyError):
    """Phonemes the voice's phoneme-id map has no id for.

    Attributes:
        symbols: the unknown phonemes, in order of first appearance.
    """

    def __init__(self, message: str, *, symbols: Iterable[str], text: str | None = None):
        super().__init__(message, text=text)
        self.symbols = tuple(symbols)

    def __str__(self) -> str:
        return str(self.args[0])


class PhonemizerError(TextFrontEndError):
    """The phonemizer library is present but failed (cannot initialise, unknown voice...)."""


class NoSpeechFoundError(AudioError):
    """A front end's silence trimming found no speech in the input (switching trimming off embeds it as it is).

    Digital silence (all zeros) is a plain :class:`~voicehub.core.errors.AudioError`: no option helps there.
    """


__all__ = [
    "CheckpointCorruptError",
    "CheckpointMismatchError",
    "DecodingOptionError",
    "EmptyTextError",
    "NoSpeechFoundError",
    "NothingToPronounceError",
    "PhonemizerError",
    "TextFrontEndError",
    "UnknownSpeakerError",
    "UnknownSymbolError",
    "UnsupportedLanguageError",
]
