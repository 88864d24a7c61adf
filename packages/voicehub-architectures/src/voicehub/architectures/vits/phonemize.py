"""espeak-ng phonemes and Piper phoneme ids.

Piper voices read the IPA phonemes of espeak-ng, one Unicode code point per phoneme id, with the
clause punctuation kept as phonemes. :class:`EspeakPhonemizer` calls ``libespeak-ng`` at run time
through ctypes, from the ``espeakng-loader`` wheel (espeak-ng is GPL-3: it is an optional
dependency, loaded when first used, never vendored). It reproduces what piper-tts 1.8.0 does
(``piper/phonemize_espeak.py`` with its statically linked espeak-ng 1.52.0.1 bridge):

1. Text is read clause by clause with ``espeak_TextToPhonemes`` in IPA mode. The clause's
   terminator is not returned by this function (piper's patched ``...WithTerminator`` is not in
   upstream espeak-ng), so it is read from the text the call consumed: the first of the trailing
   ``. ? ! , : ;`` after the clause (closing quotes and brackets skipped); ``...`` or ``…`` gives
   no terminator; ``. ? !`` end a sentence, a blank line after them ends it without a terminator.
   espeak reads one character past the clause, which belongs to the next clause's text.
2. Lang-switch flags like ``(fr)`` are removed; the terminator is appended as a phoneme, and a
   space after ``, : ;``.
3. piper's espeak-ng renders the linking glide it inserts after ``i``/``ɪ``/``iː``/``aɪ``... before
   a vowel as ``ʲ`` (``ˈeɪmiʲəbəl``); upstream 1.52.0 renders it as nothing. Asking espeak for a
   phoneme separator reveals it as an empty phoneme between two real ones; a single empty phoneme
   followed by a vowel becomes ``ʲ`` (longer empty runs are pauses and stay silent).
4. The phoneme string is decomposed (NFD) into code points; known vowel clusters are merged.

Ids (``piper/phoneme_ids.py``): ``^``, ``_``, then each phoneme's ids followed by ``_``, then ``$``.

Known difference: the espeak-ng dictionaries differ slightly between the two espeak-ng builds
(e.g. "has been" is ``hˈæzbiːn`` here, ``hɐzbɪn`` in piper): 1 sentence in 1293 of a test corpus.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from voicehub.architectures.errors import PhonemizerError, UnknownSymbolError
from voicehub.architectures.vits.config import BOS, EOS, PAD
from voicehub.core.lazy import import_optional

INSTALL_HINT = 'pip install "voicehub-architectures[tts]"  (or: pip install espeakng-loader)'
"""How to install the optional phonemizer (espeak-ng, GPL-3, through the espeakng-loader wheel)."""

_SEPARATOR = "\ue000"
"""Phoneme separator asked of espeak (a private-use code point, never in its output)."""

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_ESPEAK_CHARS_UTF8 = 1
_ESPEAK_PHONEMES_IPA = 0x02
_PHONEME_MODE = _ESPEAK_PHONEMES_IPA | (ord(_SEPARATOR) << 8)
"""``phonememode``: IPA (bit 1), separator code point in bits 8-23 (``speak_lib.h``)."""

TERMINATORS: Mapping[str, bool] = {".": True, "?": True, "!": True, ",": False, ":": False, ";": False}
"""Clause terminators Piper keeps as phonemes -> whether they end a sentence."""

_CLOSERS = "\"')]}’”»"
_LANG_FLAG = re.compile(r"\([^)]*\)")
_VOWELS = frozenset("aeiouyæøœɐɑɒɔəɘɚɛɜɝɞɤɨɪɯɵɶʉʊʌʏᵻ")
_STRESS = "ˈˌ"
_LOCK = threading.RLock()
"""espeak-ng keeps one global state per process: every call holds this lock."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Clause:
    """One clause as espeak-ng reads it.

    Attributes:
        phonemes: IPA phonemes (a string; the glide rule applied, lang flags removed).
        terminator: ``". ? ! , : ;"`` or ``""``.
        end_of_sentence: whether the clause ends a sentence.
        text: the source text of the clause (with its punctuation).
    """

    phonemes: str
    terminator: str
    end_of_sentence: bool
    text: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PhonemizedSentence:
    """One sentence as Piper synthesizes it.

    Attributes:
        phonemes: the phonemes (one code point each, or a merged vowel cluster), punctuation included.
        text: the source text of the sentence.
    """

    phonemes: tuple[str, ...]
    text: str


