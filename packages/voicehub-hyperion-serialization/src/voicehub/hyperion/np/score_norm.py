"""Adaptive symmetric score normalization (AS-Norm).

For a trial between enrolment ``e`` and test ``t`` with raw score ``s``:

* Z side: the ``nbest`` cohort speakers closest to the *test* (highest ``scores_coh_test[:, t]``,
  after skipping the ``nbest_discard`` highest) give ``mu_z, sigma_z`` of the *enrolment*'s
  scores against them (``scores_enr_coh[e, cohort]``);
* T side: the ``nbest`` cohort speakers closest to the *enrolment* give ``mu_t, sigma_t`` of the
  *test*'s scores against them;
* ``s' = ((s - mu_z) / sigma_z + (s - mu_t) / sigma_t) / sqrt(2)``.

Matsui 1995 / Sturim & Reynolds 2005 (adaptive T-norm), Cumani et al. 2011 (S-norm),
Matějka et al. 2017 ("Analysis of score normalization in multilingual speaker recognition"). The
``/sqrt(2)`` (instead of the ``/2`` of most papers) is upstream Hyperion's convention, kept so
that scores and thresholds carry over; it only rescales. Standard deviations are population
standard deviations floored at ``std_floor``.

Unlike upstream, caller arrays are never modified, ``std_floor`` is honoured, and the
per-trial statistics are computed as matrix products with a top-k selection matrix
(``np.argpartition`` instead of a full sort; dense BLAS for small cohorts, a sparse product
for large ones), in blocks of bounded memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from voicehub.hyperion.errors import HyperionInputError
from voicehub.hyperion.np._checks import FloatArray, check_float, check_int
from voicehub.hyperion.np.model import HyperNPModel

_BLOCK_ELEMENTS = 1 << 24
"""Upper bound on the elements of one temporary block (16 Mi float64 = 128 MiB)."""


_DENSE_RATIO = 4
"""Use a dense selection matrix (BLAS) when cohort <= this x nbest, else a sparse one."""


def _top_rows(scores: FloatArray, start: int, count: int) -> NDArray[np.intp]:
    """Per row, the column indices of the ranks ``start .. start + count - 1`` (descending).

    Returns:
        (num_rows, count) column indices.
    """
    stop = start + count
    order = np.argpartition(-scores, stop - 1, axis=1)[:, :stop]
    if start == 0:
        return order
    values = np.take_along_axis(scores, order, axis=1)
    ranked = np.take_along_axis(order, np.argsort(-values, axis=1, kind="stable"), axis=1)
    return ranked[:, start:]


def _selected_stats(
    values: FloatArray, selector: FloatArray, start: int, count: int, std_floor: float
) -> tuple[FloatArray, FloatArray]:
    """Mean and std of ``values[r, top(selector[:, k])]`` for every row ``r`` and column ``k``.

    Args:
        values: (num_rows, cohort) scores whose statistics are wanted.
        selector: (cohort, num_columns) scores that choose the cohort of each column.

    Returns:
        ``(mean, std)``, each (num_rows, num_columns); std floored at ``std_floor``.
    """
    cohort, num_columns = selector.shape
    top = _top_rows(np.ascontiguousarray(selector.T), start, count)  # (num_columns, count)
    if cohort <= _DENSE_RATIO * count:
        selection = np.zeros((cohort, num_columns))
        selection[top.T, np.arange(num_columns)[None, :]] = 1.0 / count
        mean = values @ selection
        second = (values * values) @ selection
    else:
        indptr = np.arange(0, num_columns * count + 1, count)
        rows = sparse.csr_matrix(
            (np.full(num_columns * count, 1.0 / count), top.ravel(), indptr), shape=(num_columns, cohort)
        )
        transposed = np.ascontiguousarray(values.T)
        mean = np.asarray(rows @ transposed).T
        second = np.asarray(rows @ (transposed * transposed)).T
    std = np.sqrt(np.maximum(second - mean * mean, 0.0))
    return mean, np.maximum(std, std_floor)


class AdaptSNorm(HyperNPModel):
    """Adaptive symmetric score normalization (stateless apart from its settings).

    Args:
        nbest: cohort size per trial side (>= 1; capped at cohort size - nbest_discard).
        nbest_discard: number of highest-scoring cohort entries skipped (>= 0).
        std_floor: lower bound on the cohort standard deviations (> 0).
        name, save_dtype: see :class:`HyperNPModel`.
    """

    legacy_keys: ClassVar[Mapping[str, str | None]] = {"norm_var": None}

    def __init__(
        self,
        nbest: int = 100,
        nbest_discard: int = 0,
        std_floor: float = 1e-5,
        *,
        name: str | None = None,
        save_dtype: str | None = None,
    ) -> None:
        super().__init__(name=name, save_dtype=save_dtype)
        owner = type(self).__name__
        self.nbest = check_int(owner, "nbest", nbest, minimum=1)
        self.nbest_discard = check_int(owner, "nbest_discard", nbest_discard, minimum=0)
        self.std_floor = check_float(owner, "std_floor", std_floor, low=0.0, open_low=True)

    def get_config(self) -> dict[str, Any]:
        """Config: base keys plus ``nbest``, ``nbest_discard``, ``std_floor``."""
        return {
            **super().get_config(),
            "nbest": self.nbest,
            "nbest_discard": self.nbest_discard,
            "std_floor": self.std_floor,
        }

    def predict(self, scores: Any, scores_coh_test: Any, scores_enr_coh: Any) -> FloatArray:
        """Normalize a score matrix.

        Args:
            scores: float (num_enroll, num_test) raw trial scores.
            scores_coh_test: float (num_cohort, num_test) cohort-vs-test scores.
            scores_enr_coh: float (num_enroll, num_cohort) enrolment-vs-cohort scores.

        Returns:
            float64 (num_enroll, num_test) normalized scores. The inputs are not modified.

        Raises:
            HyperionInputError: for inconsistent shapes, non-finite scores, or a cohort not larger
                than ``nbest_discard``.
        """
        owner = type(self).__name__
        s, ct, ec = (np.asarray(a, dtype=np.float64) for a in (scores, scores_coh_test, scores_enr_coh))
        if s.ndim != 2 or ct.ndim != 2 or ec.ndim != 2:
            raise HyperionInputError(f"{owner}: all three score arrays must be 2-D")
        num_enroll, num_test = s.shape
        num_cohort = ct.shape[0]
        if ct.shape != (num_cohort, num_test) or ec.shape != (num_enroll, num_cohort):
            raise HyperionInputError(
                f"{owner}: expected scores (E, T), scores_coh_test (C, T), scores_enr_coh (E, C); got "
                f"{s.shape}, {ct.shape}, {ec.shape}"
            )
        if num_cohort <= self.nbest_discard:
            raise HyperionInputError(
                f"{owner}: cohort of {num_cohort} is too small for nbest_discard={self.nbest_discard}"
            )
        for label, arr in (("scores", s), ("scores_coh_test", ct), ("scores_enr_coh", ec)):
            if not np.all(np.isfinite(arr)):
                raise HyperionInputError(f"{owner}: {label} contains NaN or infinite values")
        count = min(self.nbest, num_cohort - self.nbest_discard)
        out = np.empty_like(s)
        # Block over test columns (Z side) so the selection matrix stays bounded in memory.
        step = max(1, _BLOCK_ELEMENTS // max(num_cohort, num_enroll))
        for lo in range(0, num_test, step):
            hi = min(lo + step, num_test)
            mean, std = _selected_stats(ec, ct[:, lo:hi], self.nbest_discard, count, self.std_floor)
            out[:, lo:hi] = (s[:, lo:hi] - mean) / std
        step = max(1, _BLOCK_ELEMENTS // max(num_cohort, num_test))
        for lo in range(0, num_enroll, step):
            hi = min(lo + step, num_enroll)
            mean_t, std_t = _selected_stats(ct.T, ec[lo:hi].T, self.nbest_discard, count, self.std_floor)
            out[lo:hi] += (s[lo:hi] - mean_t.T) / std_t.T
        out /= np.sqrt(2.0)
        return out


__all__ = ["AdaptSNorm"]
