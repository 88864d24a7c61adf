"""The TTS, ASR and SV base classes: batching, options before loading, output checks, verify pairing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import DATA_DIR, SPEECH_WAV
from voicehub.core import (
    ASROutput,
    InferenceOptionError,
    RuntimeState,
    SpeakerOutput,
    TTSOutput,
    VerificationOutput,
    load_audio,
)
from voicehub.errors import UnknownInferenceOptionError
from voicehub.speaker_verification import cosine_similarity
from voicehub_test_tone_extension import (
    SAMPLES_PER_CHAR,
    SpectrumSV,
    SpectrumSVOptions,
    ToneASR,
    ToneTTS,
    char_frequency_hz,
    cosine_filter_bank,
)

OTHER_WAV = DATA_DIR / "librivox" / "sense_and_sensibility_01_austen_64kb-0930.wav"


@pytest.fixture
def frequency_table(tmp_path: Path) -> Path:
    import torch

    path = tmp_path / "table.pt"
    weight = torch.tensor([[char_frequency_hz(code)] for code in range(128)])
    torch.save({"weight": weight}, path)
    return path


@pytest.fixture
def filter_bank(tmp_path: Path) -> Path:
    import torch

    path = tmp_path / "bank.pt"
    torch.save({"weight": cosine_filter_bank()}, path)
    return path


def test_tts_generates_one_tone_per_character_and_asr_reads_it_back(frequency_table: Path) -> None:
    tts = ToneTTS.from_pretrained(frequency_table, device="cpu")
    asr = ToneASR.from_pretrained(frequency_table, device="cpu")
    speech = tts.generate("Hi VoiceHub", amplitude=0.25)
    assert isinstance(speech, TTSOutput)
    assert speech.audio.shape == (11 * SAMPLES_PER_CHAR,)
    assert abs(float(np.abs(speech.audio).max()) - 0.25) < 1e-3
    first = np.abs(np.fft.rfft(speech.audio[:SAMPLES_PER_CHAR]))
    assert first.argmax() * 8000 / SAMPLES_PER_CHAR == char_frequency_hz(ord("H"))
    transcript = asr.transcribe((speech.audio, speech.sample_rate))
    assert isinstance(transcript, ASROutput)
    assert transcript.text == "Hi VoiceHub"
    assert transcript.duration_s == pytest.approx(1.1)


def test_batches_in_batches_out_and_resampling(frequency_table: Path) -> None:
    tts = ToneTTS.from_pretrained(frequency_table, device="cpu")
    asr = ToneASR.from_pretrained(frequency_table, device="cpu")
    outputs = tts.generate(["abc", "xyz"])
    assert isinstance(outputs, list) and [o.text for o in outputs] == ["abc", "xyz"]
    # 16 kHz input is resampled to the ASR model's 8 kHz on purpose.
    upsampled = load_audio((outputs[1].audio, 8000), target_sample_rate=16000)
    texts = asr.transcribe([(outputs[0].audio, 8000), upsampled])
    assert [t.text for t in texts] == ["abc", "xyz"]


def test_tts_and_asr_validate_options_and_text_before_loading(frequency_table: Path) -> None:
    tts = ToneTTS.from_pretrained(frequency_table, device="cpu")
    with pytest.raises(UnknownInferenceOptionError, match=r"ToneTTS\.generate\(\) got unknown option\(s\) \['speed'\]"):
        tts.generate("hello", speed=1.2)
    with pytest.raises(InferenceOptionError, match=r"amplitude must be in \(0, 1\]"):
        tts.generate("hello", amplitude=2.0)
    with pytest.raises(InferenceOptionError, match="item 1 must be a non-empty string"):
        tts.generate(["ok", "  "])
    asr = ToneASR.from_pretrained(frequency_table, device="cpu")
    with pytest.raises(UnknownInferenceOptionError, match=r"valid options are \['language'\]"):
        asr.transcribe(SPEECH_WAV, beam_size=5)
    assert tts.state is RuntimeState.CREATED and asr.state is RuntimeState.CREATED


def test_embed_and_verify_on_real_speech(filter_bank: Path) -> None:
    sv = SpectrumSV.from_pretrained(filter_bank, device="cpu")
    same = sv.verify(SPEECH_WAV, SPEECH_WAV)
    assert isinstance(same, VerificationOutput)
    assert same.score == pytest.approx(1.0, abs=1e-6) and same.is_same_speaker
    embeddings = sv.embed([SPEECH_WAV, OTHER_WAV])
    assert all(isinstance(e, SpeakerOutput) and e.embedding_dim == 16 for e in embeddings)
    a, b = (e.embedding.astype(np.float64) for e in embeddings)
    expected = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    pair = sv.verify([SPEECH_WAV], [OTHER_WAV], threshold=expected + 1e-3)
    assert isinstance(pair, list) and len(pair) == 1
    assert pair[0].score == pytest.approx(expected, abs=1e-6)
    assert pair[0].is_same_speaker is False
    assert cosine_similarity(embeddings[0], embeddings[1]) == pytest.approx(expected, abs=1e-9)


def test_multi_clip_enrolment_scores_the_mean_embedding(filter_bank: Path) -> None:
    sv = SpectrumSV.from_pretrained(filter_bank, device="cpu")
    a, b = (e.embedding.astype(np.float64) for e in sv.embed([SPEECH_WAV, OTHER_WAV]))
    test = sv.embed(SPEECH_WAV).embedding.astype(np.float64)
    mean = (a + b) / 2
    expected = float(mean @ test / np.linalg.norm(mean) / np.linalg.norm(test))
    enrolled = sv.verify([SPEECH_WAV, OTHER_WAV], SPEECH_WAV)
    assert isinstance(enrolled, VerificationOutput)
    assert enrolled.score == pytest.approx(expected, abs=1e-6)
    assert enrolled.score < 1.0 - 1e-4  # the other clip pulls the mean away from the test clip
    assert sv.score_embeddings(sv.embed([SPEECH_WAV, OTHER_WAV]), sv.embed(SPEECH_WAV)).score == pytest.approx(
        expected, abs=1e-6
    )
    assert sv.verify([SPEECH_WAV], SPEECH_WAV).score == pytest.approx(1.0, abs=1e-6)


def test_verify_requires_matching_pairs(filter_bank: Path) -> None:
    sv = SpectrumSV.from_pretrained(filter_bank, device="cpu", lazy_load=False)
    with pytest.raises(InferenceOptionError, match="1 enrollment and 2 test input"):
        sv.verify(SPEECH_WAV, [SPEECH_WAV, OTHER_WAV])
    with pytest.raises(InferenceOptionError, match="the enrollment list is empty"):
        sv.verify([], SPEECH_WAV)
    with pytest.raises(InferenceOptionError, match="must be a SpectrumSVOptions"):
        sv.embed(SPEECH_WAV, options=object())  # type: ignore[arg-type]
    assert sv.verify(SPEECH_WAV, OTHER_WAV, options=SpectrumSVOptions(threshold=-1.0)).is_same_speaker
