"""Whisper decoding on real weights and real speech: transcripts, accuracy, silence, options and their errors.

Oracles: faster-whisper 1.2.1 (CTranslate2, float32) on the same offline checkpoints, greedy
(``beam_size=1``, temperature 0); openai-whisper on the adapter's own OpenAI ``.pt`` export for beam
search and prompts. Accuracy: word error rate with ``jiwer`` after openai-whisper's English text
normaliser, against ``tests/data/librivox/transcription`` (124 words).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub.architectures.errors import DecodingOptionError, UnsupportedLanguageError
from voicehub.architectures.whisper import DecodingOptions, WhisperTranscriber, export_openai_checkpoint
from voicehub.architectures.whisper.audio import window_log_mel
from voicehub.core import load_audio
from voicehub.core.errors import AudioError

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
LIBRIVOX = sorted((DATA / "librivox").glob("*.wav"))
GREEDY = DecodingOptions(temperatures=(0.0,))


def _references() -> list[str]:
    by_clip = {}
    for line in (DATA / "librivox" / "transcription").read_text().splitlines():
        match = re.fullmatch(r"<s> (.*) </s> \((.*)\)", line.strip())
        if match:
            by_clip[match.group(2)] = match.group(1)
    return [by_clip[path.stem] for path in LIBRIVOX]


def word_error_rate(hypotheses: list[str], references: list[str]) -> float:
    import jiwer
    from whisper.normalizers import EnglishTextNormalizer

    normalise = EnglishTextNormalizer()
    return float(jiwer.wer([normalise(r) for r in references], [normalise(h) for h in hypotheses]))


@pytest.fixture(scope="module")
def clips() -> list[np.ndarray]:
    return [load_audio(path, target_sample_rate=16000).samples for path in LIBRIVOX]


@pytest.fixture(scope="module")
def tiny(whisper_tiny) -> WhisperTranscriber:
    return WhisperTranscriber(whisper_tiny.model, whisper_tiny.tokenizer, whisper_tiny.generation)


@pytest.fixture(scope="module")
def base(whisper_base) -> WhisperTranscriber:
    return WhisperTranscriber(whisper_base.model, whisper_base.tokenizer, whisper_base.generation)


def _faster_whisper(directories: tuple[Path, ...]):
    """faster-whisper on the checkpoint's files; the split base model.bin is handed over in memory."""
    from faster_whisper import WhisperModel

    main = directories[0]
    if (main / "model.bin").is_file():
        return WhisperModel(str(main), device="cpu", compute_type="float32", cpu_threads=1)
    parts = sorted(p for d in directories for p in d.glob("model.bin.part*"))
    files = {"model.bin": b"".join(p.read_bytes() for p in parts)}
    files.update({name: (main / name).read_bytes() for name in ("config.json", "tokenizer.json", "vocabulary.txt")})
    return WhisperModel("base", device="cpu", compute_type="float32", cpu_threads=1, files=files)


def _oracle_texts(directories: tuple[Path, ...], clips: list[np.ndarray], **options: object) -> list[str]:
    model = _faster_whisper(directories)
    texts = []
    for samples in clips:
        segments, _ = model.transcribe(samples, beam_size=1, temperature=0.0, language="en", **options)
        texts.append("".join(segment.text for segment in segments).strip())
    return texts


@pytest.mark.slow
def test_tiny_en_greedy_transcripts_equal_faster_whisper_and_wer(tiny, clips, whisper_tiny_dir) -> None:
    batch = tiny.transcribe_windows(clips, options=GREEDY)  # the five clips decoded as one batch
    texts = [transcript.text for transcript in batch]
    assert texts == _oracle_texts((whisper_tiny_dir,), clips)
    assert texts[1] == "He was not an old-sposed young man."  # a real tiny.en error, shared with the oracle
    assert word_error_rate(texts, _references()) <= 0.05
    plain = tiny.transcribe_windows(clips, options=DecodingOptions(temperatures=(0.0,), without_timestamps=True))
    assert [t.text for t in plain] == _oracle_texts((whisper_tiny_dir,), clips, without_timestamps=True)
    assert all(len(t.segments) == 1 and t.segments[0].start_s == 0.0 for t in plain)


@pytest.mark.slow
def test_base_greedy_transcripts_equal_faster_whisper_and_wer(base, clips, whisper_base_dirs) -> None:
    batch = base.transcribe_windows(clips, options=DecodingOptions(temperatures=(0.0,), language="en"))
    texts = [transcript.text for transcript in batch]
    assert texts == _oracle_texts(whisper_base_dirs, clips)
    assert word_error_rate(texts, _references()) <= 0.02


