"""The built-in models give bit-identical outputs to those recorded in ``tests/data/reference_outputs.npz``.

The arrays were recorded on ``main`` at 9284b73, before the runtime-seam refactoring, by
``tools/record_reference_outputs.py`` (which calls :func:`all_outputs` below). Equality is exact: a change
that moves code without meaning to change results must not change a bit. They are computed through the
public API only, so that they survive refactorings of the internals.

What is recorded (every key below is one array):

* ``vad_silero/<clip>/probabilities``: float32 (num_chunks,) per-32-ms speech probabilities of the
  default Silero VAD (v6 weights from the installed wheel) on ``silero/test.wav`` (60 s, 16 kHz),
  the same clip resampled to 8 kHz (the 8 kHz branch) and ``silero/test.mp3`` (44.1 kHz stereo);
  ``.../segments``: int64 (num_segments, 2) start and end samples.
* ``vad_silero/stream/events``: int64 (num_events, 2) of (is_start, sample) for 250 ms pushes.
* ``vad_webrtc/test.wav/probabilities`` and ``.../segments``: the WebRTC detector, same layout.
* ``sv_ge2e/embeddings``: float32 (num_clips, 256) GE2E embeddings of the five LibriVox clips and
  four synthetic voices; ``sv_ge2e/cosine``: float64 (num_clips, num_clips) scores of every pair;
  ``sv_ge2e/plda``: float64 (num_clips, num_clips) scores of an uncalibrated PLDA back-end fitted on
  the synthetic corpus (12 voices x 4 sentences) and attached to the model.
* ``sv_xvector/embeddings``: float32 (5, 32) embeddings of the LibriVox clips by a small new x-vector
  encoder (``torch.manual_seed(0)``), saved with ``save_pretrained`` and reloaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import voicehub
from voicehub.core import load_audio

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
REFERENCE_FILE = DATA / "reference_outputs.npz"
LIBRIVOX = sorted((DATA / "librivox").glob("*.wav"))
SYNTHETIC = sorted((DATA / "synthetic").glob("*.flac"))
SV_CLIPS = [*LIBRIVOX, *[path for path in SYNTHETIC if path.stem.endswith("_1")][:4]]


def _segments(output: voicehub.VADOutput) -> np.ndarray:
    return np.array([[s.start_sample, s.end_sample] for s in output.segments], dtype=np.int64).reshape(-1, 2)


def vad_outputs() -> dict[str, np.ndarray]:
    """Silero and WebRTC VAD probabilities, segments and streaming events (see the module docstring)."""
    arrays: dict[str, np.ndarray] = {}
    silero = voicehub.AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    wav = load_audio(DATA / "silero" / "test.wav")
    inputs = {
        "test.wav": DATA / "silero" / "test.wav",
        "test-8k": wav.with_sample_rate(8000),
        "test.mp3": DATA / "silero" / "test.mp3",
    }
    for name, audio in inputs.items():
        output = silero.detect(audio, return_probabilities=True)
        assert output.probabilities is not None
        arrays[f"vad_silero/{name}/probabilities"] = np.asarray(output.probabilities, dtype=np.float32)
        arrays[f"vad_silero/{name}/segments"] = _segments(output)
    session = silero.stream(wav.sample_rate)
    events = []
    for start in range(0, wav.num_samples, 4000):
        events += session.push(wav.samples[start : start + 4000])
    events += session.flush()
    arrays["vad_silero/stream/events"] = np.array(
        [[1 if event.kind == "start" else 0, event.sample] for event in events], dtype=np.int64
    ).reshape(-1, 2)
    webrtc = voicehub.AutoModel.from_pretrained(model_type="vad_webrtc")
    output = webrtc.detect(inputs["test.wav"], return_probabilities=True)
    assert output.probabilities is not None
    arrays["vad_webrtc/test.wav/probabilities"] = np.asarray(output.probabilities, dtype=np.float32)
    arrays["vad_webrtc/test.wav/segments"] = _segments(output)
    return arrays


def sv_outputs() -> dict[str, np.ndarray]:
    """GE2E embeddings and cosine / PLDA scores (see the module docstring)."""
    model = voicehub.AutoModel.from_pretrained(model_type="sv_ge2e", device="cpu")
    outputs = model.embed([str(path) for path in SV_CLIPS])
    count = len(outputs)
    cosine = np.array([[model.score_embeddings(a, b).score for b in outputs] for a in outputs], dtype=np.float64)
    labels = [path.stem.rsplit("_", 1)[0] for path in SYNTHETIC]
    model.fit_backend([str(path) for path in SYNTHETIC], labels, calibrate=False)
    plda = np.array([[model.score_embeddings(a, b).score for b in outputs] for a in outputs], dtype=np.float64)
    return {
        "sv_ge2e/embeddings": np.stack([o.embedding for o in outputs]).astype(np.float32),
        "sv_ge2e/cosine": cosine.reshape(count, count),
        "sv_ge2e/plda": plda.reshape(count, count),
    }


def xvector_outputs(directory: Path) -> dict[str, np.ndarray]:
    """x-vector embeddings of a new encoder (seeded initialisation), saved into ``directory`` and reloaded."""
    import torch

    torch.manual_seed(0)
    from voicehub.architectures.xvector import XVectorConfig

    config = voicehub.AutoConfig.for_model("sv_xvector", encoder=XVectorConfig(channels=64, embedding_dim=32))
    model = voicehub.AutoModel.from_pretrained(model_type="sv_xvector", config=config, device="cpu")
    model.load_for_training()
    model.save_pretrained(directory)
    reloaded = voicehub.AutoModel.from_pretrained(directory, device="cpu")
    outputs = reloaded.embed([str(path) for path in LIBRIVOX])
    return {"sv_xvector/embeddings": np.stack([o.embedding for o in outputs]).astype(np.float32)}


def all_outputs() -> dict[str, np.ndarray]:
    """Every recorded array, by key."""
    with tempfile.TemporaryDirectory() as directory:
        return {**vad_outputs(), **sv_outputs(), **xvector_outputs(Path(directory) / "xvector")}


@pytest.fixture(scope="module")
def recorded() -> dict[str, np.ndarray]:
    with np.load(REFERENCE_FILE) as data:
        return {key: data[key] for key in data.files}


def _compare(recorded: dict[str, np.ndarray], computed: dict[str, np.ndarray], prefix: str) -> None:
    expected = sorted(key for key in recorded if key.startswith(prefix))
    assert sorted(computed) == expected
    for key in expected:
        assert computed[key].dtype == recorded[key].dtype and computed[key].shape == recorded[key].shape, key
        if not np.array_equal(computed[key], recorded[key]):
            difference = np.max(np.abs(computed[key].astype(np.float64) - recorded[key].astype(np.float64)))
            pytest.fail(f"{key}: differs from the recorded output (max abs difference {difference:.3g})")


def _computed_in_a_fresh_process(part: str, directory: Path) -> dict[str, np.ndarray]:
    """Run ``part`` (``vad_outputs``, ``sv_outputs`` or ``xvector_outputs``) of this module in a new interpreter.

    The recording was made in a fresh process; so is the comparison. In a long test session, torch's
    CPU kernels can take other code paths (thread counts left by earlier tests, buffer alignment)
    whose float sums differ in the last bit, which would say nothing about the code under test.
    """
    out = directory / f"{part}.npz"
    args = f"Path({str(directory / 'xvector')!r})" if part == "xvector_outputs" else ""
    script = (
        "import importlib.util, numpy as np\n"
        "from pathlib import Path\n"
        f"spec = importlib.util.spec_from_file_location('reference_outputs', {__file__!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        f"np.savez(Path({str(out)!r}), allow_pickle=False, **module.{part}({args}))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900, env=env)
    assert result.returncode == 0, result.stderr
    with np.load(out) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.slow
def test_vad_probabilities_segments_and_stream_events_are_bit_identical(
    recorded: dict[str, np.ndarray], tmp_path: Path
) -> None:
    computed = _computed_in_a_fresh_process("vad_outputs", tmp_path)
    assert len(computed["vad_silero/test.wav/segments"]) == 19  # the segment count other tests rely on
    _compare(recorded, computed, "vad_")


@pytest.mark.slow
def test_ge2e_embeddings_and_cosine_and_plda_scores_are_bit_identical(
    recorded: dict[str, np.ndarray], tmp_path: Path
) -> None:
    _compare(recorded, _computed_in_a_fresh_process("sv_outputs", tmp_path), "sv_ge2e/")


@pytest.mark.slow
def test_a_saved_and_reloaded_xvector_encoder_gives_bit_identical_embeddings(
    recorded: dict[str, np.ndarray], tmp_path: Path
) -> None:
    _compare(recorded, _computed_in_a_fresh_process("xvector_outputs", tmp_path), "sv_xvector/")
