"""Files written by the real upstream Hyperion toolkit (hyperion-ml 0.3.2) load unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest

from voicehub.hyperion.np import (
    FRPLDA,
    LDA,
    PCA,
    SPLDA,
    BinaryLogisticRegression,
    CentWhiten,
    GaussCalibration,
    HyperNPModel,
    LinearGBE,
    LNorm,
    TransformList,
)
from voicehub.hyperion.trials import TrialKey, TrialNdx, TrialScores

DATA = Path(__file__).resolve().parent / "data" / "hyperion_upstream"
EXPECTED = np.load(DATA / "expected.npz")

TRANSFORMS = [
    ("cent_whiten.h5", CentWhiten, "cent_whiten"),
    ("lnorm.h5", LNorm, "lnorm"),
    ("pca.h5", PCA, "pca"),
    ("lda.h5", LDA, "lda"),
    ("transform_list.h5", TransformList, "transform_list"),
]


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


@pytest.mark.parametrize(("file", "cls", "key"), TRANSFORMS)
def test_upstream_transform_files_auto_load_and_predict_like_upstream(file: str, cls: type, key: str) -> None:
    model = HyperNPModel.auto_load(DATA / file)
    assert type(model) is cls
    out = model.predict(EXPECTED["probe"])  # type: ignore[attr-defined]
    np.testing.assert_allclose(out, EXPECTED[key], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(("file", "cls", "key"), [("splda.h5", SPLDA, "splda"), ("frplda.h5", FRPLDA, "frplda")])
def test_upstream_plda_files_score_like_upstream(file: str, cls: type, key: str) -> None:
    model = HyperNPModel.auto_load(DATA / file)
    assert type(model) is cls
    probe = EXPECTED["probe"]
    np.testing.assert_allclose(model.llr_1vs1(probe[:4], probe[4:]), EXPECTED[key], rtol=1e-8, atol=1e-8)  # type: ignore[attr-defined]


def test_upstream_splda_saved_with_name_none_reads_parameters_from_the_file_root() -> None:
    model = SPLDA.load(DATA / "splda_root.h5")
    assert model.name == ""
    assert model.V is not None and model.V.shape == (3, 8)
    probe = EXPECTED["probe"]
    np.testing.assert_allclose(model.llr_1vs1(probe[:4], probe[4:]), EXPECTED["splda_root"], rtol=1e-8, atol=1e-8)


def test_upstream_transform_list_children_keep_their_prefixed_names() -> None:
    model = TransformList.load(DATA / "transform_list.h5")
    assert [t.name for t in model.transforms] == ["tl/pca", "tl/lnorm"]
    assert [type(t) for t in model.transforms] == [PCA, LNorm]
    pca = model.transforms[0]
    assert isinstance(pca, PCA) and pca.pca_dim == 6


def test_upstream_gauss_calibration_loads_although_upstream_cannot_load_it() -> None:
    model = HyperNPModel.auto_load(DATA / "gauss_calibration.h5")
    assert isinstance(model, GaussCalibration)
    out = model.predict(EXPECTED["gauss_scores"].astype(np.float32).astype(np.float64))
    # upstream's expectation used its float64 parameters before they were stored as float32
    np.testing.assert_allclose(out, EXPECTED["gauss_calibration"], rtol=1e-5, atol=1e-5)


def test_upstream_linear_gbe_and_logistic_regression_predict_like_upstream() -> None:
    gbe = HyperNPModel.auto_load(DATA / "linear_gbe.h5")
    assert isinstance(gbe, LinearGBE) and gbe.num_classes == 12
    np.testing.assert_allclose(gbe.predict(EXPECTED["probe"]), EXPECTED["linear_gbe"], rtol=1e-8, atol=1e-8)
    lr = HyperNPModel.auto_load(DATA / "logistic_regression.h5")
    assert isinstance(lr, BinaryLogisticRegression) and lr.prior == 0.2
    out = lr.predict(EXPECTED["gauss_scores"])
    np.testing.assert_allclose(out, np.ravel(EXPECTED["logistic_regression"]), rtol=1e-6, atol=1e-6)


def test_upstream_trial_files_load_with_targets_and_nontargets() -> None:
    key = TrialKey.load(DATA / "trial_key.h5")
    assert key.model_set.tolist() == ["spkA", "spkB", "spkC"]
    np.testing.assert_array_equal(key.tar, EXPECTED["trial_tar"])
    np.testing.assert_array_equal(key.non, EXPECTED["trial_non"])
    assert int(key.non.sum()) == 8  # the hades-era loader turned every non-target into a spoof
    ndx = TrialNdx.load(DATA / "trial_ndx.h5")
    np.testing.assert_array_equal(ndx.trial_mask, EXPECTED["trial_tar"] | EXPECTED["trial_non"])
    scores = TrialScores.load(DATA / "trial_scores.h5")
    np.testing.assert_array_equal(scores.scores, EXPECTED["trial_scores"])


def test_migrating_an_upstream_file_rewrites_the_config_and_keeps_parameters_bit_exact(tmp_path: Path) -> None:
    old = TransformList.load(DATA / "transform_list.h5")
    new_path = old.save(tmp_path / "migrated.h5")
    config = HyperNPModel.load_config(new_path)
    assert config["schema_version"] == 1
    assert sorted(config["transforms"]) == ["0", "1"]  # upstream's layout, so hyperion-ml reads the file too
    assert config["transforms"]["0"]["update_t"] is True
    with h5py.File(DATA / "transform_list.h5") as f_old, h5py.File(new_path) as f_new:
        for param in ("tl/pca/mu", "tl/pca/T", "tl/lnorm/mu", "tl/lnorm/T"):
            assert f_new[param].dtype == f_old[param].dtype == np.float32
            np.testing.assert_array_equal(f_new[param][()], f_old[param][()])
    again = HyperNPModel.auto_load(new_path)
    np.testing.assert_array_equal(again.predict(EXPECTED["probe"]), old.predict(EXPECTED["probe"]))  # type: ignore[attr-defined]


def test_an_unexpected_key_in_an_upstream_config_is_reported_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "odd.h5"
    with h5py.File(DATA / "pca.h5") as src, h5py.File(path, "w") as dst:
        dst.create_dataset("config", data=np.bytes_(b'{"class_name": "PCA", "name": "pca", "mystery": 3}'))
        src.copy("pca", dst)
    with pytest.raises(KeyError, match="mystery") as info:
        PCA.load(path)
    assert str(path) in str(info.value)