def test_batched_windows_equal_one_by_one_with_offsets(tiny, clips) -> None:
    offsets = [10.0, 20.5]
    batch = tiny.transcribe_windows(clips[1:3], offsets_s=offsets, options=GREEDY)
    for index, transcript in enumerate(batch):
        alone = tiny.transcribe_windows([clips[1 + index]], options=GREEDY)[0]
        assert [s.tokens for s in transcript.segments] == [s.tokens for s in alone.segments]
        offset = offsets[index]
        assert transcript.segments[0].start_s == pytest.approx(alone.segments[0].start_s + offset)
        assert transcript.segments[-1].end_s <= offset + transcript.duration_s + 0.02


def test_finished_windows_leave_the_batch_and_the_rest_decode_as_alone(tiny, clips) -> None:
    """A short clip next to a long one: once the short one's transcript ends, steps run on one row,
    and both transcripts and their log-probabilities are what each gets alone."""
    rows_per_step: list[int] = []
    decode = tiny.model.decode

    def counting(tokens, state, **kwargs):
        rows_per_step.append(tokens.shape[0])
        return decode(tokens, state, **kwargs)

    short, long = clips[0][: 16000 * 2], clips[1]
    tiny.model.decode = counting
    try:
        batch = tiny.transcribe_windows([short, long], options=GREEDY)
    finally:
        del tiny.model.decode
    assert rows_per_step[0] == 2 and rows_per_step[-1] == 1
    for transcript, audio in zip(batch, (short, long), strict=True):
        alone = tiny.transcribe_windows([audio], options=GREEDY)[0]
        assert [s.tokens for s in transcript.segments] == [s.tokens for s in alone.segments]
        assert [s.avg_logprob for s in transcript.segments] == pytest.approx(
            [s.avg_logprob for s in alone.segments], abs=1e-4
        )


@pytest.mark.slow
def test_batched_word_alignment_equals_one_by_one_and_can_skip_probabilities(tiny, clips) -> None:
    """Windows of different lengths aligned in one padded pass get the words each gets alone; without
    word probabilities the times are the same and the probability is None."""
    words = dataclasses.replace(GREEDY, word_timestamps=True)
    batch = tiny.transcribe_windows(clips[:3], options=words)
    times_only = tiny.transcribe_windows(clips[:3], options=dataclasses.replace(words, word_probabilities=False))
    for index, transcript in enumerate(batch):
        alone = tiny.transcribe_windows([clips[index]], options=words)[0]
        got = [w for s in transcript.segments for w in s.words]
        expected = [w for s in alone.segments for w in s.words]
        bare = [w for s in times_only[index].segments for w in s.words]
        assert len(got) > 5
        assert [w.text for w in got] == [w.text for w in expected] == [w.text for w in bare]
        assert [t for w in got for t in (w.start_s, w.end_s)] == pytest.approx(
            [t for w in expected for t in (w.start_s, w.end_s)], abs=1e-6
        )
        assert [t for w in bare for t in (w.start_s, w.end_s)] == pytest.approx(
            [t for w in got for t in (w.start_s, w.end_s)], abs=1e-6
        )
        assert [w.probability for w in got] == pytest.approx([w.probability for w in expected], abs=1e-4)
        assert all(0.0 < (w.probability or 0.0) <= 1.0 for w in got)
        assert all(w.probability is None for w in bare)


def test_goforward_gives_go_forward_ten_meters(tiny) -> None:
    samples = np.frombuffer((DATA / "goforward.raw").read_bytes(), dtype="<i2").astype(np.float32) / 32768.0
    transcript = tiny.transcribe(samples)
    assert word_error_rate([transcript.text], ["go forward ten meters"]) == 0.0
    assert transcript.text == "Go forward 10 meters."


def _silence_and_noise() -> list[np.ndarray]:
    noise = np.random.default_rng(0).standard_normal(5 * 16000).astype(np.float32) * 0.1
    return [np.zeros(5 * 16000, dtype=np.float32), noise]


@pytest.mark.slow
def test_silence_and_white_noise_give_no_text(tiny, base) -> None:
    for transcriber, options in ((tiny, DecodingOptions()), (base, DecodingOptions(language="en"))):
        for transcript in transcriber.transcribe_windows(_silence_and_noise(), options=options):
            assert transcript.segments == () and transcript.text == ""
    assert tiny.transcribe(_silence_and_noise()[1]).text == ""  # the long-form path skips it too


