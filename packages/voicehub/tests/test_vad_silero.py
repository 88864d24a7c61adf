"""The ``vad_silero`` integration end to end: real weights (the silero-vad wheel), real speech.

The upstream ``silero_vad`` package (TorchScript model + ``get_speech_timestamps``) is the oracle.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from voicehub import AutoModelForVoiceActivityDetection
from voicehub.core import load_audio, resample
from voicehub.core.errors import AudioDecodeError, AudioError, CheckpointError, InferenceOptionError, SampleRateError
from voicehub.errors import UnknownInferenceOptionError
from voicehub.models.vad_silero.config import VADSileroConfig
from voicehub.models.vad_silero.wrapper import SileroVADModel
from voicehub.voice_activity import VADEvent

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
SPEECH_60S = DATA / "silero" / "test.wav"
LIBRIVOX = sorted((DATA / "librivox").glob("*.wav"))
V5_JIT = DATA / "silero" / "v5" / "silero_vad.jit"
V6_SAFETENSORS = Path(
    str(importlib.metadata.distribution("silero-vad").locate_file("silero_vad/data/silero_vad_16k.safetensors"))
)


@pytest.fixture(scope="module")
def model() -> SileroVADModel:
    loaded = AutoModelForVoiceActivityDetection.from_pretrained()
    assert isinstance(loaded, SileroVADModel)
    return loaded


@pytest.fixture(scope="module")
def upstream() -> Any:
    """The upstream package, imported with its global ``torch.set_num_threads(1)`` undone."""
    previous = torch.get_num_threads()
    import silero_vad

    torch.set_num_threads(previous)
    return silero_vad


def _upstream_jit(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return torch.jit.load(str(path), map_location="cpu")


def test_vad_silero_is_the_default_vad_and_runs_on_the_wheel_weights(model: SileroVADModel) -> None:
    assert model.model_type == "vad_silero"
    assert model.source is not None
    assert model.source.to_string() == "dist:silero-vad/silero_vad/data/silero_vad.jit"
    output = model.detect(LIBRIVOX[1])
    assert output.metadata["model_version"] == "v6"
    assert model.runtime.module.config.sample_rates == (16000, 8000)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"threshold": 0.6, "min_silence_duration_ms": 300, "speech_pad_ms": 100},
        {"threshold": 0.4, "min_speech_duration_ms": 500, "max_speech_duration_s": 4.0, "speech_pad_ms": 0},
    ],
)
@pytest.mark.parametrize("sample_rate", [16000, 8000])
def test_vad_silero_segments_equal_upstream_get_speech_timestamps_on_60s_speech(
    model: SileroVADModel, upstream: Any, sample_rate: int, params: dict[str, Any]
) -> None:
    audio = load_audio(SPEECH_60S, target_sample_rate=sample_rate).samples
    jit = _upstream_jit(Path(str(importlib.metadata.distribution("silero-vad").locate_file(model.source.path))))  # type: ignore[union-attr]
    expected = upstream.get_speech_timestamps(torch.from_numpy(audio), jit, sampling_rate=sample_rate, **params)
    output = model.detect(audio, sample_rate=sample_rate, **params)
    assert output.sample_rate == sample_rate
    assert [(s.start_sample, s.end_sample) for s in output.segments] == [(d["start"], d["end"]) for d in expected]
    assert len(expected) >= 8  # a minute of conversational speech has many pauses


def test_vad_silero_v5_weights_segment_like_upstream_v5(upstream: Any) -> None:
    v5 = SileroVADModel.from_pretrained(str(V5_JIT))
    audio = load_audio(SPEECH_60S).samples
    expected = upstream.get_speech_timestamps(torch.from_numpy(audio), _upstream_jit(V5_JIT))
    output = v5.detect(audio, sample_rate=16000)
    assert output.metadata["model_version"] == "v5"
    assert [(s.start_sample, s.end_sample) for s in output.segments] == [(d["start"], d["end"]) for d in expected]


def test_vad_silero_finds_one_segment_covering_each_librivox_utterance(model: SileroVADModel) -> None:
    outputs = model.detect(LIBRIVOX)
    assert isinstance(outputs, list) and len(outputs) == 5
    for path, output in zip(LIBRIVOX, outputs, strict=True):
        assert output.source == str(path)
        assert len(output.segments) == 1, (path.name, output.segments)
        (segment,) = output.segments
        # Each clip is one sentence with ~0.2-0.35 s of leading and ~0.1-0.4 s of trailing pause.
        assert 0.15 < segment.start_s < 0.4, (path.name, segment)
        assert output.duration_s - 0.45 < segment.end_s <= output.duration_s, (path.name, segment)
        assert segment.score is not None and segment.score > 0.9


def test_vad_silero_finds_no_speech_in_digital_silence_or_white_noise(model: SileroVADModel) -> None:
    rng = np.random.default_rng(1234)
    silence = np.zeros(5 * 16000, dtype=np.float32)
    noise = (0.1 * rng.standard_normal(5 * 16000)).astype(np.float32)
    outputs = model.detect([silence, noise], sample_rate=16000, return_probabilities=True)
    for output in outputs:
        assert output.segments == ()
        assert output.probabilities is not None and output.probabilities.shape == (157,)
        assert float(output.probabilities.max()) < 0.35


def test_vad_silero_runs_8khz_input_on_the_8khz_branch_and_resamples_other_rates(model: SileroVADModel) -> None:
    speech = load_audio(LIBRIVOX[0]).samples
    at_8k = model.detect(resample(speech, 16000, 8000), sample_rate=8000, return_probabilities=True)
    assert at_8k.sample_rate == 8000 and at_8k.frame_duration_s == pytest.approx(0.032)
    at_16k = model.detect(speech, sample_rate=16000)
    as_tensor = model.detect(torch.from_numpy(speech), sample_rate=16000)
    assert [(s.start_sample, s.end_sample) for s in as_tensor.segments] == [
        (s.start_sample, s.end_sample) for s in at_16k.segments
    ]
    # The 8 kHz branch has its own weights: the same single utterance, boundaries within ~0.1 s.
    assert len(at_8k.segments) == len(at_16k.segments) == 1
    assert at_8k.segments[0].start_s == pytest.approx(at_16k.segments[0].start_s, abs=0.15)
    assert at_8k.segments[0].end_s == pytest.approx(at_16k.segments[0].end_s, abs=0.15)
    at_44k = model.detect((resample(speech, 16000, 44100), 44100))
    assert at_44k.sample_rate == 16000 and at_44k.metadata["input_sample_rate"] == 44100
    assert at_44k.segments[0].end_s == pytest.approx(at_16k.segments[0].end_s, abs=0.07)
    mp3 = model.detect(DATA / "silero" / "test.mp3")  # 44.1 kHz stereo MP3
    assert mp3.sample_rate == 16000 and len(mp3.segments) == 1


def test_vad_silero_safetensors_weights_load_from_a_path(model: SileroVADModel) -> None:
    # The wheel's safetensors file is a different export than its TorchScript model (no upstream
    # runtime reads it), so it is checked for sane output: one utterance per clip, same end.
    other = SileroVADModel.from_pretrained(str(V6_SAFETENSORS))
    outputs = other.detect(LIBRIVOX)
    assert other.runtime.module.config.sample_rates == (16000,)
    reference = model.detect(LIBRIVOX)
    for mine, theirs in zip(outputs, reference, strict=True):
        assert len(mine.segments) == 1
        assert mine.segments[0].start_s < 0.4
        assert mine.segments[0].end_s == pytest.approx(theirs.segments[0].end_s, abs=0.1)
    assert [o.segments[0].start_sample for o in outputs] != [o.segments[0].start_sample for o in reference]
    eight = other.detect(resample(load_audio(LIBRIVOX[0]).samples, 16000, 8000), sample_rate=8000)
    assert eight.sample_rate == 16000  # no 8 kHz branch: resampled up
    assert eight.metadata["input_sample_rate"] == 8000


@pytest.mark.parametrize("chunk_samples", [333, 1000, 4097])
def test_vad_silero_stream_equals_whole_file(model: SileroVADModel, chunk_samples: int) -> None:
    audio = load_audio(SPEECH_60S).samples[: 16000 * 30]
    whole = model.detect(audio, sample_rate=16000, return_probabilities=True)
    session = model.stream(16000, return_probabilities=True)
    events: list[tuple[int, VADEvent]] = []
    for start in range(0, audio.shape[0], chunk_samples):
        events += [(start + chunk_samples, e) for e in session.push(audio[start : start + chunk_samples])]
    events += [(audio.shape[0], e) for e in session.flush()]
    streamed = session.output()
    assert [(s.start_sample, s.end_sample) for s in streamed.segments] == [
        (s.start_sample, s.end_sample) for s in whole.segments
    ]
    assert whole.probabilities is not None and streamed.probabilities is not None
    assert np.abs(streamed.probabilities - whole.probabilities).max() <= 1e-6
    kinds = [e.kind for _, e in events]
    assert kinds == ["start", "end"] * len(whole.segments)
    assert [e.sample for _, e in events] == [b for s in whole.segments for b in (s.start_sample, s.end_sample)]
    # Events come as soon as they are certain, long before the end of the stream: a start once
    # the speech is longer than 250 ms (+ one chunk), an end after 100 ms of silence (+ pads).
    for pushed, event in events[:-1]:
        delay = pushed - event.sample
        assert delay < 16000 * 0.75 + chunk_samples, (event, pushed)


def _same_vad_output(streamed: Any, whole: Any) -> None:
    assert [(s.start_sample, s.end_sample) for s in streamed.segments] == [
        (s.start_sample, s.end_sample) for s in whole.segments
    ]
    assert [s.score for s in streamed.segments] == pytest.approx([s.score for s in whole.segments], abs=1e-6)
    assert streamed.duration_s == whole.duration_s and streamed.sample_rate == whole.sample_rate
    assert streamed.source == whole.source and streamed.metadata == whole.metadata
    assert whole.probabilities is not None and streamed.probabilities is not None
    assert streamed.probabilities.shape == whole.probabilities.shape
    assert np.abs(streamed.probabilities - whole.probabilities).max() <= 1e-6


def test_vad_silero_detect_file_in_blocks_equals_the_whole_file_path(model: SileroVADModel) -> None:
    whole = model.detect(load_audio(SPEECH_60S), return_probabilities=True)  # a Waveform: the whole-file path
    streamed = model.detect_file(SPEECH_60S, block_s=7.3, return_probabilities=True)  # blocks cut mid-chunk
    assert len(whole.segments) > 5
    _same_vad_output(streamed, whole)


def test_vad_silero_detect_streams_a_long_file_with_the_whole_file_result(
    model: SileroVADModel, tmp_path: Path
) -> None:
    """A 3-minute file (past STREAM_FILE_MIN_DURATION_S) goes through detect_file and gives the same output."""
    from voicehub.audio_input import STREAM_FILE_MIN_DURATION_S
    from voicehub.core import save_audio

    speech = load_audio(SPEECH_60S).samples
    path = save_audio(tmp_path / "three_minutes.wav", np.concatenate([speech, speech[::-1], speech]), 16000)
    assert STREAM_FILE_MIN_DURATION_S < 180
    streamed = model.detect(path, return_probabilities=True)
    whole = model.detect(load_audio(path), return_probabilities=True)
    assert whole.duration_s == 3 * speech.shape[0] / 16000
    _same_vad_output(streamed, whole)


def test_vad_silero_stream_resamples_and_resets(model: SileroVADModel) -> None:
    audio = resample(load_audio(LIBRIVOX[1]).samples, 16000, 48000)
    session = model.stream(48000)
    events = session.push(audio) + session.flush()
    assert [e.kind for e in events] == ["start", "end"]
    assert events[0].sample_rate == 16000 and 0.15 < events[0].time_s < 0.4
    session.reset()
    assert session.push(np.zeros(0, dtype=np.float32)) == []
    assert session.flush() == []
    with pytest.raises(Exception, match="call reset"):
        session.push(audio[:100])


def test_vad_silero_rejects_bad_input_with_clear_errors(model: SileroVADModel, tmp_path: Path) -> None:
    with pytest.raises(AudioError, match="empty"):
        model.detect(np.zeros(0, dtype=np.float32), sample_rate=16000)
    bad = np.zeros(16000, dtype=np.float32)
    bad[123] = np.nan
    with pytest.raises(AudioError, match=r"non-finite.*index 123"):
        model.detect(bad, sample_rate=16000)
    with pytest.raises(AudioError, match="non-finite"):
        model.stream(16000).push(bad)
    strict = SileroVADModel(VADSileroConfig(resample=False), source=model.source)
    with pytest.raises(SampleRateError, match=r"runs at \[16000, 8000\] Hz, got 22050 Hz") as caught:
        strict.detect(np.zeros(22050, dtype=np.float32), sample_rate=22050)
    assert caught.value.expected == (16000, 8000) and caught.value.actual == 22050
    with pytest.raises(SampleRateError, match="got 44100 Hz"):
        strict.stream(44100)
    text = tmp_path / "notes.wav"
    text.write_text("this is not audio\n")
    with pytest.raises(AudioDecodeError, match=r"notes\.wav: cannot decode as audio"):
        model.detect(text)
    with pytest.raises(SampleRateError, match="no sample rate"):
        model.detect(np.zeros(100, dtype=np.float32))
    with pytest.raises(InferenceOptionError, match=r"threshold: expected a probability in \[0, 1\], got 1.5"):
        model.detect(LIBRIVOX[0], threshold=1.5)
    with pytest.raises(UnknownInferenceOptionError, match="thresold"):
        model.detect(LIBRIVOX[0], thresold=0.3)


def test_vad_silero_loads_from_a_directory_holding_an_upstream_file(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot" / "src" / "silero_vad" / "data"
    snapshot.mkdir(parents=True)
    shutil.copy(V5_JIT, snapshot / "silero_vad.jit")
    model = SileroVADModel.from_pretrained(str(tmp_path / "snapshot"))
    output = model.detect(LIBRIVOX[1])
    assert output.metadata["model_version"] == "v5"
    assert len(output.segments) == 1


def test_vad_silero_missing_or_foreign_checkpoint_fails_on_load(tmp_path: Path) -> None:
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="no Silero VAD checkpoint inside"):
        SileroVADModel.from_pretrained(str(empty)).load()
    wrong = SileroVADModel.from_pretrained(str(tmp_path / "missing.jit"))
    with pytest.raises(CheckpointError, match=r"missing\.jit"):
        wrong.detect(LIBRIVOX[0])
    assert wrong.runtime is None  # a failed load leaves nothing half-built


def test_vad_silero_save_pretrained_round_trip(model: SileroVADModel, tmp_path: Path) -> None:
    saved = model.save_pretrained(tmp_path / "saved")
    again = AutoModelForVoiceActivityDetection.from_pretrained(str(saved))
    assert isinstance(again, SileroVADModel)
    a = model.detect(LIBRIVOX[2], return_probabilities=True)
    b = again.detect(LIBRIVOX[2], return_probabilities=True)
    assert a.probabilities is not None and b.probabilities is not None
    assert np.array_equal(a.probabilities, b.probabilities)


def test_vad_silero_registration_imports_no_torch() -> None:
    code = (
        "import sys, voicehub\n"
        "spec = voicehub.get_model_spec('silero')\n"
        "print(spec.model_type, spec.default_for_task, spec.architecture, 'torch' in sys.modules)\n"
        "print(voicehub.get_default_model_spec('vad').model_type)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split("\n")[:2] == ["vad_silero True silero False", "vad_silero"]


@pytest.mark.parametrize("sample_rate", [48000, 44100, 16000, 8000])
@pytest.mark.parametrize("num_samples", [1, 7, 255])
def test_vad_silero_input_shorter_than_one_chunk_gives_a_valid_empty_output_at_any_rate(
    model: SileroVADModel, sample_rate: int, num_samples: int
) -> None:
    speech = load_audio(LIBRIVOX[1], target_sample_rate=sample_rate).samples
    loud = speech[sample_rate : sample_rate + num_samples]  # real speech from inside the segment
    output = model.detect(loud, sample_rate=sample_rate, return_probabilities=True, min_speech_duration_ms=0)
    assert output.segments == ()
    assert output.probabilities is not None and output.probabilities.shape == (0,)
    assert output.metadata["input_sample_rate"] == sample_rate
    session = model.stream(sample_rate, min_speech_duration_ms=0)
    assert session.push(loud) + session.flush() == []
    assert session.output().segments == ()
    batch = model.detect([(loud, sample_rate), (speech, sample_rate)])  # a short item next to a long one
    assert batch[0].segments == () and len(batch[1].segments) == 1


def test_vad_silero_messages_name_the_method_and_what_push_takes(model: SileroVADModel) -> None:
    with pytest.raises(
        UnknownInferenceOptionError, match=r"SileroVADModel\.stream\(\) got unknown option\(s\) \['threshhold'\]"
    ):
        model.stream(16000, threshhold=0.3)
    session = model.stream(16000)
    with pytest.raises(AudioError, match=r"push\(\) takes samples .* not a str such as a file path.*detect\(path\)"):
        session.push(str(LIBRIVOX[1]))
    with pytest.raises(AudioError, match="not a PosixPath"):
        session.push(LIBRIVOX[1])
    events = session.push(load_audio(LIBRIVOX[1]).samples) + session.flush()  # the session still works
    assert [e.kind for e in events] == ["start", "end"]