class _Engine:
    """The process-wide libespeak-ng handle (initialised once per data directory)."""

    def __init__(self) -> None:
        self.library: ctypes.CDLL | None = None
        self.library_path: str | None = None
        self.data_path: str | None = None
        self.voice: str | None = None

    def ensure(self, library_path: str | None, data_path: str | None) -> ctypes.CDLL:
        if library_path is None or data_path is None:
            loader = import_optional("espeakng_loader", purpose="espeak-ng phonemes for VITS/Piper voices",
                                     install_hint=INSTALL_HINT)  # fmt: skip
            library_path = library_path or str(loader.get_library_path())
            data_path = data_path or str(loader.get_data_path())
        if self.library is not None and self.library_path == library_path and self.data_path == data_path:
            return self.library
        try:
            library = (
                self.library
                if self.library is not None and self.library_path == library_path
                else ctypes.CDLL(library_path)
            )
        except OSError as err:
            raise PhonemizerError(f"cannot load libespeak-ng from {library_path}: {err}; {INSTALL_HINT}") from err
        if self.library is not None:
            self.library.espeak_Terminate()
            self.library = None
        library.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        library.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        library.espeak_TextToPhonemes.restype = ctypes.c_void_p
        library.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
        if (
            not Path(data_path).is_dir()
            or library.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, os.fsencode(data_path), 0) <= 0
        ):
            self.library = None
            raise PhonemizerError(f"espeak-ng could not initialise with its data directory {data_path}")
        self.library, self.library_path, self.data_path, self.voice = library, library_path, data_path, None
        return library

    def set_voice(self, library: ctypes.CDLL, voice: str) -> None:
        if self.voice != voice:
            if library.espeak_SetVoiceByName(voice.encode()) != 0:
                raise PhonemizerError(f"espeak-ng has no voice {voice!r} (e.g. 'en-us', 'en-gb', 'de', 'fr')")
            self.voice = voice


_ENGINE = _Engine()


def _terminator(span: str, last: bool) -> tuple[str, bool]:
    """Terminator and end-of-sentence flag of a clause from its source text (rule 1 of the module doc)."""
    stripped = span.rstrip()
    core = stripped.rstrip(_CLOSERS)
    match = re.search(r"[.?!,:;…]+$", core)
    if not match:
        return "", last
    run = match.group(0)
    if run.startswith(("...", "…")):
        # A whole ellipsis after words is a pause; an ellipsis left over at the end of the text ends it.
        return "", last and not core[: match.start()].strip()
    terminator = run[0]
    if TERMINATORS[terminator] and span[len(stripped) :].count("\n") >= 2:
        return "", True  # a paragraph break: a sentence end without a terminator
    return terminator, TERMINATORS[terminator]


def _apply_glides(raw: str) -> str:
    """Rule 3 of the module doc: single empty phonemes before a vowel -> ``ʲ``; separators removed."""
    tokens: list[str] = []
    for index, word in enumerate(raw.split(" ")):
        if index:
            tokens.append(" ")
        tokens.extend(word.split(_SEPARATOR))
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] != "":
            out.append(tokens[i])
            i += 1
            continue
        j = i
        while j < len(tokens) and tokens[j] == "":
            j += 1
        k = j
        while k < len(tokens) and tokens[k] == " ":
            k += 1
        follows = tokens[k].lstrip(_STRESS)[:1] if k < len(tokens) else ""
        if j - i == 1 and i > 0 and tokens[i - 1] not in ("", " ") and follows in _VOWELS:
            out.append("ʲ")
        i = j
    return "".join(out)


