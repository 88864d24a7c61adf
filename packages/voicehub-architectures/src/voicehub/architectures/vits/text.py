"""Text front end of Piper voices: English normalisation, sentence splitting, phoneme ids.

:func:`normalize_english` rewrites what espeak-ng reads badly or splits wrongly, and leaves the rest
to espeak-ng, which already reads cardinals ("1,234"), decimals ("3.14"), ordinals ("21st"),
times ("1:30"), percentages and most abbreviations well. The rules, applied in this order:

1. Currency: ``$3.50`` -> "3 dollars and 50 cents", ``$1`` -> "1 dollar", ``$0.99`` -> "99 cents",
   ``$2.5 million`` -> "2.5 million dollars"; the same for ``£`` (pounds, pence), ``€`` (euros,
   cents) and ``¥`` (yen). espeak-ng itself reads "$3.50" as "dollar three point five zero".
2. A minus sign before a number at the start of a word: ``-5`` -> "minus 5" (espeak-ng: "five dash five").
3. Titles and abbreviations whose period espeak-ng (and so Piper) takes for a sentence end, which
   would cut "Dr. Smith" into two sentences with a falling pitch and a pause after "Doctor":
   ``Dr. Mr. Mrs. Ms. Prof. Gen. Sen. Rep. Gov. Capt. Lt. Sgt. Col. Jr. Sr. Mt. Ave.`` are spelt
   out; ``St.`` is "Saint" before a capitalised word and "Street" otherwise; ``No. 5`` -> "number 5";
   ``vs.`` -> "versus", ``i.e.`` -> "that is", ``e.g.`` -> "for example", ``etc.`` -> "etcetera"
   (the last keeps its period when it ends the sentence).
4. Other common abbreviations, whose period would also end the sentence (``approx. 5`` would be
   read as two sentences), are spelt out: ``approx. dept. fig. govt. inc. ltd. corp. ca. cf. min.
   max. hr. hrs. yr. yrs. ft. oz. lb. lbs. pp. vol.`` (lower-case or capitalised: ``Approx.`` ->
   "Approximately"; not in capitals: "CA." is not "circa"), as are month abbreviations before a
   day or year or a lower-case word (``Jan. 5`` -> "January 5"; a capitalised word or the end of the text after a
   month abbreviation may be a name, "I met Jan.", and is left alone). The period goes with the
   abbreviation, except before a capitalised word or at the end of the text, where it also ends
   the sentence (as ``etc.``).
5. Initials, one or more single capital letters each followed by a period and a space, before a
   capitalised word (``J. R. R. Tolkien``, ``George W. Bush``), lose their periods, so espeak-ng
   reads them as letters in one sentence. Known limit: "Plan B. Then" is read as one sentence.
6. Whitespace runs inside a line become one space (blank lines, which end a paragraph, are kept).

Sentence splitting is espeak-ng's, as in Piper: a sentence ends at ``. ? !`` followed by a space
or the end (not inside "3.5" or "U.S.A." followed by a lower-case word) and at a blank line;
clause punctuation ``, : ;`` stays inside the sentence as a phoneme, so the voice pauses there.
With ``normalize=None`` the phoneme ids equal piper-tts 1.8.0's for the same text.

Two rules of VoiceHub's own (piper has neither):

* **Nothing to pronounce.** A clause whose source text has no letter and no digit (Unicode
  categories ``L*``/``N*``: only punctuation, symbols or emoji) is left out, and so is a sentence
  without a phoneme that is a vowel or consonant (a letter code point, ``Ll``/``Lu``/``Lo``;
  stress and length marks, the glide ``ʲ``, spaces and punctuation are not). espeak-ng reads the
  names of symbols (``"!!!"`` -> "exclamation", ``"#"`` -> "hash", ``"🙂"`` -> "slightly
  smiling face"), so its phonemes alone would speak text that has no words. A text left without
  a sentence raises :class:`~voicehub.architectures.errors.NothingToPronounceError`.
* **Bounded work unit.** A sentence of more than ``max_phonemes`` phonemes (default
  :data:`MAX_SENTENCE_PHONEMES`) is cut into pieces of at most that many: at clause punctuation
  (``, : ; . ? !``) first, then at word boundaries, then, for a single longer "word", anywhere.
  Each piece goes through the graph alone, so memory does not grow with a text that has no
  sentence punctuation.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Literal

from voicehub.architectures.errors import EmptyTextError, NothingToPronounceError
from voicehub.architectures.vits.config import PiperVoiceConfig
from voicehub.architectures.vits.phonemize import TERMINATORS, EspeakPhonemizer, merge_clusters, phoneme_ids

_CURRENCIES = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "€": ("euro", "euros", "cent", "cents"),
    "¥": ("yen", "yen", "", ""),
}
_SCALES = r"(?:thousand|million|billion|trillion)"
_CURRENCY = re.compile(
    r"(?P<symbol>[$£€¥])\s?(?P<whole>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<fraction>\d+))?"
    rf"(?:\s(?P<scale>{_SCALES})\b)?"
)
_MINUS = re.compile(r"(?<![\w.,])-(?=\d)")
_TITLES = {
    "Dr": "Doctor",
    "Mr": "Mister",
    "Mrs": "Missus",
    "Ms": "Miz",
    "Prof": "Professor",
    "Gen": "General",
    "Sen": "Senator",
    "Rep": "Representative",
    "Gov": "Governor",
    "Capt": "Captain",
    "Lt": "Lieutenant",
    "Sgt": "Sergeant",
    "Col": "Colonel",
    "Jr": "Junior",
    "Sr": "Senior",
    "Mt": "Mount",
    "Ave": "Avenue",
}
_TITLE = re.compile(r"\b(?P<title>" + "|".join(_TITLES) + r")\.(?=\s|$)")
_SAINT = re.compile(r"\bSt\.(?=\s+[A-Z])")
_STREET = re.compile(r"\bSt\.(?=\s|$)")
_NUMBER_ABBREVIATION = re.compile(r"\bNo\.(?=\s*\d)")
_LATIN = [
    (re.compile(r"\bvs\.(?=\s|$)", re.IGNORECASE), "versus"),
    (re.compile(r"\bi\.e\.(?=[\s,]|$)", re.IGNORECASE), "that is"),
    (re.compile(r"\be\.g\.(?=[\s,]|$)", re.IGNORECASE), "for example"),
]
_ETC = re.compile(r"\betc\.(?P<after>\s+(?P<next>\S)|$)")
_ABBREVIATIONS = {
    "approx": "approximately",
    "dept": "department",
    "fig": "figure",
    "govt": "government",
    "inc": "incorporated",
    "ltd": "limited",
    "corp": "corporation",
    "ca": "circa",
    "cf": "compare",
    "min": "minutes",
    "max": "maximum",
    "hr": "hour",
    "hrs": "hours",
    "yr": "year",
    "yrs": "years",
    "ft": "feet",
    "oz": "ounces",
    "lb": "pound",
    "lbs": "pounds",
    "pp": "pages",
    "vol": "volume",
}
_ABBREVIATION = re.compile(
    r"\b(?P<word>" + "|".join(f"{a}|{a.capitalize()}" for a in _ABBREVIATIONS) + r")\.(?P<after>\s+(?P<next>\S)|$)"
)
_MONTHS = {
    "Jan": "January",
    "Feb": "February",
    "Mar": "March",
    "Apr": "April",
    "Jun": "June",
    "Jul": "July",
    "Aug": "August",
    "Sep": "September",
    "Sept": "September",
    "Oct": "October",
    "Nov": "November",
    "Dec": "December",
}
_MONTH = re.compile(r"\b(?P<month>" + "|".join(_MONTHS) + r")\.(?=\s+(?:\d|[a-z]))")
_INITIALS = re.compile(r"(?<![\w.])(?P<initials>(?:[A-Z]\. )+)(?=[A-Z][a-z])")
MAX_SENTENCE_PHONEMES = 400
"""Most phonemes per graph sentence (ids: twice that plus 3; about 18 s of speech at the default
pace, measured). Natural sentences stay below it (the longest parity or benchmark sentence has 157), so
they are not cut. Every stage of the graph is linear in the length except the text encoder's
attention, quadratic in the ids (2 heads, 6 layers); the decoder's activations for 18 s of audio
are the largest term, a few hundred MB (docs/tts.md gives the measured peak memory)."""

_SPACES = re.compile(r"[^\S\n]+")
_LINE_SPACES = re.compile(r" *\n *")


def _money(match: re.Match[str]) -> str:
    one, many, sub_one, sub_many = _CURRENCIES[match.group("symbol")]
    whole = match.group("whole")
    fraction = match.group("fraction")
    scale = match.group("scale")
    if scale:
        amount = whole + (f".{fraction}" if fraction else "")
        return f"{amount} {scale} {many}"
    whole_value = int(whole.replace(",", ""))
    cents = 0
    if fraction is not None:
        if not sub_many or len(fraction) > 2:  # "¥3.5", "$1.005": no minor unit; read the decimal number
            return f"{whole}.{fraction} {many}"
        cents = int(fraction.ljust(2, "0"))
    parts = []
    if whole_value or not cents:
        parts.append(f"{whole} {one if whole_value == 1 else many}")
    if cents:
        parts.append(f"{cents} {sub_one if cents == 1 else sub_many}")
    return " and ".join(parts)


def _etc(match: re.Match[str]) -> str:
    following = match.group("next")
    if following is None:
        return "etcetera."
    # A capitalised word after "etc." starts a new sentence: keep the period as its end.
    return ("etcetera." if following[0].isupper() else "etcetera") + match.group("after")


def _abbreviation(match: re.Match[str]) -> str:
    word = match.group("word")
    spoken = _ABBREVIATIONS[word.lower()]
    spoken = spoken.capitalize() if word[0].isupper() else spoken
    following = match.group("next")
    if following is None:
        return spoken + "."
    return (spoken + "." if following[0].isupper() else spoken) + match.group("after")


def normalize_english(text: str) -> str:
    """Apply the rules of the module docstring, in order; the result is plain text for espeak-ng."""
    text = _CURRENCY.sub(_money, text)
    text = _MINUS.sub("minus ", text)
    text = _TITLE.sub(lambda m: _TITLES[m.group("title")], text)
    text = _SAINT.sub("Saint", text)
    text = _STREET.sub("Street", text)
    text = _NUMBER_ABBREVIATION.sub("number", text)
    for pattern, spoken in _LATIN:
        text = pattern.sub(spoken, text)
    text = _ETC.sub(_etc, text)
    text = _ABBREVIATION.sub(_abbreviation, text)
    text = _MONTH.sub(lambda m: _MONTHS[m.group("month")], text)
    text = _INITIALS.sub(lambda m: m.group("initials").replace(".", ""), text)
    text = _SPACES.sub(" ", text)
    return _LINE_SPACES.sub("\n", text).strip()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SentenceIds:
    """One sentence ready for the graph.

    Attributes:
        text: the sentence's (normalised) source text.
        phonemes: its phonemes, one per id between the pads (punctuation included).
        ids: the phoneme ids (``^ _ (phoneme _)* $``).
    """

    text: str
    phonemes: tuple[str, ...]
    ids: tuple[int, ...]


class PiperTextFrontEnd:
    """Text -> sentences of phoneme ids for a Piper voice.

    Args:
        voice: the voice's config (espeak voice, id map, vowel clusters, phoneme type).
        normalize: ``"english"`` applies :func:`normalize_english`; ``"auto"`` does so for
            English espeak voices only; ``None`` feeds the text to espeak-ng unchanged (the ids
            then equal piper-tts's).
        phonemizer: the espeak-ng phonemizer; by default one for ``voice.espeak_voice``, created
            on first use.
        on_unknown: what to do with phonemes the id map lacks: ``"raise"`` or ``"skip"`` (piper).
        max_phonemes: the longest sentence, in phonemes, that goes to the graph in one piece;
            longer ones are cut (module docstring, "Bounded work unit").

    Raises:
        ValueError: for ``max_phonemes`` < 1.
    """

    def __init__(
        self,
        voice: PiperVoiceConfig,
        *,
        normalize: Literal["auto", "english"] | None = "auto",
        phonemizer: EspeakPhonemizer | None = None,
        on_unknown: Literal["raise", "skip"] = "raise",
        max_phonemes: int = MAX_SENTENCE_PHONEMES,
    ) -> None:
        if isinstance(max_phonemes, bool) or not isinstance(max_phonemes, int) or max_phonemes < 1:
            raise ValueError(f"max_phonemes: expected an integer >= 1, got {max_phonemes!r}")
        self.max_phonemes = max_phonemes
        self.voice = voice
        english = voice.phoneme_type == "espeak" and voice.espeak_voice.lower().startswith("en")
        self.normalizer: Callable[[str], str] | None = (
            normalize_english if normalize == "english" or (normalize == "auto" and english) else None
        )
        self._phonemizer = phonemizer
        self.on_unknown: Literal["raise", "skip"] = on_unknown

    @property
    def phonemizer(self) -> EspeakPhonemizer:
        """The espeak-ng phonemizer (created on first use)."""
        if self._phonemizer is None:
            self._phonemizer = EspeakPhonemizer(self.voice.espeak_voice)
        return self._phonemizer

    def __call__(self, text: str) -> list[SentenceIds]:
        """Split ``text`` into sentences and map each to phoneme ids.

        Voices with ``phoneme_type="text"`` read code points, not espeak phonemes: the whole text
        is one sentence, as in piper.

        Raises:
            EmptyTextError: for empty or whitespace-only text.
            NothingToPronounceError: when no sentence has a pronounceable phoneme (e.g. only "...").
            UnknownSymbolError: for phonemes the voice has no id for (``on_unknown="raise"``).
            OptionalDependencyError: when espeak-ng (``espeakng-loader``) is not installed.
        """
        if not isinstance(text, str) or not text.strip():
            raise EmptyTextError(f"expected text to speak, got {text!r}", text=text if isinstance(text, str) else None)
        source = self.normalizer(text) if self.normalizer is not None else text
        if self.voice.phoneme_type == "text":
            pieces = [(source.strip(), tuple(merge_clusters(list(unicodedata.normalize("NFD", source.strip())),
                                                            self.voice.vowel_clusters)))]  # fmt: skip
        else:
            found = self.phonemizer.sentences(
                source, vowel_clusters=self.voice.vowel_clusters, keep=lambda clause: has_words(clause.text)
            )
            pieces = [(s.text, s.phonemes) for s in found]
        sentences = [
            SentenceIds(text=piece_text, phonemes=piece,
                        ids=tuple(phoneme_ids(piece, self.voice.phoneme_id_map, on_unknown=self.on_unknown)))
            for sentence_text, phonemes in pieces
            if has_words(sentence_text) and is_pronounceable(phonemes)
            for piece_text, piece in split_sentence(sentence_text, phonemes, self.max_phonemes)
        ]  # fmt: skip
        if not sentences:
            raise NothingToPronounceError(
                f"nothing to pronounce in {text[:80]!r}: no letter or digit that espeak-ng reads as speech (only "
                "punctuation, symbols or emoji); give text with words or numbers",
                text=text,
            )
        return sentences


def has_words(text: str) -> bool:
    """Whether ``text`` has a letter or a digit (Unicode category ``L*`` or ``N*``)."""
    return any(unicodedata.category(char)[0] in "LN" for char in text)


def is_pronounceable(phonemes: Sequence[str]) -> bool:
    """Whether ``phonemes`` hold a vowel or consonant: a code point of category ``Ll``, ``Lu`` or ``Lo``.

    Stress and length marks and the glide ``ʲ`` (``Lm``), spaces and punctuation are not sounds of
    their own.
    """
    return any(unicodedata.category(char) in _SOUND_CATEGORIES for phoneme in phonemes for char in phoneme)


_SOUND_CATEGORIES = frozenset({"Ll", "Lu", "Lo"})


def split_points(phonemes: Sequence[str], max_phonemes: int) -> list[tuple[int, int]]:
    """Cut a sentence's phonemes into ranges ``[start, end)`` of at most ``max_phonemes`` each.

    Cuts go after clause punctuation (``, : ; . ? !`` with the space after it) where that suffices;
    a clause still too long is cut after word boundaries (spaces), and a "word" still too long
    anywhere. Neighbouring clauses (or words) are packed greedily into one range while they fit.

    Returns:
        The ranges, in order, covering all of ``phonemes``; ``[(0, len(phonemes))]`` when it fits.
    """
    if max_phonemes < 1:
        raise ValueError(f"max_phonemes: expected an integer >= 1, got {max_phonemes!r}")

    def boundaries(start: int, end: int, level: int) -> list[int]:
        if level == 2:
            return list(range(start + max_phonemes, end, max_phonemes))
        cuts = []
        for i in range(start, end - 1):
            if level == 0 and phonemes[i] in TERMINATORS:
                cuts.append(i + 2 if phonemes[i + 1] == " " else i + 1)
            elif level == 1 and phonemes[i] == " ":
                cuts.append(i + 1)
        return [c for c in cuts if start < c < end]

    def cut(start: int, end: int, level: int) -> list[tuple[int, int]]:
        if end - start <= max_phonemes:
            return [(start, end)]
        edges = [start, *boundaries(start, end, level), end]
        ranges: list[tuple[int, int]] = []
        current = start
        for left, right in itertools.pairwise(edges):
            if right - left > max_phonemes:
                if left > current:
                    ranges.append((current, left))
                ranges += cut(left, right, level + 1)
                current = right
            elif right - current > max_phonemes:
                ranges.append((current, left))
                current = left
        if current < end:
            ranges.append((current, end))
        return ranges

    return cut(0, len(phonemes), 0)


def split_sentence(text: str, phonemes: Sequence[str], max_phonemes: int) -> list[tuple[str, tuple[str, ...]]]:
    """A sentence as pieces of at most ``max_phonemes`` phonemes (:func:`split_points`), with their text.

    A piece's text is the share of the sentence's words at the same place as its phonemes
    (approximate: espeak-ng may read one written word as several, "1999").
    """
    ranges = split_points(phonemes, max_phonemes)
    if len(ranges) == 1:
        return [(text, tuple(phonemes))]
    words = text.split()
    total = len(phonemes)
    pieces = []
    for start, end in ranges:
        share = " ".join(words[round(start * len(words) / total) : round(end * len(words) / total)])
        pieces.append((share or text, tuple(phonemes[start:end])))
    return pieces


__all__ = [
    "MAX_SENTENCE_PHONEMES",
    "PiperTextFrontEnd",
    "SentenceIds",
    "has_words",
    "is_pronounceable",
    "normalize_english",
    "split_points",
    "split_sentence",
]
