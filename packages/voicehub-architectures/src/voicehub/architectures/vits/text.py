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
4. Whitespace runs inside a line become one space (blank lines, which end a paragraph, are kept).

Sentence splitting is espeak-ng's, as in Piper: a sentence ends at ``. ? !`` followed by a space
or the end (not inside "3.5" or "U.S.A." followed by a lower-case word) and at a blank line;
clause punctuation ``, : ;`` stays inside the sentence as a phoneme, so the voice pauses there.
With ``normalize=None`` the phoneme ids equal piper-tts 1.8.0's for the same text.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
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
    """

    def __init__(
        self,
        voice: PiperVoiceConfig,
        *,
        normalize: Literal["auto", "english"] | None = "auto",
        phonemizer: EspeakPhonemizer | None = None,
        on_unknown: Literal["raise", "skip"] = "raise",
    ) -> None:
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
            import unicodedata

            pieces = [(source.strip(), tuple(merge_clusters(list(unicodedata.normalize("NFD", source.strip())),
                                                            self.voice.vowel_clusters)))]  # fmt: skip
        else:
            pieces = [
                (s.text, s.phonemes)
                for s in self.phonemizer.sentences(source, vowel_clusters=self.voice.vowel_clusters)
            ]
        # Sentences of punctuation alone (e.g. a stray "..."), which piper would still synthesize, are dropped.
        silent = set(TERMINATORS) | {" "}
        sentences = [
            SentenceIds(text=sentence_text, phonemes=phonemes,
                        ids=tuple(phoneme_ids(phonemes, self.voice.phoneme_id_map, on_unknown=self.on_unknown)))
            for sentence_text, phonemes in pieces
            if any(p not in silent for p in phonemes)
        ]  # fmt: skip
        if not sentences:
            raise NothingToPronounceError(
                f"nothing to pronounce in {text[:80]!r}: espeak-ng found no speakable words (only punctuation or "
                "symbols); give text with words or numbers",
                text=text,
            )
        return sentences


__all__ = ["PiperTextFrontEnd", "SentenceIds", "normalize_english"]
