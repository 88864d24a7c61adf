"""LinearGBE, GaussCalibration, BinaryLogisticRegression and AdaptSNorm."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from voicehub.hyperion.errors import HyperionInputError, NotFittedError
from voicehub.hyperion.metrics import compute_act_dcf, compute_cllr
from voicehub.hyperion.np import AdaptSNorm, BinaryLogisticRegression, GaussCalibration, HyperNPModel, LinearGBE


@pytest.fixture(autouse=True)
def _one_blas_thread() -> Iterator[None]:
    """Small matrices on a loaded 2-core machine: OpenBLAS threads only spin, so use one."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # an optional speed-up for the tests, not a requirement
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _gaussian_scores(seed: int = 0, n_tar: int = 4000, n_non: int = 16000) -> tuple[np.ndarray, np.ndarray]:
    """Raw scores whose true LLR is known: tar ~ N(4, 2^2), non ~ N(0, 2^2) -> llr = s - 2."""
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.normal(4.0, 2.0, n_tar), rng.normal(0.0, 2.0, n_non)])
    labels = np.concatenate([np.ones(n_tar, int), np.zeros(n_non, int)])
    return scores, labels


def test_gauss_calibration_recovers_the_true_llr_map(tmp_path: Path) -> None:
    scores, labels = _gaussian_scores()
    model = GaussCalibration().fit(scores, labels)
    a, b = model.scale_bias
    assert a == pytest.approx(1.0, abs=0.03) and b == pytest.approx(-2.0, abs=0.06)
    assert model.prior == pytest.approx(0.2)
    loaded = HyperNPModel.auto_load(model.save(tmp_path / "cal.h5"))
    assert isinstance(loaded, GaussCalibration) and loaded.prior == pytest.approx(0.2)
    np.testing.assert_array_equal(loaded.predict(scores), model.predict(scores))


def test_logistic_regression_calibration_recovers_the_true_llr_map() -> None:
    scores, labels = _gaussian_scores(seed=1)
    model = BinaryLogisticRegression(prior=0.5).fit(scores, labels)
    assert model.A is not None and model.b is not None
    assert float(model.A[0, 0]) == pytest.approx(1.0, abs=0.05)
    assert float(model.b[0]) == pytest.approx(-2.0, abs=0.1)
    llr = model.predict(scores)
    tar, non = llr[labels == 1], llr[labels == 0]
    raw_tar, raw_non = scores[labels == 1], scores[labels == 0]
    assert compute_cllr(tar, non) < compute_cllr(raw_tar, raw_non)  # calibration lowers Cllr
    assert compute_act_dcf(tar, non, 0.5) == pytest.approx(compute_act_dcf(raw_tar - 2.0, raw_non - 2.0, 0.5), abs=0.01)


def test_calibrators_check_labels_and_fitting() -> None:
    with pytest.raises(HyperionInputError, match="both target and non-target"):
        GaussCalibration().fit(np.ones(4), np.ones(4, int))
    with pytest.raises(HyperionInputError, match=r"0 .non-target. or 1"):
        BinaryLogisticRegression().fit(np.ones(4), np.array([0, 1, 2, 1]))
    with pytest.raises(NotFittedError):
        GaussCalibration().predict(np.ones(3))


