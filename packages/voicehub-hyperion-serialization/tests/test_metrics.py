"""EER, minDCF, actDCF, Cllr, min Cllr and DET plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.special import ndtr

from voicehub.hyperion.errors import HyperionInputError
from voicehub.hyperion.metrics import (
    compute_act_dcf,
    compute_cllr,
    compute_eer,
    compute_min_cllr,
    compute_min_dcf,
    det_curve,
    det_plot_points,
    effective_prior,
    pav,
    plot_det,
    rocch,
)

TAR = np.linspace(-2, 10, 1000)
NON = np.linspace(-10, 2, 1000)


def test_reference_values_of_the_linspace_scores() -> None:
    assert 0.166 < compute_eer(TAR, NON) < 0.167
    assert 0.332 < compute_min_dcf(TAR, NON, 0.5) < 0.334
    assert compute_act_dcf(TAR, NON, 0.5) == pytest.approx(0.334)


def test_eer_of_known_gaussian_score_distributions() -> None:
    # tar ~ N(d, 1), non ~ N(0, 1): EER = Phi(-d / 2)
    rng = np.random.default_rng(0)
    tar, non = rng.normal(2.0, 1.0, 200_000), rng.normal(0.0, 1.0, 200_000)
    assert compute_eer(tar, non) == pytest.approx(float(ndtr(-1.0)), abs=0.003)


def test_separable_and_identical_scores() -> None:
    assert compute_eer([3.0, 4.0], [1.0, 2.0]) == 0.0
    assert compute_min_dcf([3.0, 4.0], [1.0, 2.0], 0.01) == 0.0
    assert compute_eer(np.zeros(10), np.zeros(10)) == pytest.approx(0.5)


def test_min_dcf_uses_costs_through_the_effective_prior() -> None:
    assert effective_prior(0.01, 10.0, 1.0) == pytest.approx(0.1 / 1.09)
    rng = np.random.default_rng(1)
    tar, non = rng.normal(3, 1, 3000), rng.normal(0, 1, 30000)
    assert compute_min_dcf(tar, non, 0.01, c_miss=10.0) == pytest.approx(
        compute_min_dcf(tar, non, effective_prior(0.01, 10.0, 1.0))
    )
    # a cost never exceeds the trivial system (always accept or always reject): 1 after normalization
    assert compute_min_dcf(tar, non, 0.01) <= 1.0


def test_act_dcf_counts_a_score_on_the_threshold_as_accepted() -> None:
    threshold = np.log(0.9 / 0.1)
    assert compute_act_dcf([threshold], [threshold - 1], 0.1) == 0.0
    assert compute_act_dcf([threshold - 1e-9], [threshold - 1], 0.1) == pytest.approx(1.0)


def test_cllr_values() -> None:
    assert compute_cllr(np.zeros(5), np.zeros(7)) == pytest.approx(1.0)
    assert compute_cllr([np.log(3.0)], [-np.log(3.0)]) == pytest.approx(np.log2(4 / 3))
    assert compute_cllr([40.0], [-40.0]) < 1e-15
    # min Cllr: perfect separation gives 0 whatever the calibration; it never exceeds Cllr
    assert compute_min_cllr([5.0, 6.0], [1.0, 2.0]) == pytest.approx(0.0)
    rng = np.random.default_rng(2)
    tar, non = rng.normal(1, 1, 500) * 7, rng.normal(0, 1, 2000) * 7
    assert compute_min_cllr(tar, non) < compute_cllr(tar, non)
    assert 0.0 < compute_min_cllr(tar, non) < 1.0


def test_pav_fits_a_non_decreasing_sequence() -> None:
    fit, widths = pav([1.0, 3.0, 2.0, 4.0, 0.0, 5.0])
    np.testing.assert_allclose(fit, [1.0, 2.25, 2.25, 2.25, 2.25, 5.0])
    assert widths.tolist() == [1, 4, 1]


def test_rocch_and_det_curve_endpoints() -> None:
    p_miss, p_fa = rocch(TAR, NON)
    assert (p_miss[0], p_fa[0], p_miss[-1], p_fa[-1]) == (0.0, 1.0, 1.0, 0.0)
    assert np.all(np.diff(p_miss) >= 0) and np.all(np.diff(p_fa) <= 0)
    steps_miss, _ = det_curve(TAR, NON, convex_hull=False)
    assert steps_miss.shape == (2001,)
    assert np.all(steps_miss[:-1] <= steps_miss[1:])


def test_metrics_reject_empty_or_non_finite_scores() -> None:
    with pytest.raises(HyperionInputError, match="target and non-target"):
        compute_eer([], [1.0])
    with pytest.raises(HyperionInputError, match="NaN"):
        compute_min_dcf([np.nan], [1.0], 0.5)
    with pytest.raises(HyperionInputError, match="prior"):
        compute_min_dcf([1.0], [0.0], 1.5)


def test_plot_det_writes_a_png(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    systems = {
        "good": (rng.normal(3, 1, 500), rng.normal(0, 1, 5000)),
        "weak": (rng.normal(1, 1, 500), rng.normal(0, 1, 5000)),
    }
    path = plot_det(systems, tmp_path / "det.png", title="test")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert [p.name for p in tmp_path.iterdir()] == ["det.png"]
    with pytest.raises(HyperionInputError, match="limits"):
        plot_det(systems, tmp_path / "bad.png", limits=(0.5, 0.1))


def test_plot_det_gets_the_default_mode_and_writes_through_a_symlink(tmp_path: Path) -> None:
    import os

    from voicehub.hyperion.errors import HyperionFileError

    systems = {"sys": (np.linspace(-1, 3, 50), np.linspace(-3, 1, 50))}
    real = tmp_path / "plots" / "det.png"
    real.parent.mkdir()
    link = tmp_path / "det.png"
    link.symlink_to(real)
    old = os.umask(0o022)
    try:
        plot_det(systems, link)
    finally:
        os.umask(old)
    assert link.is_symlink() and real.read_bytes()[:4] == b"\x89PNG"
    assert real.stat().st_mode & 0o777 == 0o644
    with pytest.raises(HyperionFileError, match="is a directory"):
        plot_det(systems, tmp_path)


def _diagonal_crossing(p_miss: np.ndarray, p_fa: np.ndarray) -> float:
    """Where the polyline through the points, drawn on probit axes, crosses the diagonal, as a probability."""
    from scipy.special import ndtri

    y, x = ndtri(np.clip(p_miss, 1e-12, 1 - 1e-12)), ndtri(np.clip(p_fa, 1e-12, 1 - 1e-12))
    gap = y - x  # negative before the crossing (p_miss small), positive after
    on_diagonal = np.nonzero(gap == 0)[0]
    if on_diagonal.size:
        return float(ndtr(y[on_diagonal[0]]))
    index = int(np.nonzero((gap[:-1] < 0) & (gap[1:] > 0))[0][0])
    weight = gap[index] / (gap[index] - gap[index + 1])
    return float(ndtr(y[index] + weight * (y[index + 1] - y[index])))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_det_plot_curve_crosses_the_diagonal_at_the_reported_eer(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cases = [(TAR, NON), (rng.normal(2.0, 1.0, 40), rng.normal(0.0, 1.5, 300))]
    for tar, non in cases:
        eer = compute_eer(tar, non)
        assert _diagonal_crossing(*det_plot_points(tar, non)) == pytest.approx(eer, abs=1e-9)
    # The old drawing, straight probit-space lines between the hull vertices, misses it on small sets.
    tar, non = cases[1]
    assert abs(_diagonal_crossing(*rocch(tar, non)) - compute_eer(tar, non)) > 1e-4


def test_det_plot_points_follow_the_hull_and_keep_its_vertices() -> None:
    p_miss, p_fa = rocch(TAR, NON)
    dense_miss, dense_fa = det_plot_points(TAR, NON, points_per_segment=8)
    assert dense_miss.size >= 8 * (p_miss.size - 1) + 1
    assert np.all(np.diff(dense_miss) >= 0) and np.all(np.diff(dense_fa) <= 0)
    for miss, fa in zip(p_miss, p_fa, strict=True):
        assert np.any((dense_miss == miss) & (dense_fa == fa))
    steps = det_plot_points(TAR, NON, convex_hull=False)
    np.testing.assert_array_equal(steps[0], det_curve(TAR, NON, convex_hull=False)[0])
    with pytest.raises(HyperionInputError, match="points_per_segment must be at least 2"):
        det_plot_points(TAR, NON, points_per_segment=1)
