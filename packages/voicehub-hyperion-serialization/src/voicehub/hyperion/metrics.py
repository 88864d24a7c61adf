"""Speaker-verification metrics: EER, minDCF, actDCF, Cllr, min Cllr and DET curves.

Conventions (BOSARIS toolkit, Brümmer & de Villiers 2011, ported by upstream Hyperion):

* scores are log-likelihood ratios (higher = more target-like); a trial is accepted when its
  score is >= the threshold;
* the ROC convex hull (ROCCH) is computed with the pool-adjacent-violators (PAV) algorithm on
  the trials sorted by score (targets before non-targets on ties);
* EER is the equal-error rate of the ROCCH; minDCF the minimum of the normalized detection cost
  over the ROCCH vertices; actDCF the normalized cost at the Bayes threshold
  ``log((1 - P_eff) / P_eff)``;
* normalized DCF (NIST SRE evaluation plans, e.g. SRE 2008/2010/2019):
  ``(P_eff P_miss + (1 - P_eff) P_fa) / min(P_eff, 1 - P_eff)`` with the effective prior
  ``P_eff = P C_miss / (P C_miss + (1 - P) C_fa)``;
* Cllr in bits (Brümmer & du Preez 2006, "Application-independent evaluation of speaker
  detection"): ``(mean log2(1 + e^-tar) + mean log2(1 + e^non)) / 2``; min Cllr is Cllr after
  the optimal monotonic (PAV) calibration.

Reference values (used in the tests): targets ``linspace(-2, 10, 1000)`` and non-targets
``linspace(-10, 2, 1000)`` give EER in (0.166, 0.167), minDCF(P=0.5) in (0.332, 0.334) and
actDCF(P=0.5) = 0.334.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voicehub.core.lazy import import_optional
from voicehub.hyperion.errors import HyperionInputError
from voicehub.hyperion.np.files import atomic_write

FloatVector = NDArray[np.float64]


def _scores(tar: Any, non: Any) -> tuple[FloatVector, FloatVector]:
    t, n = np.asarray(tar, dtype=np.float64).ravel(), np.asarray(non, dtype=np.float64).ravel()
    if t.size == 0 or n.size == 0:
        raise HyperionInputError(f"metrics need target and non-target scores; got {t.size} and {n.size}")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(n))):
        raise HyperionInputError("metrics: scores contain NaN or infinite values")
    return t, n


def _check_prior(prior: float, c_miss: float, c_fa: float) -> float:
    if not 0.0 < prior < 1.0 or c_miss <= 0 or c_fa <= 0:
        raise HyperionInputError(f"metrics: need 0 < prior < 1 and positive costs, got {prior}, {c_miss}, {c_fa}")
    return effective_prior(prior, c_miss, c_fa)


def effective_prior(prior: float, c_miss: float = 1.0, c_fa: float = 1.0) -> float:
    """``P_eff = P C_miss / (P C_miss + (1 - P) C_fa)`` (NIST SRE evaluation plans)."""
    return prior * c_miss / (prior * c_miss + (1.0 - prior) * c_fa)


def pav(y: Any) -> tuple[FloatVector, NDArray[np.int64]]:
    """Pool-adjacent-violators: the non-decreasing least-squares fit to ``y`` (unit weights).

    Returns:
        ``(fit (n,), block_widths (num_blocks,))``.
    """
    values = np.asarray(y, dtype=np.float64).ravel()
    means: list[float] = []
    widths: list[int] = []
    for v in values.tolist():
        total, width = v, 1
        while means and means[-1] >= total / width:
            width_prev = widths.pop()
            total += means.pop() * width_prev
            width += width_prev
        means.append(total / width)
        widths.append(width)
    w = np.asarray(widths, dtype=np.int64)
    return np.repeat(np.asarray(means), w), w


def _sorted_labels(t: FloatVector, n: FloatVector) -> tuple[NDArray[np.intp], FloatVector]:
    scores = np.concatenate([t, n])
    order = np.argsort(scores, kind="stable")
    ideal = np.concatenate([np.ones(t.size), np.zeros(n.size)])[order]
    return order, ideal


def rocch(tar: Any, non: Any) -> tuple[FloatVector, FloatVector]:
    """Vertices of the ROC convex hull.

    Returns:
        ``(p_miss, p_fa)``, each (num_vertices,); ``p_miss`` increases from 0 to 1 and ``p_fa``
        decreases from 1 to 0.
    """
    t, n = _scores(tar, non)
    _, ideal = _sorted_labels(t, n)
    _, widths = pav(ideal)
    left = np.concatenate([[0], np.cumsum(widths)])
    targets_left = np.concatenate([[0.0], np.cumsum(ideal)])[left]
    p_miss = targets_left / t.size
    p_fa = (n.size - (left - targets_left)) / n.size
    return p_miss, p_fa


def compute_eer(tar: Any, non: Any) -> float:
    """Equal-error rate of the ROC convex hull, in [0, 0.5].

    Args:
        tar: target-trial scores (any shape); non: non-target-trial scores.

    Raises:
        HyperionInputError: for an empty class or non-finite scores.
    """
    p_miss, p_fa = rocch(tar, non)
    x1, x2, y1, y2 = p_fa[:-1], p_fa[1:], p_miss[:-1], p_miss[1:]
    dx, dy = x1 - x2, y1 - y2
    valid = (dx != 0) & (dy != 0)
    # The hull segment through (x1, y1), (x2, y2) meets p_miss = p_fa at 1 / (a + b), where
    # a x + b y = 1 is the segment's line.
    det = x1 * y2 - x2 * y1
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(valid, (y2 - y1) / det, 0.0)
        b = np.where(valid, (x1 - x2) / det, 0.0)
        candidates = np.where(valid & np.isfinite(a + b) & (a + b != 0), 1.0 / (a + b), 0.0)
    return float(max(0.0, float(np.max(candidates, initial=0.0))))


def compute_min_dcf(tar: Any, non: Any, prior: float, c_miss: float = 1.0, c_fa: float = 1.0) -> float:
    """Minimum normalized detection cost over the ROCCH vertices (NIST SRE DCF).

    Args:
        prior: target prior P in (0, 1); c_miss, c_fa: positive costs.
    """
    p_eff = _check_prior(prior, c_miss, c_fa)
    p_miss, p_fa = rocch(tar, non)
    dcf = p_eff * p_miss + (1.0 - p_eff) * p_fa
    return float(np.min(dcf) / min(p_eff, 1.0 - p_eff))


def compute_act_dcf(tar: Any, non: Any, prior: float, c_miss: float = 1.0, c_fa: float = 1.0) -> float:
    """Normalized detection cost at the Bayes threshold ``log((1 - P_eff) / P_eff)`` of LLR scores.

    A score equal to the threshold is accepted.
    """
    p_eff = _check_prior(prior, c_miss, c_fa)
    t, n = _scores(tar, non)
    threshold = float(np.log(1.0 - p_eff) - np.log(p_eff))
    p_miss = float(np.mean(t < threshold))
    p_fa = float(np.mean(n >= threshold))
    return (p_eff * p_miss + (1.0 - p_eff) * p_fa) / min(p_eff, 1.0 - p_eff)


def compute_cllr(tar: Any, non: Any) -> float:
    """Log-likelihood-ratio cost in bits (Brümmer & du Preez 2006); 1.0 for uninformative LLRs."""
    t, n = _scores(tar, non)
    return float((np.mean(np.logaddexp(0.0, -t)) + np.mean(np.logaddexp(0.0, n))) / (2.0 * np.log(2.0)))


def compute_min_cllr(tar: Any, non: Any) -> float:
    """Cllr after the optimal monotonic (PAV) calibration of the scores (BOSARIS ``opt_loglr``)."""
    t, n = _scores(tar, non)
    order, ideal = _sorted_labels(t, n)
    fit, _ = pav(ideal)
    posterior = np.empty_like(fit)
    posterior[order] = fit
    with np.errstate(divide="ignore"):
        llr = np.log(posterior) - np.log1p(-posterior) - np.log(t.size / n.size)
    return compute_cllr(llr[: t.size], llr[t.size :]) if np.all(np.isfinite(llr)) else _cllr_inf(llr, t.size)


def _cllr_inf(llr: FloatVector, num_tar: int) -> float:
    tar, non = llr[:num_tar], llr[num_tar:]
    cost_t = np.where(np.isposinf(tar), 0.0, np.logaddexp(0.0, -tar))
    cost_n = np.where(np.isneginf(non), 0.0, np.logaddexp(0.0, non))
    return float((np.mean(cost_t) + np.mean(cost_n)) / (2.0 * np.log(2.0)))


def det_curve(tar: Any, non: Any, *, convex_hull: bool = True) -> tuple[FloatVector, FloatVector]:
    """Points of the DET curve.

    Args:
        convex_hull: ROCCH vertices (``True``) or the steppy empirical curve at every threshold.

    Returns:
        ``(p_miss, p_fa)``, each (num_points,).
    """
    if convex_hull:
        return rocch(tar, non)
    t, n = _scores(tar, non)
    _, ideal = _sorted_labels(t, n)
    targets_left = np.concatenate([[0.0], np.cumsum(ideal)])
    left = np.arange(ideal.size + 1)
    return targets_left / t.size, (n.size - (left - targets_left)) / n.size


def det_plot_points(
    tar: Any, non: Any, *, convex_hull: bool = True, points_per_segment: int = 64
) -> tuple[FloatVector, FloatVector]:
    """The points through which a DET curve is drawn, in probability space, in order along the curve.

    A straight ROC segment is not straight on probit axes, so joining the ROCCH vertices with
    straight lines in probit space draws a curve that misses the EER. As BOSARIS does
    (``rocch2det``: each hull segment sampled in the linear domain before the probit warp), every
    hull segment is sampled at ``points_per_segment`` points, and the equal-error point of the
    segment that crosses ``p_miss = p_fa`` is added exactly, so the drawn curve crosses the
    diagonal at :func:`compute_eer`. With ``convex_hull=False`` the empirical step curve at every
    threshold (:func:`det_curve`) is returned, joined by its vertical and horizontal steps as in
    scikit-learn's ``DetCurveDisplay``.

    Returns:
        ``(p_miss, p_fa)``, each (num_points,).

    Raises:
        HyperionInputError: for an empty class or non-finite scores, or ``points_per_segment < 2``.
    """
    if points_per_segment < 2:
        raise HyperionInputError(f"det_plot_points: points_per_segment must be at least 2, got {points_per_segment}")
    p_miss, p_fa = det_curve(tar, non, convex_hull=convex_hull)
    if not convex_hull:
        return p_miss, p_fa
    miss_parts: list[FloatVector] = []
    fa_parts: list[FloatVector] = []
    for index in range(p_miss.size - 1):
        d_miss, d_fa = p_miss[index + 1] - p_miss[index], p_fa[index + 1] - p_fa[index]
        steps = np.linspace(0.0, 1.0, points_per_segment, endpoint=False)
        gap_start = p_miss[index] - p_fa[index]
        gap_change = d_miss - d_fa
        if gap_change != 0.0:
            crossing = -gap_start / gap_change
            if 0.0 < crossing < 1.0:  # this segment crosses p_miss = p_fa: add the equal-error point
                steps = np.sort(np.append(steps, crossing))
        miss_parts.append(p_miss[index] + steps * d_miss)
        fa_parts.append(p_fa[index] + steps * d_fa)
    miss_parts.append(p_miss[-1:])
    fa_parts.append(p_fa[-1:])
    return np.concatenate(miss_parts), np.concatenate(fa_parts)


def plot_det(
    systems: Mapping[str, tuple[Any, Any]],
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    limits: tuple[float, float] = (0.001, 0.5),
    convex_hull: bool = True,
) -> Path:
    """Plot DET curves (probit-scaled miss vs false-alarm probabilities) to a PNG file.

    Args:
        systems: label -> ``(target_scores, nontarget_scores)``.
        path: output ``.png`` file, written atomically.
        title: optional plot title.
        limits: probability range of both axes.
        convex_hull: draw ROCCH curves (``True``, each hull segment interpolated as in BOSARIS, so the
            curve crosses the diagonal at the reported EER) or steppy curves (see :func:`det_plot_points`).

    Returns:
        The written path.

    Raises:
        HyperionInputError: for no systems, bad scores or limits outside (0, 1).
        OptionalDependencyError: if matplotlib is not installed.
    """
    if not systems:
        raise HyperionInputError("plot_det: no systems to plot")
    low, high = limits
    if not 0.0 < low < high < 1.0:
        raise HyperionInputError(f"plot_det: limits must satisfy 0 < low < high < 1, got {limits}")
    matplotlib = import_optional("matplotlib", purpose="DET plots", install_hint="pip install matplotlib")
    from matplotlib.figure import Figure  # optional and heavy: imported on use
    from scipy.special import ndtri

    del matplotlib
    fig = Figure(figsize=(6, 6))
    ax = fig.add_subplot(1, 1, 1)
    eps = 1e-12
    for label, (tar, non) in systems.items():
        p_miss, p_fa = det_plot_points(tar, non, convex_hull=convex_hull)
        eer = compute_eer(tar, non)
        ax.plot(
            ndtri(np.clip(p_fa, eps, 1 - eps)),
            ndtri(np.clip(p_miss, eps, 1 - eps)),
            label=f"{label} (EER {100 * eer:.2f}%)",
        )
    ticks = np.array([0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4])
    ticks = ticks[(ticks >= low) & (ticks <= high)]
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_ticks(ndtri(ticks))
        axis.set_ticklabels([f"{100 * t:g}" for t in ticks])
    ax.set_xlim(ndtri(low), ndtri(high))
    ax.set_ylim(ndtri(low), ndtri(high))
    ax.plot([ndtri(low), ndtri(high)], [ndtri(low), ndtri(high)], color="0.7", linewidth=0.8)
    ax.set_xlabel("False alarm probability (%)")
    ax.set_ylabel("Miss probability (%)")
    ax.grid(True, color="0.85")
    ax.legend(loc="upper right")
    if title:
        ax.set_title(title)
    target = Path(path)

    def write(tmp: Path) -> None:
        fig.savefig(tmp, format="png", dpi=100)

    atomic_write(target, write)
    return target


__all__ = [
    "compute_act_dcf",
    "compute_cllr",
    "compute_eer",
    "compute_min_cllr",
    "compute_min_dcf",
    "det_curve",
    "det_plot_points",
    "effective_prior",
    "pav",
    "plot_det",
    "rocch",
]