@pytest.mark.slow
def test_base_detects_english_on_english_speech(base, tiny, clips) -> None:
    transcripts = base.transcribe_windows(clips[:2], options=GREEDY)
    assert [t.language for t in transcripts] == ["en", "en"]
    assert min(t.language_probability for t in transcripts) > 0.9
    assert transcripts[0].text.startswith("And Mr. John Dashwood")
    probabilities = base.detect_language(clips[:1])[0]
    assert max(probabilities, key=lambda code: probabilities[code]) == "en"
    assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-4)
    with pytest.raises(DecodingOptionError, match="multilingual"):
        tiny.detect_language(clips[:1])


def test_translate_puts_the_translate_token_in_the_start_sequence(base) -> None:
    special = base.tokenizer.special
    options = DecodingOptions(task="translate")
    assert base.decoder.initial_tokens("de", options) == [
        special.sot,
        base.tokenizer.language_id("de"),
        special.translate,
    ]


@pytest.mark.slow
def test_temperature_fallback_keeps_the_most_probable_result(tiny, clips) -> None:
    never_good = DecodingOptions(
        temperatures=(0.0, 0.6, 1.0), best_of=2, logprob_threshold=0.0, no_speech_threshold=None
    )
    transcript = tiny.transcribe_windows(clips[3:4], options=never_good)[0]  # every result falls back
    greedy = tiny.transcribe_windows(clips[3:4], options=GREEDY)[0]
    assert {s.temperature for s in transcript.segments} == {1.0}  # reported at the last temperature tried
    assert transcript.text == greedy.text  # greedy is the most probable of the three decodings
    again = tiny.transcribe_windows(clips[3:4], options=never_good)[0]
    assert again == transcript  # sampling is seeded


@pytest.fixture(scope="module")
def openai_tiny(whisper_tiny, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    whisper = pytest.importorskip("whisper")
    path = export_openai_checkpoint(whisper_tiny.model, tmp_path_factory.mktemp("oracle") / "tiny.en.pt")
    yield whisper.load_model(str(path), device="cpu")


@pytest.mark.slow
def test_beam_search_and_prompt_tokens_equal_openai_whisper(tiny, openai_tiny, clips) -> None:
    import whisper

    mel = window_log_mel([torch.from_numpy(clips[0])], 80)
    features = tiny.model.embed_audio(mel)
    for options, reference in (
        (DecodingOptions(beam_size=5), whisper.DecodingOptions(beam_size=5, fp16=False, language="en")),
        (
            DecodingOptions(initial_prompt="Mr. Dashwood's estate."),
            whisper.DecodingOptions(prompt=" Mr. Dashwood's estate.", fp16=False, language="en"),
        ),
    ):
        prompt = tiny.decoder.prompt_tokens(options.initial_prompt)
        initial = tiny.decoder.initial_tokens("en", options, prompt)
        mine = tiny.decoder.decode(features, [initial], options, 0.0)[0]
        expected = whisper.decode(openai_tiny, mel[0], reference)
        assert list(mine.tokens) == expected.tokens
        assert mine.avg_logprob == pytest.approx(expected.avg_logprob, abs=1e-4)
        assert mine.no_speech_prob == pytest.approx(expected.no_speech_prob, abs=1e-4)


def test_invalid_options_raise_named_errors(tiny, base) -> None:
    with pytest.raises(DecodingOptionError) as info:
        DecodingOptions(beam_size=0)
    assert info.value.option == "beam_size" and info.value.actual == 0
    with pytest.raises(DecodingOptionError, match="temperature"):
        DecodingOptions(temperatures=(-0.2,))
    with pytest.raises(UnsupportedLanguageError) as language:
        base.transcribe_windows([np.zeros(16000, np.float32)], options=DecodingOptions(language="xx"))
    assert language.value.language == "xx" and "de" in language.value.supported
    with pytest.raises(UnsupportedLanguageError, match="English-only"):
        tiny.transcribe(np.zeros(16000, np.float32), DecodingOptions(language="de"))
    with pytest.raises(DecodingOptionError, match="translation needs a multilingual checkpoint"):
        tiny.transcribe(np.zeros(16000, np.float32), DecodingOptions(task="translate"))
    with pytest.raises(AudioError, match="more than 30 s"):
        tiny.transcribe_windows([np.zeros(31 * 16000, np.float32)])
