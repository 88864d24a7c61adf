"""SPLDA and FRPLDA: EM recovers known covariances, exact LLRs, multi-session scoring, persistence."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from voicehub.hyperion.errors import HyperionInputError, NotFittedError
from voicehub.hyperion.metrics import compute_eer
from voicehub.hyperion.np import FRPLDA, SPLDA, HyperNPModel, LNorm


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


def _truth(dim: int, y_dim: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((y_dim, dim)) * 1.5
    a = rng.standard_normal((dim, dim)) * 0.4
    sw = a @ a.T + 0.5 * np.eye(dim)
    mu = rng.standard_normal(dim)
    return mu, v, sw


def _sample(mu: np.ndarray, v: np.ndarray, sw: np.ndarray, classes: int, per: int, seed: int):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes), per)
    y = rng.standard_normal((classes, v.shape[0])) @ v
    x = mu + y[labels] + rng.standard_normal((labels.size, mu.size)) @ np.linalg.cholesky(sw).T
    return x, labels


def _two_cov_llr(x1: np.ndarray, x2: np.ndarray, mu: np.ndarray, sb: np.ndarray, sw: np.ndarray) -> float:
    """Brute-force LLR: joint Gaussian of the stacked pair under both hypotheses."""
    total = sb + sw
    same = np.block([[total, sb], [sb, total]])
    diff = np.block([[total, np.zeros_like(sb)], [np.zeros_like(sb), total]])
    z = np.concatenate([x1 - mu, x2 - mu])
    return float(multivariate_normal(cov=same).logpdf(z) - multivariate_normal(cov=diff).logpdf(z))


def test_splda_em_recovers_known_between_and_within_covariances() -> None:
    mu, v, sw = _truth(dim=8, y_dim=3, seed=0)
    x, labels = _sample(mu, v, sw, classes=600, per=12, seed=1)
    model = SPLDA(y_dim=3).fit(x, labels, epochs=25)
    _, sb_hat, sw_hat = model.covariances()
    sb = v.T @ v
    assert np.linalg.norm(sb_hat - sb) / np.linalg.norm(sb) < 0.12
    assert np.linalg.norm(sw_hat - sw) / np.linalg.norm(sw) < 0.03
    np.testing.assert_allclose(model.mu, mu, atol=0.25)
    assert np.all(np.diff(model.elbo_history[3:]) > -1e-6 * abs(model.elbo_history[-1]))


def test_frplda_em_recovers_known_between_and_within_covariances() -> None:
    mu, v, sw = _truth(dim=5, y_dim=5, seed=2)
    x, labels = _sample(mu, v, sw, classes=800, per=10, seed=3)
    model = FRPLDA().fit(x, labels, epochs=20)
    _, sb_hat, sw_hat = model.covariances()
    sb = v.T @ v
    assert np.linalg.norm(sb_hat - sb) / np.linalg.norm(sb) < 0.12
    assert np.linalg.norm(sw_hat - sw) / np.linalg.norm(sw) < 0.03


@pytest.mark.parametrize("cls", [SPLDA, FRPLDA])
def test_llr_1vs1_equals_the_brute_force_gaussian_llr(cls: type) -> None:
    mu, v, sw = _truth(dim=4, y_dim=2, seed=4)
    x, labels = _sample(mu, v, sw, classes=60, per=5, seed=5)
    model = cls().fit(x, labels, epochs=5)
    m, sb, sw_hat = model.covariances()
    scores = model.llr_1vs1(x[:3], x[3:7])
    assert scores.shape == (3, 4) and scores.dtype == np.float64
    for i in range(3):
        for j in range(4):
            assert scores[i, j] == pytest.approx(_two_cov_llr(x[i], x[3 + j], m, sb, sw_hat), abs=1e-9)


def test_llr_nvsm_book_equals_the_brute_force_set_llr() -> None:
    mu, v, sw = _truth(dim=3, y_dim=2, seed=6)
    x, labels = _sample(mu, v, sw, classes=80, per=6, seed=7)
    model = SPLDA().fit(x, labels, epochs=5)
    m, sb, swh = model.covariances()
    enroll, test = x[:2], x[6:9]  # a 2-session model vs a 3-session model
    scores = model.llr_NvsM(enroll, test, ["a", "a"], ["b", "b", "b"], method="book")

    def logpdf(sets: list[np.ndarray]) -> float:
        # all vectors of one class share y: covariance Sb everywhere plus Sw on the diagonal blocks
        z = np.concatenate(sets) - np.tile(m, len(sets))
        n = len(sets)
        cov = np.kron(np.ones((n, n)), sb) + np.kron(np.eye(n), swh)
        return float(multivariate_normal(cov=cov).logpdf(z))

    expected = logpdf([*enroll, *test]) - logpdf(list(enroll)) - logpdf(list(test))
    assert scores.shape == (1, 1)
    assert scores[0, 0] == pytest.approx(expected, abs=1e-8)


def test_llr_nvsm_methods_reduce_to_1vs1_for_single_sessions() -> None:
    mu, v, sw = _truth(dim=4, y_dim=2, seed=8)
    x, labels = _sample(mu, v, sw, classes=50, per=4, seed=9)
    model = SPLDA().fit(x, labels, epochs=4)
    one = model.llr_1vs1(x[:5], x[5:9])
    for method in ("book", "vavg", "savg"):
        out = model.llr_NvsM(x[:5], x[5:9], np.arange(5), np.arange(4), method=method)  # type: ignore[arg-type]
        np.testing.assert_allclose(out, one, rtol=1e-10, atol=1e-10)


def test_llr_nvsm_groups_rows_by_sorted_labels_and_does_not_modify_inputs() -> None:
    mu, v, sw = _truth(dim=4, y_dim=2, seed=10)
    x, labels = _sample(mu, v, sw, classes=50, per=4, seed=11)
    model = SPLDA().fit(x, labels, epochs=4)
    enroll = x[:6].copy()
    kept = enroll.copy()
    out = model.llr_NvsM(enroll, x[6:9], ["z", "a", "z", "a", "m", "m"], ["t1", "t2", "t3"], method="savg")
    np.testing.assert_array_equal(enroll, kept)
    single = model.llr_1vs1(enroll, x[6:9])
    np.testing.assert_allclose(out[0], single[[1, 3]].mean(axis=0))  # "a" first
    np.testing.assert_allclose(out[2], single[[0, 2]].mean(axis=0))  # "z" last


def test_splda_scores_separate_targets_from_nontargets_and_survive_auto_load(tmp_path: Path) -> None:
    mu, v, sw = _truth(dim=16, y_dim=6, seed=12)
    x, labels = _sample(mu, v, sw, classes=200, per=8, seed=13)
    model = SPLDA(y_dim=6, name="backend").fit(x, labels, epochs=10)
    xe, _ = _sample(mu, v, sw, classes=40, per=2, seed=14)
    scores = model.llr_1vs1(xe[::2], xe[1::2])
    target = np.eye(40, dtype=bool)
    eer = compute_eer(scores[target], scores[~target])
    assert eer < 0.05
    assert scores[target].mean() > scores[~target].mean() + 5
    path = model.save(tmp_path / "plda.h5")
    loaded = HyperNPModel.auto_load(path)
    assert isinstance(loaded, SPLDA)
    np.testing.assert_array_equal(loaded.llr_1vs1(xe[::2], xe[1::2]), scores)


def test_splda_trains_on_few_hundred_256_dim_embeddings_from_few_speakers() -> None:
    # The speaker-verification use: ~300 length-normalized 256-dim embeddings of 15 speakers.
    rng = np.random.default_rng(15)
    dim, speakers, per = 256, 15, 20
    centers = rng.standard_normal((speakers, dim))
    raw = centers[np.repeat(np.arange(speakers), per)] + 0.8 * rng.standard_normal((speakers * per, dim))
    labels = np.repeat(np.arange(speakers), per)
    x = LNorm().predict(raw)
    for model in (SPLDA(), SPLDA(y_dim=10), FRPLDA()):
        model.fit(x, labels, epochs=10)
        probe_raw = centers[np.repeat(np.arange(speakers), 2)] + 0.8 * rng.standard_normal((speakers * 2, dim))
        probe = LNorm().predict(probe_raw)
        scores = model.llr_1vs1(probe[::2], probe[1::2])
        assert np.all(np.isfinite(scores))
        target = np.eye(speakers, dtype=bool)
        assert compute_eer(scores[target], scores[~target]) < 0.1
    assert SPLDA().fit(x, labels, epochs=2).y_dim == speakers - 1


def test_scoring_contracts_shapes_dtypes_and_errors() -> None:
    with pytest.raises(NotFittedError, match="SPLDA is not fitted"):
        SPLDA().llr_1vs1(np.zeros((1, 3)), np.zeros((1, 3)))
    mu, v, sw = _truth(dim=4, y_dim=2, seed=16)
    x, labels = _sample(mu, v, sw, classes=30, per=4, seed=17)
    model = SPLDA().fit(x, labels, epochs=3)
    with pytest.raises(HyperionInputError, match=r"expected x2 of shape \(num_rows, 4\), got shape \(2, 5\)"):
        model.llr_1vs1(x[:2], np.zeros((2, 5)))
    with pytest.raises(HyperionInputError, match="NaN"):
        model.llr_1vs1(np.full((1, 4), np.nan), x[:2])
    with pytest.raises(HyperionInputError, match="at least 2 classes"):
        SPLDA().fit(x, np.zeros(len(x)))
    single = model.llr_1vs1(x[:3].astype(np.float32), x[3:5])
    assert single.dtype == np.float64
    np.testing.assert_allclose(single, model.llr_1vs1(x[:3].astype(np.float32).astype(np.float64), x[3:5]))


def test_too_few_vectors_for_the_dimension_raise_unless_shrinkage_is_set() -> None:
    rng = np.random.default_rng(18)
    dim, speakers, per = 256, 10, 10  # 100 vectors: only 90 degrees of freedom for 256 dims
    centers = rng.standard_normal((speakers, dim))
    labels = np.repeat(np.arange(speakers), per)
    x = LNorm().predict(np.abs(centers[labels] + 0.8 * rng.standard_normal((speakers * per, dim))))
    with pytest.raises(HyperionInputError, match="90 degrees of freedom for a 256-dim"):
        SPLDA().fit(x, labels)
    probe = LNorm().predict(np.abs(centers[np.repeat(np.arange(speakers), 2)] + 0.8 * rng.standard_normal((20, dim))))
    target = np.eye(speakers, dtype=bool)
    for model in (SPLDA(shrinkage=0.1), FRPLDA(shrinkage=0.1)):
        scores = model.fit(x, labels, epochs=10).llr_1vs1(probe[::2], probe[1::2])
        assert np.all(np.isfinite(scores)) and np.abs(scores).max() < 1e4  # unshrunk: about 1e11
        assert compute_eer(scores[target], scores[~target]) < 0.05
        assert type(model).from_config(model.get_config()).shrinkage == 0.1


def test_shrinkage_pulls_the_within_class_covariance_towards_a_scaled_identity() -> None:
    mu, v, sw = _truth(dim=6, y_dim=2, seed=19)
    x, labels = _sample(mu, v, sw, classes=300, per=10, seed=20)
    plain = SPLDA().fit(x, labels, epochs=1)
    shrunk = SPLDA(shrinkage=0.5).fit(x, labels, epochs=1)
    sw_plain, sw_shrunk = plain.covariances()[2], shrunk.covariances()[2]
    off = ~np.eye(6, dtype=bool)
    assert np.trace(sw_shrunk) == pytest.approx(np.trace(sw_plain), rel=0.05)
    assert np.abs(sw_shrunk[off]).sum() == pytest.approx(0.5 * np.abs(sw_plain[off]).sum(), rel=0.1)


def _state(model: SPLDA | FRPLDA) -> dict[str, object]:
    return {k: (None if v is None else np.array(v, copy=True)) for k, v in model._params().items()}


def _assert_unchanged(model: SPLDA | FRPLDA, before: dict[str, object]) -> None:
    for key, value in model._params().items():
        if before[key] is None:
            assert value is None, key
        else:
            np.testing.assert_array_equal(value, before[key])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "x", "labels", "why"),
    [
        (lambda: SPLDA(shrinkage=0.1), np.random.default_rng(0).standard_normal((40, 8)), np.arange(40), "one session"),
        (lambda: FRPLDA(), np.ones((50, 8)), np.repeat(np.arange(10), 5), "data is constant"),
        (lambda: SPLDA(shrinkage=0.1), np.ones((50, 8)), np.repeat(np.arange(10), 5), "data is constant"),
    ],
    ids=["splda-one-session", "frplda-constant", "splda-constant"],
)
def test_fit_without_within_class_variation_is_refused_and_leaves_the_model_unfitted(
    make: object, x: np.ndarray, labels: np.ndarray, why: str, tmp_path: Path
) -> None:
    model = make()  # type: ignore[operator]
    with pytest.raises(HyperionInputError, match=f"no within-class variation: .*{why}.*>= 2"):
        model.fit(x, labels, epochs=2)
    assert not model.is_fitted and all(v is None for v in model._params().values())
    with pytest.raises(NotFittedError):
        model.save(tmp_path / "broken.h5")


def test_a_failed_refit_leaves_a_fitted_plda_unchanged() -> None:
    mu, v, sw = _truth(6, 2, seed=4)
    x, labels = _sample(mu, v, sw, classes=20, per=5, seed=5)
    for model in (SPLDA(y_dim=2).fit(x, labels, epochs=2), FRPLDA().fit(x, labels, epochs=2)):
        before = _state(model)
        scores = model.llr_1vs1(x[:3], x[3:6])
        with pytest.raises(HyperionInputError, match="no within-class variation"):
            model.fit(x[:20], np.arange(20), epochs=2)
        with pytest.raises(HyperionInputError, match=r"dimension 4 but the model's parameters have"):
            model.fit(x[:, :4], labels, epochs=2)
        _assert_unchanged(model, before)
        np.testing.assert_array_equal(model.llr_1vs1(x[:3], x[3:6]), scores)


def test_non_finite_plda_parameters_are_refused_and_never_score_zero() -> None:
    mu, v, sw = _truth(4, 2, seed=6)
    w = np.linalg.inv(sw)
    bad_w = w.copy()
    bad_w[0, 0] = np.nan
    with pytest.raises(HyperionInputError, match=r"SPLDA\.W: contains NaN"):
        SPLDA(mu=mu, V=v, W=bad_w)
    with pytest.raises(HyperionInputError, match=r"FRPLDA\.B: contains NaN"):
        FRPLDA(mu=mu, B=bad_w, W=w)
    model = SPLDA(mu=mu, V=v, W=w)
    model.W = bad_w  # set behind the constructor's back
    with pytest.raises(HyperionInputError, match="NaN"):
        model.llr_1vs1(np.zeros((1, 4)), np.ones((1, 4)))