class EspeakPhonemizer:
    """espeak-ng IPA phonemes, grouped into sentences the way Piper groups them.

    Args:
        voice: espeak-ng voice (``PiperVoiceConfig.espeak_voice``).
        library_path: ``libespeak-ng`` to load; by default the one in the ``espeakng-loader`` wheel.
        data_path: the ``espeak-ng-data`` directory; by default the wheel's.

    Raises:
        OptionalDependencyError: (on first use) when ``espeakng-loader`` is not installed and no
            ``library_path``/``data_path`` were given; the message has the install command.
        PhonemizerError: when the library cannot be loaded or initialised, or lacks the voice.
    """

    def __init__(
        self,
        voice: str = "en-us",
        *,
        library_path: str | os.PathLike[str] | None = None,
        data_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.voice = voice
        self.library_path = os.fspath(library_path) if library_path is not None else None
        self.data_path = os.fspath(data_path) if data_path is not None else None

    def clauses(self, text: str) -> list[Clause]:
        """Phonemes of each clause of ``text``, with its terminator and source text."""
        raw = text.replace("\x00", " ").encode("utf-8")  # espeak reads C strings: a NUL would end the text
        clauses: list[Clause] = []
        with _LOCK:
            library = _ENGINE.ensure(self.library_path, self.data_path)
            _ENGINE.set_voice(library, self.voice)
            buffer = ctypes.create_string_buffer(raw)
            start = ctypes.addressof(buffer)
            pointer = ctypes.c_void_p(start)
            lookahead = ""
            while pointer.value:
                before = pointer.value
                result = library.espeak_TextToPhonemes(ctypes.byref(pointer), _ESPEAK_CHARS_UTF8, _PHONEME_MODE)
                phonemes = ctypes.string_at(result).decode("utf-8", errors="replace") if result else ""
                after = pointer.value
                consumed = raw[before - start : (after - start) if after else len(raw)].decode("utf-8", "replace")
                last = not after
                span = lookahead + (consumed if last else consumed[:-1])
                lookahead = "" if last else consumed[-1:]
                terminator, end = _terminator(span, last)
                phonemes = _apply_glides(_LANG_FLAG.sub("", phonemes))
                clauses.append(Clause(phonemes=phonemes, terminator=terminator, end_of_sentence=end, text=span))
        return clauses

    def sentences(
        self,
        text: str,
        *,
        vowel_clusters: Sequence[Sequence[str]] = (),
        keep: Callable[[Clause], bool] | None = None,
    ) -> list[PhonemizedSentence]:
        """Piper's sentence grouping of the clauses (``piper/phonemize_espeak.py``).

        Each sentence's phonemes are its clauses' phonemes, each followed by its terminator (and a
        space after ``, : ;``), decomposed into code points (NFD); empty sentences are dropped.

        Args:
            text: the text to read.
            vowel_clusters: the voice's vowel clusters, merged into one phoneme each.
            keep: when given, a clause for which it returns false contributes neither phonemes
                nor text (it still ends its sentence when it would); piper keeps every clause.
        """
        sentences: list[PhonemizedSentence] = []
        phonemes: list[str] = []
        texts: list[str] = []
        for clause in self.clauses(text):
            if keep is None or keep(clause):
                chunk = clause.phonemes + clause.terminator + (" " if clause.terminator in (",", ":", ";") else "")
                phonemes.extend(unicodedata.normalize("NFD", chunk))
                texts.append(clause.text)
            if clause.end_of_sentence:
                sentences.append(PhonemizedSentence(phonemes=tuple(merge_clusters(phonemes, vowel_clusters)),
                                                    text="".join(texts).strip()))  # fmt: skip
                phonemes, texts = [], []
        if phonemes:
            sentences.append(PhonemizedSentence(phonemes=tuple(merge_clusters(phonemes, vowel_clusters)),
                                                text="".join(texts).strip()))  # fmt: skip
        return [s for s in sentences if s.phonemes]


def merge_clusters(phonemes: Sequence[str], clusters: Sequence[Sequence[str]]) -> list[str]:
    """Merge known vowel clusters (longest first), e.g. ``("a", "ɪ") -> "aɪ"``, as piper does."""
    if not clusters:
        return list(phonemes)
    known = {tuple(c) for c in clusters}
    longest = max(len(c) for c in known)
    out: list[str] = []
    i = 0
    while i < len(phonemes):
        for size in range(min(longest, len(phonemes) - i), 1, -1):
            candidate = tuple(phonemes[i : i + size])
            if candidate in known:
                out.append("".join(candidate))
                i += size
                break
        else:
            out.append(phonemes[i])
            i += 1
    return out


def phoneme_ids(
    phonemes: Sequence[str],
    id_map: Mapping[str, Sequence[int]],
    *,
    on_unknown: Literal["raise", "skip"] = "raise",
) -> list[int]:
    """Piper's phoneme ids: ``^ _ (phoneme _)* $``.

    Args:
        phonemes: one sentence's phonemes.
        id_map: the voice's ``phoneme_id_map``.
        on_unknown: ``"raise"`` for a phoneme the map lacks, or ``"skip"`` it (piper logs and skips).

    Raises:
        UnknownSymbolError: listing the unknown phonemes (with ``on_unknown="raise"``).
    """
    ids: list[int] = [*id_map[BOS], *id_map[PAD]]
    unknown: list[str] = []
    for phoneme in phonemes:
        mapped = id_map.get(phoneme)
        if mapped is None:
            if phoneme not in unknown:
                unknown.append(phoneme)
            continue
        ids.extend(mapped)
        ids.extend(id_map[PAD])
    if unknown and on_unknown == "raise":
        shown = ", ".join(f"{p!r} (U+{ord(p[0]):04X})" for p in unknown)
        raise UnknownSymbolError(
            f"the voice's phoneme-id map has no id for {shown}; these phonemes cannot be spoken by this voice "
            "(pass on_unknown='skip' to drop them as piper does)",
            symbols=unknown,
        )
    ids.extend(id_map[EOS])
    return ids


__all__ = [
    "INSTALL_HINT",
    "TERMINATORS",
    "Clause",
    "EspeakPhonemizer",
    "PhonemizedSentence",
    "merge_clusters",
    "phoneme_ids",
]
