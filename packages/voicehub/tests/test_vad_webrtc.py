"""The ``vad_webrtc`` integration on real speech; the ``webrtcvad`` module driven directly is the oracle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile
import webrtcvad

from voicehub import AutoModelForVoiceActivityDetection
from voicehub.core import load_audio, resample
from voicehub.core.errors import AudioDecodeError, ConfigError, SampleRateError
from voicehub.models.vad_webrtc.config import VADWebRTCConfig
from voicehub.models.vad_webrtc.wrapper import WebRTCVADModel
from voicehub.voice_activity import VADOptions, speech_bounds

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
LIBRIVOX = sorted((DATA / "librivox").glob("*.wav"))
SPEECH_60S = DATA / "silero" / "test.wav"


@pytest.fixture(scope="module")
def model() -> WebRTCVADModel:
    loaded = AutoModelForVoiceActivityDetection.from_pretrained(model_type="webrtc")
    assert isinstance(loaded, WebRTCVADModel)
    return loaded


@pytest.mark.parametrize(("aggressiveness", "frame_ms"), [(0, 10), (2, 20), (3, 30)])
def test_vad_webrtc_decisions_and_segments_equal_driving_webrtcvad_directly(aggressiveness: int, frame_ms: int) -> None:
    model = WebRTCVADModel(VADWebRTCConfig(aggressiveness=aggressiveness, frame_duration_ms=frame_ms))
    output = model.detect(SPEECH_60S, return_probabilities=True)
    # Oracle: the file's own int16 samples, framed and passed to one webrtcvad.Vad in order.
    pcm, rate = soundfile.read(SPEECH_60S, dtype="int16")
    frame = rate * frame_ms // 1000
    pcm = np.concatenate([pcm, np.zeros((-pcm.shape[0]) % frame, dtype=np.int16)])
    vad = webrtcvad.Vad(aggressiveness)
    expected = np.array([vad.is_speech(pcm[i : i + frame].tobytes(), rate) for i in range(0, pcm.shape[0], frame)])
    assert output.probabilities is not None
    assert output.frame_duration_s == pytest.approx(frame_ms / 1000)
    assert np.array_equal(output.probabilities, expected.astype(np.float32))
    assert 0.2 < expected.mean() < 0.98  # both decisions occur
    bounds = speech_bounds(
        expected.astype(float), num_samples=960000, sample_rate=16000, frame_num_samples=frame, options=VADOptions()
    )
    assert [(s.start_sample, s.end_sample) for s in output.segments] == list(bounds)


def test_vad_webrtc_finds_one_segment_per_librivox_utterance_and_none_in_silence(model: WebRTCVADModel) -> None:
    for path, output in zip(LIBRIVOX, model.detect(LIBRIVOX), strict=True):
        assert len(output.segments) == 1, (path.name, output.segments)
        (segment,) = output.segments
        assert 0.15 < segment.start_s < 0.4
        assert output.duration_s - 0.7 < segment.end_s <= output.duration_s
    silence = model.detect(np.zeros(3 * 16000, dtype=np.float32), sample_rate=16000)
    assert silence.segments == ()


def test_vad_webrtc_runs_at_native_rates_and_resamples_others(model: WebRTCVADModel) -> None:
    speech = load_audio(LIBRIVOX[1]).samples
    at_8k = model.detect(resample(speech, 16000, 8000), sample_rate=8000, return_probabilities=True)
    assert at_8k.sample_rate == 8000 and len(at_8k.segments) == 1
    at_22k = model.detect(resample(speech, 16000, 22050), sample_rate=22050)
    assert at_22k.sample_rate == 16000 and at_22k.metadata["input_sample_rate"] == 22050
    strict = WebRTCVADModel(VADWebRTCConfig(resample=False))
    with pytest.raises(SampleRateError, match="got 22050 Hz and resampling is off"):
        strict.detect(np.zeros(22050, dtype=np.float32), sample_rate=22050)


def test_vad_webrtc_stream_equals_whole_file(model: WebRTCVADModel) -> None:
    audio = load_audio(SPEECH_60S).samples[: 16000 * 20]
    whole = model.detect(audio, sample_rate=16000, return_probabilities=True)
    session = model.stream(16000, return_probabilities=True)
    events = []
    for start in range(0, audio.shape[0], 777):
        events += session.push(audio[start : start + 777])
    events += session.flush()
    streamed = session.output()
    assert streamed.probabilities is not None and whole.probabilities is not None
    assert np.array_equal(streamed.probabilities, whole.probabilities)
    assert [(s.start_sample, s.end_sample) for s in streamed.segments] == [
        (s.start_sample, s.end_sample) for s in whole.segments
    ]
    assert len(events) == 2 * len(whole.segments) >= 4


def test_vad_webrtc_rejects_bad_settings_and_input(model: WebRTCVADModel, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"aggressiveness: expected one of \[0, 1, 2, 3\], got 4"):
        VADWebRTCConfig(aggressiveness=4)
    with pytest.raises(ConfigError, match="frame_duration_ms"):
        VADWebRTCConfig(frame_duration_ms=25)
    with pytest.raises(ConfigError, match="sample_rate"):
        VADWebRTCConfig(sample_rate=44100)
    junk = tmp_path / "junk.flac"
    junk.write_bytes(b"fLaC" + bytes(100))
    with pytest.raises(AudioDecodeError, match=r"junk\.flac"):
        model.detect(junk)


def test_vad_webrtc_saves_config_and_options_only_and_reloads_with_the_same_segments(tmp_path: Path) -> None:
    from voicehub import AutoModel

    model = WebRTCVADModel(VADWebRTCConfig(aggressiveness=3, frame_duration_ms=20), device="cpu")
    model.default_options = model.resolve_options(speech_pad_ms=0.0)
    reference = model.detect(LIBRIVOX[1])
    saved = model.save_pretrained(tmp_path / "webrtc")
    assert sorted(p.name for p in saved.iterdir()) == [".voicehub-saved.json", "config.json", "inference_options.json"]
    reloaded = AutoModel.from_pretrained(saved)
    assert isinstance(reloaded, WebRTCVADModel)
    assert (reloaded.config.aggressiveness, reloaded.config.frame_duration_ms) == (3, 20)
    assert reloaded.default_options.speech_pad_ms == 0.0
    again = reloaded.detect(LIBRIVOX[1])
    assert [(s.start_sample, s.end_sample) for s in again.segments] == [
        (s.start_sample, s.end_sample) for s in reference.segments
    ]
    assert [(s.start_sample, s.end_sample) for s in again.segments] == [(4480, 16320), (18560, 47840)]


@pytest.mark.parametrize(("sample_rate", "num_samples"), [(48000, 1), (44100, 100), (16000, 159), (8000, 1)])
def test_vad_webrtc_input_shorter_than_one_frame_gives_a_valid_empty_output(
    model: WebRTCVADModel, sample_rate: int, num_samples: int
) -> None:
    speech = load_audio(LIBRIVOX[1], target_sample_rate=sample_rate).samples[sample_rate : sample_rate + num_samples]
    output = model.detect(speech, sample_rate=sample_rate, return_probabilities=True, min_speech_duration_ms=0)
    assert output.segments == () and output.probabilities is not None and output.probabilities.shape == (0,)
    session = model.stream(sample_rate, min_speech_duration_ms=0)
    assert session.push(speech) + session.flush() == []


def test_vad_webrtc_detect_streams_a_long_48k_file_with_the_whole_file_result(
    model: WebRTCVADModel, tmp_path: Path
) -> None:
    """A 3-minute 48 kHz file (past STREAM_FILE_MIN_DURATION_S) goes block by block and matches the whole-file path."""
    from voicehub.audio_input import STREAM_FILE_MIN_DURATION_S
    from voicehub.core import save_audio

    speech = load_audio(DATA / "silero" / "test.wav", target_sample_rate=48000).samples
    path = save_audio(tmp_path / "three_minutes.wav", np.concatenate([speech, speech[::-1], speech]), 48000)
    assert STREAM_FILE_MIN_DURATION_S < 180
    streamed = model.detect(path, return_probabilities=True)
    whole = model.detect(load_audio(path), return_probabilities=True)
    assert len(whole.segments) > 20
    assert [(s.start_sample, s.end_sample) for s in streamed.segments] == [
        (s.start_sample, s.end_sample) for s in whole.segments
    ]
    assert streamed.duration_s == whole.duration_s and streamed.metadata == whole.metadata
    assert whole.probabilities is not None and streamed.probabilities is not None
    np.testing.assert_array_equal(streamed.probabilities, whole.probabilities)
