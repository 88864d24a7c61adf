"""Optimization passes and bfloat16 on ``sv_ge2e``, as the ``ge2e`` architecture declares them, on real speech."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub.architectures.ge2e.registration import ARCHITECTURE
from voicehub.models.sv_ge2e.wrapper import GE2ESpeakerVerifier

ROOT = Path(__file__).resolve().parents[3]
SPEECH = ROOT / "tests" / "data" / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav"
OTHER = ROOT / "tests" / "data" / "synthetic" / "flite_awb_1.flac"


def _cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    return 1.0 - float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return GE2ESpeakerVerifier.from_pretrained(device="cpu").embed(SPEECH).embedding


@pytest.mark.parametrize(
    ("plan", "max_distance"),
    [
        (("eval-mode", "inference-mode", "threads"), 1e-6),
        (("dtype",), 1e-3),  # bfloat16 weights: measured 8.5e-5
    ],
)
def test_ge2e_declared_passes_keep_the_embedding(
    reference: np.ndarray, plan: tuple[str, ...], max_distance: float
) -> None:
    assert set(plan) <= set(ARCHITECTURE.optimization_passes)
    model = GE2ESpeakerVerifier.from_pretrained(device="cpu")
    result = model.apply_optimization_plan(plan, mode="inference")
    try:
        assert {e["metadata"]["outcome"] for e in result.manifest()["passes"]} == {"configured"}
        optimized = model.embed(SPEECH).embedding
        assert not model.verify(SPEECH, OTHER).is_same_speaker
    finally:
        model.restore_optimization_plan("inference")
    assert _cosine_distance(optimized, reference) <= max_distance
    np.testing.assert_array_equal(model.embed(SPEECH).embedding, reference)


def test_int8_dynamic_is_declined_as_measured_unsafe() -> None:
    assert "int8-dynamic-inference-unsafe" in ARCHITECTURE.features
    model = GE2ESpeakerVerifier.from_pretrained(device="cpu")
    result = model.apply_optimization_plan("int8-dynamic", mode="inference")
    try:
        entry = result.manifest()["passes"][0]
        assert entry["metadata"]["outcome"] == "not-applicable"
        assert "int8-dynamic-inference-unsafe" in entry["metadata"]["reason"]
    finally:
        model.restore_optimization_plan("inference")


def test_ge2e_runs_in_bfloat16_when_asked(reference: np.ndarray) -> None:
    assert "bfloat16" in ARCHITECTURE.dtypes
    model = GE2ESpeakerVerifier.from_pretrained(device="cpu", dtype="bfloat16")
    embedding = model.embed(SPEECH).embedding
    assert next(model.runtime.module.parameters()).dtype == torch.bfloat16 and embedding.dtype == np.float32
    assert _cosine_distance(embedding, reference) < 1e-3
