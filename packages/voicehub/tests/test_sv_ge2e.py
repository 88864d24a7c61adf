"""The ``sv_ge2e`` integration: embed/verify input forms, PLDA back-end on real and synthetic speech,
save/load round trips, and the missing-weights message."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub.core import AudioError, SpeakerOutput, VerificationOutput, load_audio
from voicehub.core.errors import InferenceOptionError
from voicehub.hyperion.metrics import compute_eer
from voicehub.models.sv_ge2e.backend import PLDABackend
from voicehub.models.sv_ge2e.wrapper import GE2ESpeakerVerifier
from voicehub.registry.errors import CheckpointNotFoundError

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
LIBRIVOX = sorted((DATA / "librivox").glob("*.wav"))
SYNTHETIC = sorted((DATA / "synthetic").glob("*.flac"))
SILERO_SEGMENT = 160000  # 10 s at 16 kHz: test.wav (60 s, one reader) gives 6 utterances
CROP, CROP_HOP = 32000, 12000  # training crops: 2 s every 0.75 s of the VAD-trimmed audio


@pytest.fixture(scope="module")
def verifier() -> GE2ESpeakerVerifier:
    return GE2ESpeakerVerifier.from_pretrained(device="cpu", lazy_load=False)


def _corpus() -> list[tuple[str, int, np.ndarray]]:
    """(speaker, utterance number, samples): 12 synthetic voices x 4 sentences, 2 real readers."""
    items = []
    for path in SYNTHETIC:
        speaker, number = path.stem.rsplit("_", 1)
        items.append((speaker, int(number), load_audio(path).samples))
    items += [("librivox", n, load_audio(p).samples) for n, p in enumerate(LIBRIVOX, 1)]
    silero = load_audio(DATA / "silero" / "test.wav").samples
    items += [("silero", n, silero[(n - 1) * SILERO_SEGMENT : n * SILERO_SEGMENT]) for n in range(1, 7)]
    return items


def _is_training(speaker: str, number: int) -> bool:
    return number <= 2 or (speaker == "silero" and number == 3)


def _trials(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    upper = np.triu_indices(len(labels), 1)
    same = (labels[:, None] == labels[None, :])[upper]
    return scores[upper][same], scores[upper][~same]


# ----------------------------------------------------------------------------- embed / verify
def test_embed_accepts_path_array_tuple_tensor_and_list(verifier: GE2ESpeakerVerifier) -> None:
    path = LIBRIVOX[1]
    samples = load_audio(path).samples
    from_path = verifier.embed(path)
    assert isinstance(from_path, SpeakerOutput) and from_path.embedding.shape == (256,)
    assert from_path.source == str(path) and from_path.duration_s == pytest.approx(len(samples) / 16000)
    assert 0 < from_path.metadata["speech_duration_s"] <= from_path.duration_s
    pcm16 = np.round(samples * 32768).astype(np.int16)
    for other in (
        verifier.embed(samples, sample_rate=16000),
        verifier.embed((samples, 16000)),
        verifier.embed(torch.from_numpy(samples), sample_rate=16000),
    ):
        np.testing.assert_array_equal(other.embedding, from_path.embedding)
    assert np.abs(verifier.embed(pcm16, sample_rate=16000).embedding - from_path.embedding).max() < 1e-4
    batch = verifier.embed([path, LIBRIVOX[2]])
    assert isinstance(batch, list) and len(batch) == 2
    np.testing.assert_allclose(batch[0].embedding, from_path.embedding, atol=1e-6)


def test_embed_resamples_other_rates(verifier: GE2ESpeakerVerifier) -> None:
    from voicehub.core import resample

    samples = load_audio(LIBRIVOX[1]).samples
    at_16k = verifier.embed(samples, sample_rate=16000).embedding
    at_44k = verifier.embed(resample(samples, 16000, 44100), sample_rate=44100).embedding
    assert float(at_16k @ at_44k) > 0.99


def test_verify_same_reader_accepts_and_synthetic_voice_rejects(verifier: GE2ESpeakerVerifier) -> None:
    same = verifier.verify(LIBRIVOX[0], LIBRIVOX[3])
    other = verifier.verify(LIBRIVOX[0], DATA / "synthetic" / "flite_awb_2.flac")
    assert isinstance(same, VerificationOutput) and same.scoring == "cosine"
    assert same.is_same_speaker and not other.is_same_speaker
    assert same.score > 0.75 > other.score
    other_reader = load_audio(DATA / "silero" / "test.wav").samples[:SILERO_SEGMENT]
    pair = verifier.verify([LIBRIVOX[0], LIBRIVOX[1]], [LIBRIVOX[2], (other_reader, 16000)])
    assert [p.is_same_speaker for p in pair] == [True, False]


def test_bad_input_raises_clear_errors(verifier: GE2ESpeakerVerifier) -> None:
    with pytest.raises(AudioError, match="sample_rate"):
        verifier.embed(np.zeros(16000, np.float32))
    with pytest.raises(AudioError, match="digital silence"):
        verifier.embed(np.zeros(16000, np.float32), sample_rate=16000)
    with pytest.raises(InferenceOptionError, match="item by item"):
        verifier.verify(LIBRIVOX[0], [LIBRIVOX[1]])
    with pytest.raises(InferenceOptionError, match="no PLDA back-end"):
        verifier.verify(LIBRIVOX[0], LIBRIVOX[1], scoring="backend")


def test_missing_resemblyzer_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.distribution

    def fake(name: str) -> importlib.metadata.Distribution:
        if name == "resemblyzer":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", fake)
    model = GE2ESpeakerVerifier.from_pretrained(device="cpu")
    with pytest.raises(CheckpointNotFoundError, match=r"pip install resemblyzer==0\.1\.4.*local path or hub id"):
        model.load()


# ----------------------------------------------------------------------------- PLDA back-end
def test_plda_backend_beats_cosine_on_held_out_sentences_and_survives_save_load(
    verifier: GE2ESpeakerVerifier, tmp_path: Path
) -> None:
    """Speakers: 12 synthetic voices + 2 real readers. The back-end (default settings: LDA to
    num_speakers - 1 = 13 dims, LNorm, SPLDA, Gaussian calibration) is trained on 2 s crops of
    sentences 1-2 (silero: segments 1-3) and scored on the other, unseen utterances."""
    runtime = verifier.runtime
    from voicehub.architectures.ge2e import preprocess

    train_crops, train_labels, test_waves, test_labels = [], [], [], []
    for speaker, number, samples in _corpus():
        if _is_training(speaker, number):
            kept = preprocess(samples, runtime.config)
            for start in range(0, max(1, len(kept) - CROP + 1), CROP_HOP):
                train_crops.append(kept[start : start + CROP])
                train_labels.append(speaker)
        else:
            test_waves.append(samples)
            test_labels.append(speaker)
    with torch.no_grad():
        train = runtime.embed_utterances([torch.from_numpy(c) for c in train_crops]).numpy()
    test = np.stack([o.embedding for o in verifier.embed(test_waves, sample_rate=16000)])
    labels = np.asarray(test_labels)
    assert len(set(train_labels)) == 14 and len(test_labels) == 30

    backend = PLDABackend.fit(train, train_labels)
    cosine_eer = compute_eer(*_trials(test @ test.T, labels))
    plda_scores = backend.score(test, test)
    plda_eer = compute_eer(*_trials(plda_scores, labels))
    assert plda_eer < cosine_eer, (plda_eer, cosine_eer)
    assert plda_eer < 0.02 < cosine_eer  # measured (ROC convex hull EER): 0.0092 vs 0.046

    directory = backend.save(tmp_path / "backend")
    assert sorted(p.name for p in directory.iterdir()) == ["calibration.h5", "plda.h5", "transform.h5"]
    np.testing.assert_array_equal(PLDABackend.load(directory).score(test, test), plda_scores)
    np.save(tmp_path / "test.npy", test)
    script = f"""
