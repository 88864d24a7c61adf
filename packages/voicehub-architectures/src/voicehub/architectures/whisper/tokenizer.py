"""Whisper's byte-level BPE tokenizer, read from a checkpoint's ``tokenizer.json`` with the ``tokenizers`` library.

Special tokens are found by their text in the file (``<|endoftext|>``, ``<|startoftranscript|>``,
the ``<|xx|>`` language tokens between it and ``<|translate|>``, ``<|transcribe|>``,
``<|startoflm|>``, ``<|startofprev|>``, ``<|nospeech|>`` or its older name ``<|nocaptions|>``,
``<|notimestamps|>``); the 1501 timestamp tokens ``<|0.00|>`` .. ``<|30.00|>`` follow
``<|notimestamps|>`` (files that list them are read as they are). Nothing is tied to a model name.

The decoder prompt ("start sequence") is ``<|startoftranscript|>`` alone for English-only
checkpoints and ``<|startoftranscript|><|xx|><|transcribe|>`` (or ``<|translate|>``) for
multilingual ones (openai/whisper ``tokenizer.py``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import tokenizers

from voicehub.architectures.errors import UnsupportedLanguageError
from voicehub.core.errors import CheckpointError

Task = Literal["transcribe", "translate"]
"""What the decoder is asked to write: the spoken language's text, or an English translation."""

NUM_TIMESTAMP_TOKENS = 1501
"""Timestamp tokens ``<|0.00|>`` .. ``<|30.00|>`` in steps of 0.02 s."""

UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "my", "yue"})
"""Languages written without spaces between words: words are split at character boundaries instead."""

_LANGUAGE_TOKEN = re.compile(r"<\|([a-z]{2,3})\|>")

# Symbols that mark non-speech annotations (speaker tags, music, sound descriptions) rather than
# words; their tokens are suppressed when a checkpoint ships no suppression list. Basic sentence
# punctuation stays allowed, and so do "-" and "'" inside words.
_NON_SPEECH_SYMBOLS = (
    *'"#()*+/:;<=>@[\\]^_`{|}~「」『』',
    *("<<", ">>", "<<<", ">>>", "--", "---", "-(", "-[", "('", '("', "((", "))", "(((", ")))", "[[", "]]"),
    *("{{", "}}", "♪♪", "♪♪♪"),
)
_MUSIC_SYMBOLS = tuple("♩♪♫♬♭♮♯")  # several tokens each; their shared first token is suppressed


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpecialTokens:
    """Ids of the control tokens of one vocabulary.

    Attributes:
        eot: end of text; every id at or above it is a control or timestamp token.
        sot: start of transcript.
        sot_prev: precedes the previous-text prompt.
        sot_lm: start of language-model mode (never sampled).
        no_speech: its probability after ``sot`` is the no-speech probability.
        no_timestamps: asks for text without timestamp tokens.
        timestamp_begin: ``<|0.00|>``; ``timestamp_begin + k`` is ``k * 0.02`` s.
        transcribe: the transcribe task token.
        translate: the translate-to-English task token.
        language_codes: language codes in vocabulary order (``"en"``, ``"zh"``, ...).
        language_ids: their token ids.
    """

    eot: int
    sot: int
    sot_prev: int
    sot_lm: int
    no_speech: int
    no_timestamps: int
    timestamp_begin: int
    transcribe: int
    translate: int
    language_codes: tuple[str, ...]
    language_ids: tuple[int, ...]


