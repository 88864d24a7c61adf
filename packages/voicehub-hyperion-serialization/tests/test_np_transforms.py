"""CentWhiten, LNorm, PCA, LDA and TransformList: statistics, contracts and nesting."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from voicehub.core.errors import ConfigError
from voicehub.hyperion.errors import HyperionInputError, NotFittedError
from voicehub.hyperion.np import LDA, PCA, CentWhiten, HyperNPModel, LNorm, TransformList


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


def _correlated(n: int = 2000, dim: int = 5, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mix = rng.standard_normal((dim, dim))
    return rng.standard_normal((n, dim)) @ mix + np.arange(dim)


def test_cent_whiten_gives_zero_mean_identity_covariance() -> None:
    x = _correlated()
    y = CentWhiten().fit(x).predict(x)
    np.testing.assert_allclose(y.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.T @ y / len(y), np.eye(5), atol=1e-10)


def test_cent_whiten_drops_directions_without_variance() -> None:
    x = _correlated(dim=4)
    x = np.hstack([x, x[:, :1] * 2.0])  # rank 4 in 5 dimensions
    model = CentWhiten().fit(x)
    assert model.T is not None and model.T.shape == (5, 4)


def test_lnorm_rows_have_length_sqrt_dim_and_unfitted_lnorm_only_scales() -> None:
    x = _correlated(n=50)
    y = LNorm().fit(x).predict(x)
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), np.sqrt(5), rtol=1e-9)
    plain = LNorm().predict(x)
    np.testing.assert_allclose(plain, np.sqrt(5) * x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-10))


def test_pca_keeps_leading_components_and_variance_ratio_rule() -> None:
    rng = np.random.default_rng(1)
    scales = np.array([10.0, 5.0, 1.0, 0.1, 0.01])
    x = rng.standard_normal((5000, 5)) * scales
    model = PCA(pca_dim=2).fit(x)
    assert model.T is not None
    np.testing.assert_allclose(np.abs(model.T), np.eye(5)[:, :2], atol=0.02)
    assert np.all(model.T[0] >= 0)  # sign convention: first row non-negative
    # variances 100, 25, 1, 0.01, 1e-4: 2 components explain 98.8 %, 3 explain 99.99 %
    assert PCA(pca_var_r=0.98, pca_min_dim=1).fit(x).T.shape == (5, 2)  # type: ignore[union-attr]
    assert PCA(pca_var_r=0.995, pca_min_dim=1).fit(x).T.shape == (5, 3)  # type: ignore[union-attr]
    white = PCA(pca_dim=3, whiten=True).fit(x).predict(x)
    np.testing.assert_allclose(white.T @ white / len(white), np.eye(3), atol=1e-9)


def test_lda_finds_the_discriminant_direction() -> None:
    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(3), 400)
    means = np.array([[0.0, 0, 0], [0, 0, 4], [0, 0, 8]])
    noise = rng.standard_normal((1200, 3)) * np.array([5.0, 5.0, 1.0])
    model = LDA(lda_dim=1).fit(means[labels] + noise, labels)
    assert model.T is not None and model.T.shape == (3, 1)
    direction = model.T[:, 0] / np.linalg.norm(model.T[:, 0])
    assert abs(direction[2]) > 0.99
    assert LDA().fit(means[labels] + noise, labels).T.shape == (3, 2)  # type: ignore[union-attr]


def test_predict_keeps_float32_and_checks_shapes() -> None:
    x = _correlated(n=100)
    model = PCA(pca_dim=3).fit(x)
    out = model.predict(x.astype(np.float32))
    assert out.dtype == np.float32 and out.shape == (100, 3)
    assert model.predict(x).dtype == np.float64
    with pytest.raises(HyperionInputError, match=r"expected x of shape \(num_rows, 5\), got shape \(4, 6\)"):
        model.predict(np.zeros((4, 6)))
    with pytest.raises(HyperionInputError, match=r"got shape \(5,\)"):
        model.predict(np.zeros(5))
    with pytest.raises(NotFittedError):
        PCA().predict(x)
    with pytest.raises(HyperionInputError, match="pca_dim=9"):
        PCA(pca_dim=9).fit(x)
    with pytest.raises(ConfigError, match="pca_dim"):
        PCA(pca_dim=0)


def test_update_t_false_keeps_t_and_is_saved(tmp_path: Path) -> None:
    x = _correlated(n=100)
    fixed = np.eye(5)[:, :2]
    model = PCA(T=fixed, update_t=False).fit(x)
    np.testing.assert_array_equal(model.T, fixed)
    loaded = PCA.load(model.save(tmp_path / "pca.h5"))
    assert loaded.update_t is False  # upstream wrote update_t but read update_T and lost it


def test_transform_list_prefixes_children_without_touching_the_originals(tmp_path: Path) -> None:
    x = _correlated(n=300)
    pca = PCA(pca_dim=3, name="pca").fit(x)
    lnorm = LNorm(name="pca").fit(pca.predict(x))  # duplicate child name
    chain = TransformList([pca, lnorm], name="backend")
    assert [t.name for t in chain.transforms] == ["backend/pca", "backend/pca_2"]
    assert pca.name == "pca" and lnorm.name == "pca"
    np.testing.assert_array_equal(chain.predict(x), lnorm.predict(pca.predict(x)))
    path = chain.save(tmp_path / "chain.h5")
    loaded = HyperNPModel.auto_load(path)
    assert isinstance(loaded, TransformList)
    assert [t.name for t in loaded.transforms] == ["backend/pca", "backend/pca_2"]  # not re-prefixed
    np.testing.assert_array_equal(loaded.predict(x), chain.predict(x))
    resaved = HyperNPModel.load_config(loaded.save(tmp_path / "again.h5"))
    assert [c["name"] for c in resaved["transforms"].values()] == ["backend/pca", "backend/pca_2"]


def test_nested_transform_list_config_round_trip_keeps_defaults() -> None:
    inner = TransformList([CentWhiten(name="cw"), LNorm(name="ln")], name="inner")
    outer = TransformList([PCA(pca_dim=4, name="pca"), inner], name="outer")
    config = outer.get_config()
    rebuilt = TransformList.from_config(config)
    assert rebuilt.get_config() == config
    nested = config["transforms"]["1"]  # the upstream layout {"0": cfg, "1": cfg}
    assert nested["class_name"] == "TransformList" and nested["name"] == "outer/inner"
    assert [c["name"] for c in nested["transforms"].values()] == ["outer/inner/cw", "outer/inner/ln"]
    assert config["transforms"]["0"]["whiten"] is False and config["transforms"]["0"]["pca_min_dim"] == 2


def test_nested_transform_list_saves_and_loads(tmp_path: Path) -> None:
    x = _correlated(n=200)
    cw = CentWhiten(name="cw").fit(x)
    inner = TransformList([cw, LNorm(name="ln")], name="inner")
    outer = TransformList([inner, PCA(pca_dim=2, name="pca").fit(inner.predict(x))], name="outer")
    loaded = HyperNPModel.auto_load(outer.save(tmp_path / "nested.h5"))
    np.testing.assert_array_equal(loaded.predict(x), outer.predict(x))  # type: ignore[attr-defined]


def test_transform_list_refuses_a_non_transform() -> None:
    from voicehub.hyperion.np import SPLDA

    with pytest.raises(ConfigError, match="not a transform"):
        TransformList([SPLDA().get_config()])


@pytest.mark.parametrize("make", [lambda: PCA(pca_dim=3), lambda: LDA(lda_dim=2), lambda: CentWhiten()])
def test_a_failed_refit_leaves_the_transform_unchanged(make: object) -> None:
    x = _correlated(n=200)
    labels = np.repeat(np.arange(10), 20)
    model = make()  # type: ignore[operator]
    fit = (lambda data, lab: model.fit(data, lab)) if isinstance(model, LDA) else (lambda data, lab: model.fit(data))
    fit(x, labels)
    mu, t = model.mu.copy(), model.T.copy()
    model.update_t = False  # keep T: data of another dimension must be refused before mu changes
    with pytest.raises(HyperionInputError, match="kept T"):
        fit(x[:, :2], labels)
    model.update_t = True
    with pytest.raises(HyperionInputError, match="zero variance"):
        fit(np.ones((200, x.shape[1])), labels)
    np.testing.assert_array_equal(model.mu, mu)
    np.testing.assert_array_equal(model.T, t)


def test_pca_dim_larger_than_the_data_leaves_the_model_unchanged() -> None:
    x = _correlated(n=100)
    model = PCA(pca_dim=3).fit(x)
    mu = model.mu.copy()
    model.pca_dim = x.shape[1] + 1
    with pytest.raises(HyperionInputError, match="exceeds the data dimension"):
        model.fit(x + 5.0)
    np.testing.assert_array_equal(model.mu, mu)


def test_lda_without_within_class_variation_is_refused() -> None:
    x = _correlated(n=20)
    with pytest.raises(HyperionInputError, match="no within-class variation"):
        LDA().fit(x, np.arange(20))


def test_non_finite_transform_parameters_are_refused_at_construction() -> None:
    with pytest.raises(HyperionInputError, match=r"CentWhiten\.T: contains NaN"):
        CentWhiten(mu=np.zeros(3), T=np.full((3, 3), np.nan))
    with pytest.raises(HyperionInputError, match=r"PCA\.mu: contains NaN"):
        PCA(mu=np.array([0.0, np.inf]), T=np.eye(2))


@pytest.mark.parametrize("dtype, value", [(np.float64, 1e300), (np.float64, 1.7e308), (np.float32, 1e30)])
def test_unfitted_lnorm_normalizes_huge_rows(dtype: type, value: float) -> None:
    out = LNorm().predict(np.full((1, 4), value, dtype=dtype))
    assert out.dtype == dtype
    np.testing.assert_allclose(out, np.ones((1, 4)), rtol=1e-6)  # sqrt(4) * x / ||x|| = 1, not 0


@pytest.mark.slow  # starts the upstream venv (about 5-9 s, mostly its imports)
def test_transform_list_is_written_in_the_layout_upstream_hyperion_reads(tmp_path: Path) -> None:
    """hyperion-ml 0.3.2 (its own venv) loads the file VoiceHub writes and predicts the same."""
    import subprocess

    # .ci/run builds the pinned upstream venv (cached) and points VOICEHUB_HYPERION_PYTHON at it.
    upstream = Path(os.environ.get("VOICEHUB_HYPERION_PYTHON", "/work/bench-envs/hyperion/bin/python"))
    x = _correlated(n=100)
    labels = np.repeat(np.arange(10), 10)
    lda = LDA(lda_dim=3, name="lda").fit(x, labels)
    chain = TransformList([lda, LNorm(name="ln").fit(lda.predict(x))], name="tl")
    path = chain.save(tmp_path / "tl.h5")
    assert sorted(HyperNPModel.load_config(path)["transforms"]) == ["0", "1"]
    if not upstream.exists():
        pytest.skip(
            f"the upstream hyperion-ml venv is not installed at {upstream} (set VOICEHUB_HYPERION_PYTHON; "
            "tests/data/hyperion_upstream/README.md and .ci/run build it)"
        )
    np.save(tmp_path / "x.npy", x)
    x_file, y_file = tmp_path / "x.npy", tmp_path / "y.npy"
    script = (
        "import numpy as np; from hyperion.transforms import TransformList as T\n"
        f"m = T.load({str(path)!r}); np.save({str(y_file)!r}, m.predict(np.load({str(x_file)!r})))"
    )
    result = subprocess.run([str(upstream), "-W", "ignore", "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), chain.predict(x), rtol=0, atol=1e-12)


def test_transform_list_still_reads_the_list_layout_of_older_voicehub_files() -> None:
    config = TransformList([PCA(pca_dim=2, name="p")], name="tl").get_config()
    config["transforms"] = list(config["transforms"].values())
    rebuilt = TransformList.from_config(config)
    assert [t.name for t in rebuilt.transforms] == ["tl/p"] and rebuilt.transforms[0].pca_dim == 2  # type: ignore[attr-defined]