import numpy as np
from voicehub.hyperion.np import HyperNPModel
d = {str(directory)!r}
transform, plda, calibration = (HyperNPModel.auto_load(f"{{d}}/{{n}}.h5") for n in ("transform", "plda", "calibration"))
x = transform.predict(np.load({str(tmp_path / "test.npy")!r}).astype(np.float64))
np.save({str(tmp_path / "fresh.npy")!r}, calibration.predict(plda.llr_1vs1(x, x)))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    np.testing.assert_array_equal(np.load(tmp_path / "fresh.npy"), plda_scores)

    verifier.set_backend(backend)
    try:
        decision = verifier.verify(LIBRIVOX[3], LIBRIVOX[4])
        assert decision.scoring == "plda+calibration" and decision.is_same_speaker
        a, b = verifier.embed([LIBRIVOX[3], LIBRIVOX[4]])
        assert decision.score == pytest.approx(float(backend.score(a.embedding, b.embedding)[0, 0]), abs=1e-9)
        forced = verifier.verify(LIBRIVOX[3], LIBRIVOX[4], scoring="cosine")
        assert forced.scoring == "cosine"
        saved = verifier.save_pretrained(tmp_path / "saved")
        assert (saved / "encoder" / "model.safetensors").is_file() and (saved / "backend" / "plda.h5").is_file()
        reloaded = GE2ESpeakerVerifier.from_pretrained(saved, device="cpu")
        again = reloaded.verify(LIBRIVOX[3], LIBRIVOX[4])
        assert again.scoring == "plda+calibration" and again.score == pytest.approx(decision.score, abs=1e-9)
    finally:
        verifier.set_backend(None)