class WhisperTokenizer:
    """Text <-> token ids for one Whisper checkpoint.

    Args:
        tokenizer: the loaded ``tokenizers.Tokenizer``.
        multilingual: whether the model has language and task tokens in its start sequence
            (:attr:`WhisperConfig.is_multilingual`).
        source: where the tokenizer came from, for messages.

    Raises:
        CheckpointError: when a required special token is missing.
    """

    def __init__(self, tokenizer: tokenizers.Tokenizer, *, multilingual: bool, source: str = "tokenizer") -> None:
        self.tokenizer = tokenizer
        self.multilingual = multilingual
        self.source = source
        self.special = self._find_special_tokens()
        self._language_ids = dict(zip(self.special.language_codes, self.special.language_ids, strict=True))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, multilingual: bool) -> WhisperTokenizer:
        """Read a ``tokenizer.json``.

        Raises:
            CheckpointError: for a missing or unreadable file, or one without Whisper's special tokens.
        """
        file = Path(path)
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(file))
        except Exception as err:  # tokenizers raises a bare Exception for unreadable JSON
            raise CheckpointError(f"{file}: cannot read as a tokenizers tokenizer.json ({err})", path=file) from err
        return cls(tokenizer, multilingual=multilingual, source=str(file))

    def _id(self, *texts: str) -> int:
        for text in texts:
            token = self.tokenizer.token_to_id(text)
            if token is not None:
                return int(token)
        raise CheckpointError(
            f"{self.source}: not a Whisper tokenizer, it has no {' or '.join(texts)} token", path=self.source
        )

    def _find_special_tokens(self) -> SpecialTokens:
        sot = self._id("<|startoftranscript|>")
        translate = self._id("<|translate|>")
        no_timestamps = self._id("<|notimestamps|>")
        first_timestamp = self.tokenizer.token_to_id("<|0.00|>")
        codes, ids = [], []
        for token in range(sot + 1, translate):
            text = self.tokenizer.id_to_token(token)
            match = _LANGUAGE_TOKEN.fullmatch(text or "")
            if match is None:
                raise CheckpointError(
                    f"{self.source}: token {token} ({text!r}) between <|startoftranscript|> and <|translate|> "
                    "is not a language token",
                    path=self.source,
                )
            codes.append(match.group(1))
            ids.append(token)
        return SpecialTokens(
            eot=self._id("<|endoftext|>"),
            sot=sot,
            sot_prev=self._id("<|startofprev|>"),
            sot_lm=self._id("<|startoflm|>"),
            no_speech=self._id("<|nospeech|>", "<|nocaptions|>"),
            no_timestamps=no_timestamps,
            timestamp_begin=int(first_timestamp) if first_timestamp is not None else no_timestamps + 1,
            transcribe=self._id("<|transcribe|>"),
            translate=translate,
            language_codes=tuple(codes),
            language_ids=tuple(ids),
        )

    @property
    def languages(self) -> tuple[str, ...]:
        """Language codes the checkpoint accepts: all of its language tokens, or ``("en",)`` if English-only."""
        return self.special.language_codes if self.multilingual else ("en",)

    @property
    def num_ids(self) -> int:
        """Smallest vocabulary size that holds every id this tokenizer can produce, timestamps included."""
        return self.special.timestamp_begin + NUM_TIMESTAMP_TOKENS

    def language_id(self, language: str) -> int:
        """The token id of a language code.

        Raises:
            UnsupportedLanguageError: for a code the checkpoint has no token for.
        """
        token = self._language_ids.get(language) if isinstance(language, str) else None
        if token is None:
            raise UnsupportedLanguageError(language, self.languages, fix="pass one of these codes or None to detect it")
        return token

    def check_language(self, language: str) -> str:
        """Return ``language`` if the checkpoint can be asked for it.

        Raises:
            UnsupportedLanguageError: for an unknown code, or any code but ``"en"`` on an English-only checkpoint.
        """
        if not self.multilingual:
            if language != "en":
                raise UnsupportedLanguageError(
                    language, ("en",), fix="this checkpoint is English-only; use a multilingual checkpoint"
                )
            return language
        self.language_id(language)
        return language

    def sot_sequence(self, language: str | None, task: Task) -> tuple[int, ...]:
        """The start sequence: ``(sot,)`` for English-only checkpoints, else ``(sot, language, task)``.

        Args:
            language: a code from :attr:`languages`; required for multilingual checkpoints.
            task: ``"transcribe"`` or ``"translate"`` (multilingual checkpoints only).

        Raises:
            UnsupportedLanguageError: for an unknown language.
        """
        if not self.multilingual:
            return (self.special.sot,)
        if language is None:
            raise UnsupportedLanguageError(None, self.languages, fix="detect the language first or pass a code")
        task_id = self.special.transcribe if task == "transcribe" else self.special.translate
        return (self.special.sot, self.language_id(language), task_id)

    def encode(self, text: str) -> list[int]:
        """Text -> BPE token ids, without special tokens."""
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, tokens: Sequence[int]) -> str:
        """Token ids -> text; control and timestamp tokens (ids >= ``eot``) are dropped."""
        return str(self.tokenizer.decode([t for t in tokens if t < self.special.eot]))

    def decode_with_timestamps(self, tokens: Sequence[int]) -> str:
        """Token ids -> text with ``<|1.08|>`` marks for timestamp tokens (other control tokens dropped)."""
        parts: list[str] = []
        run: list[int] = []
        for token in tokens:
            if token >= self.special.timestamp_begin:
                parts.append(self.decode(run))
                parts.append(f"<|{(token - self.special.timestamp_begin) * 0.02:.2f}|>")
                run = []
            else:
                run.append(token)
        parts.append(self.decode(run))
        return "".join(parts)

    def non_speech_tokens(self) -> tuple[int, ...]:
        """Tokens of non-speech annotations (brackets, music notes, speaker-tag symbols), sorted.

        The rule of openai/whisper ``Tokenizer.non_speech_tokens``: a symbol is suppressed where it
        is a single token, with or without a leading space; the music notes by their first token;
        ``" -"`` and ``" '"`` at the start of a word.
        """
        result = {self.encode(" -")[0], self.encode(" '")[0]}
        for symbol in _NON_SPEECH_SYMBOLS + _MUSIC_SYMBOLS:
            for variant in (symbol, " " + symbol):
                ids = self.encode(variant)
                if len(ids) == 1 or symbol in _MUSIC_SYMBOLS:
                    result.add(ids[0])
        return tuple(sorted(result))

    def split_to_word_tokens(self, tokens: Sequence[int], language: str | None) -> tuple[list[str], list[list[int]]]:
        """Group tokens into words: at spaces and punctuation, or at characters for unspaced languages.

        Returns:
            The words' texts and their token ids; concatenated they give back ``tokens``.
        """
        pieces, piece_tokens = self._split_on_characters(tokens)
        if language in UNSPACED_LANGUAGES:
            return pieces, piece_tokens
        words: list[str] = []
        word_tokens: list[list[int]] = []
        for piece, ids in zip(pieces, piece_tokens, strict=True):
            starts_word = ids[0] >= self.special.eot or piece.startswith(" ") or piece.strip() in string.punctuation
            if starts_word or not words:
                words.append(piece)
                word_tokens.append(list(ids))
            else:
                words[-1] += piece
                word_tokens[-1].extend(ids)
        return words, word_tokens

    def _split_on_characters(self, tokens: Sequence[int]) -> tuple[list[str], list[list[int]]]:
        """Cut ``tokens`` wherever the text decoded so far ends on a whole character (no partial UTF-8)."""
        full = self.decode_with_timestamps(tokens)
        pieces: list[str] = []
        piece_tokens: list[list[int]] = []
        current: list[int] = []
        consumed = 0
        for token in tokens:
            current.append(token)
            text = self.decode_with_timestamps(current)
            broken = text.find("\ufffd")
            # A replacement character that is also in the full text at that place is real, not a cut.
            if broken < 0 or (consumed + broken < len(full) and full[consumed + broken] == "\ufffd"):
                pieces.append(text)
                piece_tokens.append(current)
                current = []
                consumed += len(text)
        return pieces, piece_tokens


def read_json_object(path: str | os.PathLike[str]) -> dict[str, object]:
    """Read a JSON object from a checkpoint side file.

    Raises:
        CheckpointError: naming the file when it is unreadable or not a JSON object.
    """
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CheckpointError(f"{file}: cannot read as JSON ({err})", path=file) from err
    if not isinstance(data, dict):
        raise CheckpointError(f"{file}: expected a JSON object, got {type(data).__name__}", path=file)
    return data


__all__ = [
    "NUM_TIMESTAMP_TOKENS",
    "UNSPACED_LANGUAGES",
    "SpecialTokens",
    "Task",
    "WhisperTokenizer",
    "read_json_object",
]
