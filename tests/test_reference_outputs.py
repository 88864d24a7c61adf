"""The built-in models give bit-identical outputs to those recorded for this CPU and PyTorch.

The arrays were first recorded on ``main`` at 9284b73, before the runtime-seam refactoring, by
``tools/record_reference_outputs.py`` (which calls :func:`all_outputs` below) into
``tests/data/reference_outputs.npz``, on an AVX2 machine. Equality is exact: a change that moves code
without meaning to change results must not change a bit. They are computed through the public API
only, so that they survive refactorings of the internals.

Bits are exact only for the same kernels: PyTorch, MKL and oneDNN pick code paths by CPU (an
AVX-512 AMD machine gave float differences of 1e-16 to 1e-7 from the first recording, integer
outputs equal). So a recording is kept per CPU signature (:func:`cpu_signature`: PyTorch version,
its CPU capability, the CPU vendor, family and model, the intra-op thread count) under
``tests/data/reference_outputs/``,
made by the same tool from a tree whose outputs were accepted (its line in ``PROVENANCE.md`` says
which).
Where one exists for this machine the comparison is exact; elsewhere it is against the first
recording, integer arrays exactly and float arrays within :data:`CROSS_CPU_TOLERANCE`. A
machine's recording must itself agree with the first one within that tolerance.

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
from typing import NamedTuple

import numpy as np
import pytest

import voicehub
from voicehub.core import load_audio

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
REFERENCE_FILE = DATA / "reference_outputs.npz"
"""The first recording (main at 9284b73, an AVX2 machine)."""
PER_CPU_DIRECTORY = DATA / "reference_outputs"
"""Recordings per :func:`cpu_signature`, compared exactly on a machine with that signature."""

CROSS_CPU_TOLERANCE = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-12}
"""Largest |computed - recorded| relative to the array's largest magnitude, for float arrays compared
with a recording from another CPU (measured on an AVX-512 AMD machine against the first recording:
2.2e-7 for float32 x-vector embeddings, 7.1e-15 for float64 PLDA scores, whose fit solves linear
systems; 1.5e-8 for Silero probabilities). A changed model moves them by far more."""
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


def cpu_signature() -> str:
    """``torch<version>-<capability>-<vendor>-f<family>m<model>-<n>threads``, e.g.
    ``torch2.15.0-AVX512-AuthenticAMD-f26m2-2threads``: what picks the float kernels and how
    reductions are split. The CPU vendor, family and model come from ``/proc/cpuinfo`` (``unknown``
    where there is none); the intra-op threads are those a fresh process starts with.

    The family and model are in because the capability and vendor were not enough: NumPy's OpenBLAS
    picks its kernels by CPU model, and two AVX-512 AMD machines (the first with the recording of
    2026-12-02, the second family 26 model 2, where OpenBLAS 0.3.31 runs its Haswell kernels) gave
    the same GE2E embeddings to the bit but cosine and PLDA scores (float64, NumPy) 2.2e-16 and
    6.6e-12 apart."""
    import torch

    fields: dict[str, str] = {}
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                break  # the first processor's block is enough
            name, _, value = line.partition(":")
            fields.setdefault(name.strip(), value.strip())
    vendor = fields.get("vendor_id") or "unknown"
    model = f"f{fields.get('cpu family') or 'unknown'}m{fields.get('model') or 'unknown'}"
    version = torch.__version__.split("+", 1)[0]
    capability = torch.backends.cpu.get_cpu_capability()
    return f"torch{version}-{capability}-{vendor}-{model}-{torch.get_num_threads()}threads"


def per_cpu_file() -> Path:
    """Where this machine's recording lives (it may not exist)."""
    return PER_CPU_DIRECTORY / f"{cpu_signature()}.npz"


def all_outputs() -> dict[str, np.ndarray]:
    """Every recorded array, by key."""
    with tempfile.TemporaryDirectory() as directory:
        return {**vad_outputs(), **sv_outputs(), **xvector_outputs(Path(directory) / "xvector")}


def _load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


class _Reference(NamedTuple):
    """A recording, whether it is compared bit for bit, and its file's name for messages."""

    arrays: dict[str, np.ndarray]
    exact: bool
    source: str


@pytest.fixture(scope="module")
def recorded() -> _Reference:
    """This machine's recording (exact comparison), else the first one (see the module docstring)."""
    own = per_cpu_file()
    if own.is_file():
        return _Reference(_load(own), True, own.name)
    return _Reference(_load(REFERENCE_FILE), False, f"{REFERENCE_FILE.name} (recorded on another CPU)")


def differences(
    recorded: dict[str, np.ndarray], computed: dict[str, np.ndarray], prefix: str, exact: bool
) -> list[str]:
    """What differs between the arrays of ``prefix``: exactly, or floats within :data:`CROSS_CPU_TOLERANCE`.
    Also used by ``tools/record_reference_outputs.py`` before it writes a recording."""
    expected = sorted(key for key in recorded if key.startswith(prefix))
    assert sorted(key for key in computed if key.startswith(prefix)) == expected
    problems = []
    for key in expected:
        got, want = computed[key], recorded[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        if np.array_equal(got, want, equal_nan=want.dtype.kind == "f"):
            continue
        difference = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
        tolerance = CROSS_CPU_TOLERANCE.get(want.dtype)
        scale = max(float(np.nanmax(np.abs(want))), 1e-30) if want.size else 1.0
        if exact or tolerance is None or not difference <= tolerance * scale:  # a NaN difference fails
            problems.append(f"{key}: max abs difference {difference:.3g}")
    return problems


def _compare(recorded: _Reference, computed: dict[str, np.ndarray], prefix: str) -> None:
    problems = differences(recorded.arrays, computed, prefix, recorded.exact)
    if problems:
        how = "bit for bit" if recorded.exact else "integers exactly, floats within CROSS_CPU_TOLERANCE"
        pytest.fail(f"differs from {recorded.source} ({how}; this CPU: {cpu_signature()}): " + "; ".join(problems))


def test_every_per_cpu_recording_agrees_with_the_first_within_the_cross_cpu_tolerance() -> None:
    """A machine's recording holds the same outputs as the first one, up to float rounding of its
    kernels: it cannot record a changed model as the reference."""
    first = _load(REFERENCE_FILE)
    for path in sorted(PER_CPU_DIRECTORY.glob("*.npz")):
        arrays = _load(path)
        assert sorted(arrays) == sorted(first), path.name
        problems = differences(first, arrays, "", exact=False)
        assert not problems, f"{path.name}: {'; '.join(problems)}"


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
def test_vad_probabilities_segments_and_stream_events_are_bit_identical(recorded: _Reference, tmp_path: Path) -> None:
    computed = _computed_in_a_fresh_process("vad_outputs", tmp_path)
    assert len(computed["vad_silero/test.wav/segments"]) == 19  # the segment count other tests rely on
    _compare(recorded, computed, "vad_")


@pytest.mark.slow
def test_ge2e_embeddings_and_cosine_and_plda_scores_are_bit_identical(recorded: _Reference, tmp_path: Path) -> None:
    _compare(recorded, _computed_in_a_fresh_process("sv_outputs", tmp_path), "sv_ge2e/")


@pytest.mark.slow
def test_a_saved_and_reloaded_xvector_encoder_gives_bit_identical_embeddings(
    recorded: _Reference, tmp_path: Path
) -> None:
    _compare(recorded, _computed_in_a_fresh_process("xvector_outputs", tmp_path), "sv_xvector/")
