"""The optimized SPLDA paths equal straightforward reference implementations.

* scoring: the augmented single-product LLR grid equals the per-term quadratic form;
* statistics: the sparse class sums equal ``class_stats``;
* training: the EM epoch on precomputed statistics (eigenbasis M-step, per-size sums, cached
  log det W) equals the previous implementation, written out below in the original basis, for
  every combination of update flags, diagonal W and shrinkage.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from scipy import linalg

from voicehub.hyperion.errors import HyperionInputError
from voicehub.hyperion.np import SPLDA
from voicehub.hyperion.np._checks import as_labels, class_stats
from voicehub.hyperion.np.linalg import gram
from voicehub.hyperion.np.plda import _class_sums, _EMStats, _Scorer

_LOG_2PI = float(np.log(2 * np.pi))


@pytest.fixture(autouse=True)
def _one_blas_thread() -> Iterator[None]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _data(dim: int = 12, y_dim: int = 5, classes: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    counts = rng.integers(2, 9, classes)
    labels = np.repeat(np.arange(classes), counts)
    v = rng.standard_normal((y_dim, dim))
    x = 0.3 + rng.standard_normal((classes, y_dim))[labels] @ v + 0.7 * rng.standard_normal((labels.size, dim))
    perm = rng.permutation(labels.size)  # labels not grouped: exercises the unsorted path
    return x[perm], labels[perm], rng.standard_normal((7, dim))


def _reference_llr(model: SPLDA, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """Two-covariance LLR of every pair from the closed form, term by term, in the original space."""
    mu, sb, sw = model.covariances()
    total = sb + sw
    inv_tot = np.linalg.inv(total)
    # [[T, B], [B, T]]^-1 = [[Q, P], [P, Q]]; llr = -0.5 (z1'(Q - T^-1) z1 + z2'(Q - T^-1) z2 + 2 z1'P z2) + c
    joint = np.linalg.inv(np.block([[total, sb], [sb, total]]))
    d = mu.size
    q_mat, p_mat = joint[:d, :d] - inv_tot, joint[:d, d:]
    _, logdet_same = np.linalg.slogdet(np.block([[total, sb], [sb, total]]))
    _, logdet_tot = np.linalg.slogdet(total)
    const = -0.5 * (logdet_same - 2 * logdet_tot)
    z1, z2 = x1 - mu, x2 - mu
    q1 = np.einsum("ij,jk,ik->i", z1, q_mat, z1)
    q2 = np.einsum("ij,jk,ik->i", z2, q_mat, z2)
    return -0.5 * (q1[:, None] + q2[None, :] + 2 * z1 @ p_mat @ z2.T) + const


def test_augmented_product_scoring_equals_the_quadratic_form() -> None:
    x, labels, extra = _data()
    model = SPLDA(y_dim=5).fit(x, labels, epochs=4)
    x1, x2 = x[:30], np.vstack([x[30:50], extra])
    scores = model.llr_1vs1(x1, x2)
    reference = _reference_llr(model, x1, x2)
    assert scores.shape == (30, 27) and scores.dtype == np.float64 and scores.flags.c_contiguous
    np.testing.assert_allclose(scores, reference, rtol=0, atol=1e-10 * max(1.0, np.abs(reference).max()))
    # float32 and list inputs go through the same path
    np.testing.assert_allclose(model.llr_1vs1(x1.astype(np.float32).tolist(), x2), scores, atol=1e-4)
    # one row / one column
    np.testing.assert_allclose(model.llr_1vs1(x1[:1], x2[:1]), reference[:1, :1], atol=1e-10)


@pytest.mark.parametrize("zero_rows", [0, 2])
def test_low_rank_scorer_equals_the_generalized_eigenproblem_scorer(zero_rows: int) -> None:
    rng = np.random.default_rng(11 + zero_rows)
    dim, y_dim = 9, 5
    v = rng.standard_normal((y_dim, dim))
    v[:zero_rows] = 0.0  # a rank-deficient V: those directions must drop out, not divide by 0
    a = rng.standard_normal((dim, dim))
    w = np.linalg.inv(a @ a.T + 0.3 * np.eye(dim))
    mu = rng.standard_normal(dim)
    model = SPLDA(mu=mu, V=v, W=w)
    full = _Scorer.build(*model.covariances())
    low = model._scorer()
    assert low.d.size == y_dim - zero_rows
    np.testing.assert_allclose(np.sort(low.d), np.sort(full.d), rtol=1e-10)
    x1, x2 = rng.standard_normal((6, dim)) + mu, rng.standard_normal((4, dim)) + mu
    np.testing.assert_allclose(low.llr_1vs1(x1, x2), full.llr_1vs1(x1, x2), rtol=0, atol=1e-10)
    np.testing.assert_allclose(low.llr_1vs1(x1, x2), _reference_llr(model, x1, x2), rtol=0, atol=1e-10)


def test_low_rank_scorer_refuses_an_indefinite_precision() -> None:
    v = np.ones((1, 3))
    with pytest.raises(HyperionInputError, match="W is not positive definite"):
        SPLDA(mu=np.zeros(3), V=v, W=-np.eye(3)).llr_1vs1(np.zeros((1, 3)), np.ones((1, 3)))


def test_sparse_class_sums_equal_class_stats() -> None:
    x, labels, _ = _data(seed=3)
    ids, num = as_labels("t", labels, x.shape[0])
    counts, sums = _class_sums(x, ids, num)
    ref_counts, ref_sums = class_stats(x, ids, num)
    np.testing.assert_array_equal(counts, ref_counts)
    np.testing.assert_allclose(sums, ref_sums, rtol=0, atol=1e-12)
    empty_counts, empty_sums = _class_sums(np.zeros((0, 3)), np.zeros(0, dtype=np.int64), 0)
    assert empty_counts.shape == (0,) and empty_sums.shape == (0, 3)


def _reference_epoch(model: Any, counts: Any, sums: Any, scatter: Any, use_ml: bool, use_md: bool) -> float:
    """The previous SPLDA EM epoch (before the eigenbasis M-step), in the original basis."""
    mu, v, w = (np.asarray(p, dtype=np.float64) for p in (model.mu, model.V, model.W))
    num_classes, total = counts.shape[0], counts.sum()
    y_dim, x_dim = v.shape
    wv = w @ v.T
    vv = v @ wv
    lam, q = linalg.eigh(0.5 * (vv + vv.T))
    lam = np.maximum(lam, 0.0)
    gamma_q = (sums - counts[:, None] * mu) @ (wv @ q)
    inv_diag = 1.0 / (1.0 + counts[:, None] * lam)
    y_q = gamma_q * inv_diag
    logdet_l = -np.log(inv_diag).sum(axis=1)
    logpy = -0.5 * y_dim * _LOG_2PI + 0.5 * (logdet_l - np.einsum("ij,ij->i", y_q, gamma_q))
    ny_q = y_q * counts[:, None]
    py = q @ (np.diag(inv_diag.sum(axis=0)) + y_q.T @ y_q) @ q.T
    ry = q @ (np.diag((counts[:, None] * inv_diag).sum(axis=0)) + ny_q.T @ y_q) @ q.T
    ry1 = ny_q.sum(axis=0) @ q.T
    cy = (sums.T @ y_q) @ q.T
    y_sum = y_q.sum(axis=0) @ q.T
    f_tot = sums.sum(axis=0)
    logdet_w = np.linalg.slogdet(w)[1]
    fmu = np.outer(f_tot, mu)
    s_hat = scatter - fmu - fmu.T + total * np.outer(mu, mu)
    elbo = 0.5 * (-total * x_dim * _LOG_2PI + total * logdet_w - float(np.sum(w * s_hat)))
    elbo += -0.5 * num_classes * y_dim * _LOG_2PI - float(logpy.sum())
    if use_ml:
        r_tilde = np.block([[ry, ry1[:, None]], [ry1[None, :], np.array([[total]])]])
        c_tilde = np.hstack([cy, f_tot[:, None]])
        if model.update_mu and model.update_V:
            v_tilde = np.linalg.solve(r_tilde, c_tilde.T)
            v, mu = v_tilde[:-1], v_tilde[-1]
        elif model.update_mu:
            mu = (f_tot - ry1 @ v) / total
        elif model.update_V:
            v = np.linalg.solve(ry, cy.T - np.outer(ry1, mu))
        if model.update_W:
            v_tilde = np.vstack([v, mu])
            cvt = c_tilde @ v_tilde
            cov_w = (scatter - cvt - cvt.T + v_tilde.T @ r_tilde @ v_tilde) / total
            cov_w = 0.5 * (cov_w + cov_w.T)
            if model.shrinkage:
                target = np.trace(cov_w) / x_dim
                cov_w = (1 - model.shrinkage) * cov_w + model.shrinkage * target * np.eye(x_dim)
            model.W = np.linalg.inv(cov_w) if model.fullcov_W else np.diag(1.0 / np.diag(cov_w))
        model.mu, model.V = mu, v
    if use_md:
        mu_y = y_sum / num_classes
        if model.update_mu:
            model.mu = model.mu + mu_y @ model.V
        if model.update_V:
            cov_y = py / num_classes - np.outer(mu_y, mu_y)
            model.V = np.linalg.cholesky(0.5 * (cov_y + cov_y.T)).T @ model.V
    return float(elbo)


_FLAGS = [
    {},
    {"update_mu": False},
    {"update_V": False},
    {"update_mu": False, "update_V": False},
    {"update_W": False},
    {"fullcov_W": False},
    {"shrinkage": 0.2},
    {"update_mu": False, "shrinkage": 0.1, "fullcov_W": False},
]


@pytest.mark.parametrize("flags", _FLAGS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "default")
@pytest.mark.parametrize("ml_md", ["ml+md", "ml", "md"])
def test_em_on_precomputed_statistics_equals_the_previous_implementation(flags: dict[str, Any], ml_md: str) -> None:
    x, labels, _ = _data(seed=5)
    start = SPLDA(y_dim=5, **flags).fit(x, labels, epochs=1)  # a common, fitted starting point
    ids, num = as_labels("t", labels, x.shape[0])
    counts, sums = class_stats(x, ids, num)
    scatter = x.T @ x
    reference = copy.deepcopy(start)
    ref_elbo = [_reference_epoch(reference, counts, sums, scatter, ml_md != "md", ml_md != "ml") for _ in range(6)]
    fitted = copy.deepcopy(start).fit(x, labels, epochs=6, ml_md=ml_md)  # type: ignore[arg-type]
    for key in ("mu", "V", "W"):
        got, want = np.asarray(getattr(fitted, key)), np.asarray(getattr(reference, key))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10 * max(1.0, np.abs(want).max()), err_msg=key)
    np.testing.assert_allclose(fitted.elbo_history, ref_elbo, rtol=1e-10)


def test_emstats_remember_the_log_det_of_the_last_precision_only() -> None:
    x, labels, _ = _data(seed=7)
    ids, num = as_labels("t", labels, x.shape[0])
    counts, sums = _class_sums(x, ids, num)
    stats = _EMStats.build(counts, sums, gram(x))
    assert stats.num_classes == num and stats.total == x.shape[0]
    np.testing.assert_allclose(stats.f_tot, x.sum(axis=0), atol=1e-12)
    np.testing.assert_array_equal(np.repeat(stats.sizes, stats.size_counts.astype(int)), np.sort(counts))
    model = SPLDA(y_dim=4).fit(x, labels, epochs=1)
    model._em_step(stats, True, False)  # the M-step records (W, log det W)
    w = model.W
    assert stats.w_logdet[0] is w
    np.testing.assert_allclose(stats.logdet_w(w), np.linalg.slogdet(w)[1], rtol=1e-12)
    other = w * 2.0  # a different array is factored, not looked up
    np.testing.assert_allclose(stats.logdet_w(other), np.linalg.slogdet(other)[1], rtol=1e-12)