def test_linear_gbe_classifies_and_normalizes(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    labels = np.repeat(np.arange(4), 300)
    means = rng.standard_normal((4, 6)) * 3
    x = means[labels] + rng.standard_normal((1200, 6))
    model = LinearGBE().fit(x, labels)
    logits = model.predict(x)
    assert logits.shape == (1200, 4)
    assert np.mean(np.argmax(logits, axis=1) == labels) > 0.95
    post = model.predict(x, normalize=True)
    np.testing.assert_allclose(np.exp(post).sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(model.mu, means, atol=0.2)
    loaded = HyperNPModel.auto_load(model.save(tmp_path / "gbe.h5"))
    np.testing.assert_array_equal(loaded.predict(x), logits)  # type: ignore[attr-defined]
    with pytest.raises(HyperionInputError, match="int labels"):
        LinearGBE().fit(x, labels.astype(float))


def _as_norm_reference(s: np.ndarray, ct: np.ndarray, ec: np.ndarray, nbest: int, discard: int) -> np.ndarray:
    """Per-trial definition of AS-Norm, written out with loops and full sorts."""
    out = np.empty_like(s)
    for i in range(s.shape[0]):
        for j in range(s.shape[1]):
            near_test = np.argsort(-ct[:, j], kind="stable")[discard : discard + nbest]
            near_enroll = np.argsort(-ec[i], kind="stable")[discard : discard + nbest]
            z = (s[i, j] - ec[i, near_test].mean()) / max(ec[i, near_test].std(), 1e-5)
            t = (s[i, j] - ct[near_enroll, j].mean()) / max(ct[near_enroll, j].std(), 1e-5)
            out[i, j] = (z + t) / np.sqrt(2)
    return out


@pytest.mark.parametrize(("cohort", "nbest", "discard"), [(30, 5, 0), (30, 7, 2), (200, 10, 1), (12, 50, 0)])
def test_as_norm_matches_the_per_trial_definition(cohort: int, nbest: int, discard: int) -> None:
    rng = np.random.default_rng(cohort + nbest)
    s = rng.normal(size=(6, 5)) * 3
    ct = rng.normal(size=(cohort, 5)) * 2 + 1
    ec = rng.normal(size=(6, cohort)) * 2 - 1
    kept = (s.copy(), ct.copy(), ec.copy())
    out = AdaptSNorm(nbest=nbest, nbest_discard=discard).predict(s, ct, ec)
    np.testing.assert_allclose(out, _as_norm_reference(s, ct, ec, min(nbest, cohort - discard), discard), atol=1e-12)
    for before, after in zip(kept, (s, ct, ec), strict=True):
        np.testing.assert_array_equal(before, after)  # inputs untouched


def test_as_norm_honours_std_floor_and_checks_shapes() -> None:
    s = np.ones((2, 3))
    flat_ct, flat_ec = np.zeros((4, 3)), np.zeros((2, 4))
    out = AdaptSNorm(nbest=2, std_floor=0.5).predict(s, flat_ct, flat_ec)
    np.testing.assert_allclose(out, (1 / 0.5 + 1 / 0.5) / np.sqrt(2))
    with pytest.raises(HyperionInputError, match=r"scores_coh_test \(C, T\)"):
        AdaptSNorm().predict(s, np.zeros((4, 2)), flat_ec)
    with pytest.raises(HyperionInputError, match="too small"):
        AdaptSNorm(nbest_discard=4).predict(s, flat_ct, flat_ec)


def test_calibration_accepts_float_labels_that_are_exactly_zero_or_one() -> None:
    scores = np.array([2.0, 3.0, 2.5, -1.0, 0.0, -0.5])
    as_int = np.array([1, 1, 1, 0, 0, 0])
    from_float = GaussCalibration().fit(scores, as_int.astype(np.float64))
    np.testing.assert_array_equal(from_float.predict(scores), GaussCalibration().fit(scores, as_int).predict(scores))
    assert BinaryLogisticRegression().fit(scores, as_int.astype(np.float32)).A is not None
    with pytest.raises(HyperionInputError, match=r"exactly 0 \(non-target\) or 1 \(target\); also found \[0.5\]"):
        GaussCalibration().fit(scores, np.array([1, 1, 0.5, 0, 0, 0]))


def test_calibration_of_constant_scores_is_refused_and_leaves_the_model_unchanged() -> None:
    model = GaussCalibration().fit(np.array([1.0, 2.0, -1.0, 0.0]), np.array([1, 1, 0, 0]))
    before = model.scale_bias
    with pytest.raises(HyperionInputError, match="zero variance"):
        model.fit(np.array([1.0, 1.0, 0.0, 0.0]), np.array([1, 1, 0, 0]))
    assert model.scale_bias == before


def test_a_failed_linear_gbe_refit_leaves_the_model_unchanged() -> None:
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 10)
    x = rng.standard_normal((30, 4)) + labels[:, None]
    model = LinearGBE().fit(x, labels)
    mu, w = model.mu.copy(), model.W.copy()
    with pytest.raises(HyperionInputError, match="no within-class variation"):
        model.fit(x[:3], np.arange(3))
    model.update_W = False
    with pytest.raises(HyperionInputError, match="kept W"):
        model.fit(x[:, :3], labels)
    np.testing.assert_array_equal(model.mu, mu)
    np.testing.assert_array_equal(model.W, w)
