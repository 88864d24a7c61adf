"""Probabilistic linear discriminant analysis (PLDA) back-ends: ``SPLDA`` and ``FRPLDA``.

Both are Gaussian two-covariance models of speaker embeddings ``x`` (dim,) with a class mean
``mu``, a between-class covariance ``Sb`` and a within-class covariance ``Sw`` (Prince & Elder
2007; Brümmer & de Villiers 2010, "The speaker partitioning problem"):

* ``SPLDA`` (simplified PLDA): ``x = mu + V^T y + e``, ``y ~ N(0, I)`` (y_dim,),
  ``e ~ N(0, W^-1)``; parameters ``mu`` (dim,), ``V`` (y_dim, dim), ``W`` (dim, dim) precision.
* ``FRPLDA`` (full-rank PLDA): ``y ~ N(mu, B^-1)``, ``x = y + e``, ``e ~ N(0, W^-1)``;
  parameters ``mu`` (dim,), ``B`` and ``W`` (dim, dim) precisions.

Training is EM with a maximum-likelihood M-step and, for SPLDA, the minimum-divergence step
(Kenny 2010, "Bayesian speaker verification with heavy-tailed priors"; Villalba, "SPLDA" notes),
the same algorithm as upstream Hyperion, vectorized: the per-class posteriors share one
eigendecomposition instead of one matrix inversion per distinct class size.

Scoring diagonalizes ``Sb`` and ``Sw`` jointly once per model (``U^T Sw U = I``,
``U^T Sb U = diag(d)``; FRPLDA through the generalized eigenproblem, SPLDA through the
(y_dim, y_dim) eigenproblem of ``V W V^T``), after which the log-likelihood ratio of a trial is a
sum of independent per-dimension terms and a whole enrolment x test grid is one matrix product.

SPLDA training computes the data statistics once per fit and runs each EM epoch in the
eigenbasis of ``V W V^T``, where the class posteriors are diagonal and depend on a class only
through its size.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Self

import h5py
import numpy as np
from numpy.typing import NDArray
from scipy import linalg, sparse
from scipy.linalg import lapack

from voicehub.hyperion.errors import HyperionInputError
from voicehub.hyperion.np._checks import (
    FloatArray,
    as_labels,
    as_matrix,
    check_bool,
    check_choice,
    check_fit_result,
    check_float,
    check_int,
    class_stats,
    param,
    require,
    single_threaded_blas,
)
from voicehub.hyperion.np.linalg import chol_pd, gram, inv_from_chol, inv_pd, logdet_pd, shrink, solve_pd
from voicehub.hyperion.np.model import HyperNPModel

NvsMMethod = Literal["book", "vavg", "vavg-lnorm", "savg"]
"""Multi-session scoring: exact LLR ("book"), average embeddings (optionally length-normed), average scores."""

_LOG_2PI = float(np.log(2 * np.pi))


@dataclass(frozen=True, slots=True)
class _Scorer:
    """Jointly diagonalized two-covariance model: ``z = (x - mu) @ U``, per-dimension ``d``."""

    mu: FloatArray
    U: FloatArray  # (dim, k)
    d: FloatArray  # (k,) between-class variances in the whitened space
    a: FloatArray  # (k,) quadratic coefficient of the 1-vs-1 LLR
    b: FloatArray  # (k,) cross coefficient of the 1-vs-1 LLR
    c: float  # constant of the 1-vs-1 LLR

    @classmethod
    def build(cls, mu: FloatArray, sb: FloatArray, sw: FloatArray) -> _Scorer:
        if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(sb)) and np.all(np.isfinite(sw))):
            raise HyperionInputError("PLDA: the model parameters contain NaN or infinite values; refit or reload it")
        d, u = linalg.eigh(0.5 * (sb + sb.T), 0.5 * (sw + sw.T), check_finite=False)
        return cls.from_joint(mu, u, d)

    @classmethod
    def low_rank(cls, mu: FloatArray, v: FloatArray, w: FloatArray) -> _Scorer:
        """SPLDA (``Sb = V^T V``, ``Sw = W^-1``) from the (y_dim, y_dim) eigenproblem ``V W V^T = Q diag(d) Q^T``.

        ``U = W V^T Q diag(d)^-1/2`` satisfies ``U^T Sw U = I`` and ``U^T Sb U = diag(d)``, and the
        directions outside the speaker subspace have ``d = 0`` and add nothing to the LLR, so
        neither ``W^-1`` nor the (dim, dim) generalized eigenproblem is needed.
        """
        if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(v)) and np.all(np.isfinite(w))):
            raise HyperionInputError("PLDA: the model parameters contain NaN or infinite values; refit or reload it")
        chol_pd(w, "W")  # W must be a precision (positive definite), as for the full route
        wv = w @ v.T
        vwv = v @ wv
        d, q = linalg.eigh(0.5 * (vwv + vwv.T), driver="evd", check_finite=False)
        keep = d > 1e-12 * max(float(d[-1]), 0.0)
        d, q = d[keep], q[:, keep]
        return cls.from_joint(mu, (wv @ q) / np.sqrt(d), d, filtered=True)

    @classmethod
    def from_joint(cls, mu: FloatArray, u: FloatArray, d: FloatArray, *, filtered: bool = False) -> _Scorer:
        """The LLR coefficients from a joint diagonalization ``U^T Sw U = I``, ``U^T Sb U = diag(d)``."""
        if not filtered:
            keep = d > 1e-12 * max(float(d[-1]), 0.0)
            d, u = d[keep], u[:, keep]
        u = np.ascontiguousarray(u)
        a = -0.5 * d * d / ((d + 1.0) * (2.0 * d + 1.0))
        b = d / (2.0 * d + 1.0)
        c = 0.5 * float(np.sum(2.0 * np.log1p(d) - np.log1p(2.0 * d)))
        return cls(mu=mu, U=u, d=d, a=a, b=b, c=c)

    def project(self, x: FloatArray) -> FloatArray:
        z: FloatArray = (np.asarray(x, dtype=np.float64) - self.mu) @ self.U
        return z

    def _augmented(self, x: FloatArray, scale: FloatArray | None, const: float, self_first: bool) -> FloatArray:
        """``[z * scale, q + const, 1]`` (or ``[z, 1, q]``) with ``z`` the projection and ``q = sum_k a_k z_k^2``.

        Built in one (rows, k + 2) buffer: ``x @ U - mu @ U`` needs no centred copy of ``x``.
        """
        k = self.d.shape[0]
        out = np.empty((x.shape[0], k + 2))
        z = out[:, :k]
        np.matmul(np.asarray(x, dtype=np.float64), self.U, out=z)
        z -= self.mu @ self.U
        quad = (z * z) @ self.a
        if scale is not None:
            z *= scale
        out[:, k] = quad + const if self_first else 1.0
        out[:, k + 1] = 1.0 if self_first else quad
        return out

    def llr_1vs1(self, x1: FloatArray, x2: FloatArray) -> FloatArray:
        # One (n1, k + 2) x (k + 2, n2) product computes  sum_k a_k (u_k^2 + v_k^2) + b_k u_k v_k + c
        # for the whole grid: the grid is written once, by BLAS, with no full-grid temporary.
        left = self._augmented(x1, self.b, self.c, self_first=True)
        right = self._augmented(x2, None, 0.0, self_first=False)
        scores: FloatArray = left @ right.T
        return scores

    def llr_book(self, s1: FloatArray, n1: FloatArray, s2: FloatArray, n2: FloatArray) -> FloatArray:
        """Exact LLR of sets: ``s`` are sums of projected vectors (models, k), ``n`` their counts."""
        d = self.d
        scores = np.empty((s1.shape[0], s2.shape[0]))
        for count1 in np.unique(n1):
            rows = np.flatnonzero(n1 == count1)
            r1 = d / (1.0 + count1 * d)
            for count2 in np.unique(n2):
                cols = np.flatnonzero(n2 == count2)
                r2 = d / (1.0 + count2 * d)
                w = d / (1.0 + (count1 + count2) * d)
                const = -0.5 * float(
                    np.sum(np.log1p((count1 + count2) * d) - np.log1p(count1 * d) - np.log1p(count2 * d))
                )
                a1, a2 = s1[rows], s2[cols]
                block = (a1 * w) @ a2.T
                block += 0.5 * ((a1 * a1) @ (w - r1))[:, None]
                block += 0.5 * ((a2 * a2) @ (w - r2))[None, :]
                scores[np.ix_(rows, cols)] = block + const
        return scores


def _class_sums(x: FloatArray, ids: NDArray[np.int64], num_classes: int) -> tuple[FloatArray, FloatArray]:
    """``(counts (num_classes,), sums (num_classes, dim))`` as one sparse (classes x rows) indicator product.

    Same statistics as :func:`class_stats`, but without gathering the rows into class order
    (a copy of ``x`` when the labels are not grouped), and faster than ``reduceat`` on the
    benchmark's embeddings (``benchmarks/hyperion_speed.py``).
    """
    counts = np.bincount(ids, minlength=num_classes).astype(np.float64)
    indptr = np.zeros(num_classes + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(np.bincount(ids, minlength=num_classes))
    order = np.argsort(ids, kind="stable")
    indicator = sparse.csr_matrix((np.ones(ids.shape[0]), order, indptr), shape=(num_classes, x.shape[0]))
    sums = np.asarray(indicator @ np.asarray(x, dtype=np.float64), dtype=np.float64)
    return counts, sums


def _group(owner: str, x: FloatArray, labels: Any) -> tuple[FloatArray, FloatArray, NDArray[np.int64]]:
    ids, num = as_labels(owner, labels, x.shape[0])
    counts, sums = _class_sums(x, ids, num)
    return counts, sums, ids


@dataclass(frozen=True, slots=True)
class _EMStats:
    """Sufficient statistics of the training data, computed once per :meth:`_PLDABase.fit`.

    The EM epochs only read them: class counts and first-order sums, the data scatter ``x^T x``,
    and the derived totals and distinct class sizes (posteriors depend on a class only through
    its size, so sums over classes of per-size terms are sums over the distinct sizes).
    """

    counts: FloatArray  # (classes,)
    size_index: NDArray[np.intp]  # (classes,) index of each class's size in ``sizes``
    sums: FloatArray  # (classes, dim)
    scatter: FloatArray  # (dim, dim)
    total: float  # number of vectors
    f_tot: FloatArray  # (dim,) sum of all vectors
    sqrt_counts: FloatArray  # (classes, 1)
    sizes: FloatArray  # (distinct,) distinct class sizes
    size_counts: FloatArray  # (distinct,) number of classes of each size
    # (W, log det W) of the precision the last M-step produced from its Cholesky factor, so the
    # next ELBO need not factor W again.
    w_logdet: list[Any] = field(default_factory=lambda: [None, 0.0])
    # (mu, F - N mu) for a mean that stays fixed during the fit (update_mu=False).
    centred: list[Any] = field(default_factory=lambda: [None, None])

    def centred_sums(self, mu: FloatArray) -> FloatArray:
        """``F_i - N_i mu`` (classes, dim), computed once per fixed ``mu``."""
        if self.centred[0] is not mu:
            self.centred[:] = [mu, self.sums - self.counts[:, None] * mu]
        out: FloatArray = self.centred[1]
        return out

    def logdet_w(self, w: FloatArray) -> float:
        """log det of the precision ``w``: remembered if the last M-step made it, else factored."""
        if self.w_logdet[0] is w:
            return float(self.w_logdet[1])
        return logdet_pd(w, "W")

    @classmethod
    def build(cls, counts: FloatArray, sums: FloatArray, scatter: FloatArray) -> _EMStats:
        sizes, size_index, size_counts = np.unique(counts, return_inverse=True, return_counts=True)
        return cls(
            counts=counts,
            size_index=size_index.reshape(-1),
            sums=np.ascontiguousarray(sums),
            scatter=scatter,
            total=float(counts.sum()),
            f_tot=sums.sum(axis=0),
            sqrt_counts=np.sqrt(counts)[:, None],
            sizes=sizes,
            size_counts=size_counts.astype(np.float64),
        )

    @property
    def num_classes(self) -> int:
        return int(self.counts.shape[0])


class _PLDABase(HyperNPModel, register=False):
    """Shared EM driver, scoring and serialization of the PLDA models."""

    param_names: ClassVar[tuple[str, ...]] = ()
    update_W: bool
    shrinkage: float

    def __init__(self, *, name: str | None, save_dtype: str | None) -> None:
        super().__init__(name=name, save_dtype=save_dtype)
        self._scorer_cache: tuple[tuple[int, ...], _Scorer] | None = None
        self.elbo_history: list[float] = []

    # subclasses -----------------------------------------------------------
    def _params(self) -> dict[str, FloatArray | None]:
        return {k: getattr(self, k) for k in self.param_names}

    def covariances(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Return ``(mu (dim,), Sb (dim, dim), Sw (dim, dim))`` of the two-covariance model, float64."""
        raise NotImplementedError

    def _initialize(self, counts: FloatArray, sums: FloatArray, scatter: FloatArray) -> None:
        raise NotImplementedError

    def _em_step(self, stats: _EMStats, use_ml: bool, use_md: bool) -> float:
        raise NotImplementedError

    # training --------------------------------------------------------------
    def fit(
        self,
        x: Any,
        labels: Any,
        *,
        epochs: int = 20,
        ml_md: Literal["ml+md", "ml", "md"] = "ml+md",
        md_epochs: tuple[int, ...] | None = None,
    ) -> Self:
        """Train by EM on embeddings ``x`` (num_rows, dim) with speaker ``labels`` (num_rows,).

        An unfitted model is initialized from the data first (class-mean SVD / scatter).

        Args:
            x: float embeddings; length-normalize them first for best results.
            labels: any hashable class labels, at least 2 distinct.
            epochs: EM iterations (>= 1).
            ml_md: which M-steps to run ("ml+md", "ml" or "md"; FRPLDA has no MD step).
            md_epochs: 0-based epochs on which to run the MD step (``None`` = every epoch).

        Returns:
            ``self``; ``elbo_history`` holds the evidence lower bound before each M-step.

        Raises:
            HyperionInputError: for bad arrays, fewer than 2 classes, data of another dimension
                than a fitted model's, no within-class variation (one session per speaker, or
                constant data), or degenerate statistics. Fitting is transactional: when it
                raises, the model is unchanged.
        """
        owner = type(self).__name__
        check_int(owner, "epochs", epochs, minimum=1)
        check_choice(owner, "ml_md", ml_md, ("ml+md", "ml", "md"))
        data = np.asarray(as_matrix(owner, x), dtype=np.float64)
        dims = {k: v.shape[-1] for k, v in self._params().items() if v is not None}
        if any(d != data.shape[1] for d in dims.values()):
            raise HyperionInputError(
                f"{owner}.fit: x has dimension {data.shape[1]} but the model's parameters have {dims}; "
                f"fit on {next(iter(dims.values()))}-dim data or start from an unfitted {owner}"
            )
        counts, sums, _ = _group(owner, data, labels)
        if counts.shape[0] < 2:
            raise HyperionInputError(f"{owner}.fit: needs at least 2 classes, got {counts.shape[0]}")
        scatter = gram(data)
        if self.update_W or not self.is_fitted:
            _refuse_no_within(owner, counts, sums, scatter)
        free = data.shape[0] - counts.shape[0]
        if free < data.shape[1] and self.shrinkage == 0.0 and (self.update_W or not self.is_fitted):
            raise HyperionInputError(
                f"{owner}.fit: {data.shape[0]} vectors of {counts.shape[0]} classes leave {free} degrees of "
                f"freedom for a {data.shape[1]}-dim within-class covariance, which is then singular and makes "
                "the LLRs degenerate; set shrinkage (e.g. 0.1) or reduce the dimension first (PCA/LDA)"
            )
        work = copy.copy(self)  # EM runs on a copy; the result is committed only if it is finite
        try:
            with single_threaded_blas():
                if not work.is_fitted:
                    work._initialize(counts, sums, scatter)
                work.elbo_history = []
                stats = _EMStats.build(counts, sums, scatter)
                for epoch in range(epochs):
                    use_md = ml_md != "ml" and (md_epochs is None or epoch in md_epochs)
                    work.elbo_history.append(work._em_step(stats, ml_md != "md", use_md))
        except HyperionInputError as err:
            raise HyperionInputError(f"{err}; the model was not changed") from err
        except (linalg.LinAlgError, ValueError, FloatingPointError, ZeroDivisionError) as err:
            raise HyperionInputError(
                f"{owner}.fit: the statistics are degenerate ({err}); the model was not changed"
            ) from err
        check_fit_result(owner, **work._params())
        self.__dict__.update(work.__dict__)
        self._scorer_cache = None
        return self

    def missing_params(self) -> list[str]:
        """The parameters still unset (save refuses an unfitted PLDA)."""
        return [k for k, v in self._params().items() if v is None]

    @property
    def is_fitted(self) -> bool:
        """Whether every parameter is set."""
        return all(v is not None for v in self._params().values())

    # scoring ---------------------------------------------------------------
    def _scorer(self) -> _Scorer:
        params = self._params()
        require(type(self).__name__, **params)
        key = tuple(id(v) for v in params.values())
        if self._scorer_cache is None or self._scorer_cache[0] != key:
            with single_threaded_blas():
                self._scorer_cache = (key, self._build_scorer())
        return self._scorer_cache[1]

    def _build_scorer(self) -> _Scorer:
        mu, sb, sw = self.covariances()
        return _Scorer.build(mu, sb, sw)

    @property
    def x_dim(self) -> int | None:
        """Embedding dimension, or ``None`` before fitting."""
        mu = getattr(self, "mu", None)
        return None if mu is None else int(mu.shape[0])

    def llr_1vs1(self, x1: Any, x2: Any) -> FloatArray:
        """Log-likelihood ratios of every (enrolment, test) pair.

        ``llr = log p(x1, x2 | same speaker) - log p(x1, x2 | different speakers)``.

        Args:
            x1: float (num_enroll, dim) enrolment embeddings.
            x2: float (num_test, dim) test embeddings.

        Returns:
            float64 (num_enroll, num_test) natural-log LLRs.

        Raises:
            NotFittedError: before fitting or loading.
            HyperionInputError: for wrong shapes or non-finite values.
        """
        scorer = self._scorer()
        owner = type(self).__name__
        a = as_matrix(owner, x1, dim=self.x_dim, what="x1")
        b = as_matrix(owner, x2, dim=self.x_dim, what="x2")
        return scorer.llr_1vs1(a, b)

    def llr_NvsM(self, x1: Any, x2: Any, ids1: Any, ids2: Any, *, method: NvsMMethod = "book") -> FloatArray:
        """LLRs between multi-session models: rows of ``x1`` grouped by ``ids1``, of ``x2`` by ``ids2``.

        Args:
            x1: float (num_rows1, dim); x2: float (num_rows2, dim).
            ids1: (num_rows1,) model labels; ids2: (num_rows2,) labels. Output rows and columns
                follow the sorted unique labels (``np.unique``).
            method: "book" = exact LLR of the two sets under the model; "vavg" = score the mean
                embeddings; "vavg-lnorm" = length-normalize the means first; "savg" = average
                the 1-vs-1 scores.

        Returns:
            float64 (num_models1, num_models2).

        Raises:
            NotFittedError, HyperionInputError: as :meth:`llr_1vs1`; ConfigError for a bad method.
        """
        owner = type(self).__name__
        check_choice(owner, "method", method, ("book", "vavg", "vavg-lnorm", "savg"))
        scorer = self._scorer()
        a = np.asarray(as_matrix(owner, x1, dim=self.x_dim, what="x1"), dtype=np.float64)
        b = np.asarray(as_matrix(owner, x2, dim=self.x_dim, what="x2"), dtype=np.float64)
        n1, f1, g1 = _group(owner, a, ids1)
        n2, f2, g2 = _group(owner, b, ids2)
        if method == "book":
            s1 = (f1 - n1[:, None] * scorer.mu) @ scorer.U
            s2 = (f2 - n2[:, None] * scorer.mu) @ scorer.U
            return scorer.llr_book(s1, n1, s2, n2)
        if method == "savg":
            single = scorer.llr_1vs1(a, b)
            rows = class_stats(single, g1, n1.shape[0])[1] / n1[:, None]
            return class_stats(rows.T.copy(), g2, n2.shape[0])[1].T / n2[None, :]
        m1, m2 = f1 / n1[:, None], f2 / n2[:, None]
        if method == "vavg-lnorm":
            m1 = m1 * np.sqrt(m1.shape[1]) / (np.linalg.norm(m1, axis=1, keepdims=True) + 1e-10)
            m2 = m2 * np.sqrt(m2.shape[1]) / (np.linalg.norm(m2, axis=1, keepdims=True) + 1e-10)
        return scorer.llr_1vs1(m1, m2)

    # serialization ---------------------------------------------------------
    def save_params(self, f: h5py.File) -> None:
        """Write the model's parameter arrays."""
        self._save_params_from_dict(f, self._params())

    @classmethod
    def load_params(cls, f: h5py.File, config: dict[str, Any]) -> Self:
        """Read the model's parameter arrays (all required)."""
        return cls.from_config(config, **cls._load_params_to_dict(f, config["name"], cls.param_names))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_scorer_cache"] = None
        return state


def _refuse_no_within(owner: str, counts: FloatArray, sums: FloatArray, scatter: FloatArray) -> None:
    """Raise if the data has no within-class variation (the within-class covariance would be 0)."""
    total = float(np.trace(scatter))
    within = total - float(np.sum(sums * sums / counts[:, None]))
    if within > 1e-10 * max(total, np.finfo(np.float64).tiny):
        return
    mean = sums.sum(axis=0) / counts.sum()
    if float(np.trace(scatter) - counts.sum() * mean @ mean) <= 1e-10 * max(total, np.finfo(np.float64).tiny):
        why = "the data is constant (every row is the same)"
    elif np.all(counts == 1):
        why = "every speaker has one session"
    else:
        why = "each speaker's sessions are identical"
    raise HyperionInputError(
        f"{owner}.fit: no within-class variation: {why}; PLDA needs >= 2 different sessions per speaker "
        "for some speakers to estimate the within-class covariance"
    )


def _precision(cov: FloatArray, shrinkage: float, fullcov: bool) -> FloatArray:
    cov = shrink(cov, shrinkage)
    if not fullcov:
        return np.diag(1.0 / np.diag(cov))
    return inv_from_chol(chol_pd(cov, "within-class covariance"))


def _check_square(owner: str, key: str, value: FloatArray | None, dim: int | None) -> None:
    if value is not None and dim is not None and value.shape != (dim, dim):
        raise HyperionInputError(f"{owner}.{key}: expected shape ({dim}, {dim}), got {value.shape}")


class SPLDA(_PLDABase):
    """Simplified PLDA: low-rank speaker subspace ``V`` plus full (or diagonal) within-class precision ``W``.

    Args:
        y_dim: speaker-subspace rank; ``None`` = min(dim, num_classes - 1) at the first fit.
        mu: float (dim,) global mean.
        V: float (y_dim, dim) speaker loading matrix (rows span the subspace).
        W: float (dim, dim) within-class precision.
        fullcov_W: full (``True``) or diagonal within-class covariance.
        update_mu, update_V, update_W: which parameters EM re-estimates.
        shrinkage: in [0, 1]; each within-class covariance estimate is shrunk towards its scaled
            identity (Ledoit & Wolf 2004) before it is inverted. 0 (the default, as upstream)
            is plain ML. Use 0.05-0.3 when the data has few vectors per dimension, e.g. a few
            hundred 256-dim embeddings: with fewer than dim + num_classes vectors the ML
            within-class covariance is singular and the LLRs degenerate.
        name, save_dtype: see :class:`HyperNPModel`.

    Raises:
        ConfigError: for settings of the wrong type; HyperionInputError: for inconsistent shapes.
    """

    param_names = ("mu", "V", "W")
    legacy_keys: ClassVar[Mapping[str, str | None]] = {"x_dim": None}

    def __init__(
        self,
        y_dim: int | None = None,
        mu: Any = None,
        V: Any = None,
        W: Any = None,
        fullcov_W: bool = True,
        update_mu: bool = True,
        update_V: bool = True,
        update_W: bool = True,
        shrinkage: float = 0.0,
        *,
        name: str | None = None,
        save_dtype: str | None = None,
    ) -> None:
        super().__init__(name=name, save_dtype=save_dtype)
        owner = type(self).__name__
        self.mu = param(owner, "mu", mu, ndim=1)
        self.V = param(owner, "V", V, ndim=2)
        self.W = param(owner, "W", W, ndim=2)
        self.y_dim = check_int(owner, "y_dim", y_dim, minimum=1, optional=True)
        if self.V is not None:
            self.y_dim = int(self.V.shape[0])
            if self.mu is not None and self.V.shape[1] != self.mu.shape[0]:
                raise HyperionInputError(f"{owner}: V has shape {self.V.shape} but mu has {self.mu.shape}")
        _check_square(owner, "W", self.W, self.x_dim)
        self.fullcov_W = check_bool(owner, "fullcov_W", fullcov_W)
        self.update_mu = check_bool(owner, "update_mu", update_mu)
        self.update_V = check_bool(owner, "update_V", update_V)
        self.update_W = check_bool(owner, "update_W", update_W)
        self.shrinkage = check_float(owner, "shrinkage", shrinkage, low=0.0, high=1.0)

    def get_config(self) -> dict[str, Any]:
        """Config: base keys plus ``y_dim``, ``fullcov_W`` and the ``update_*`` flags."""
        return {
            **super().get_config(),
            "y_dim": self.y_dim,
            "fullcov_W": self.fullcov_W,
            "update_mu": self.update_mu,
            "update_V": self.update_V,
            "update_W": self.update_W,
            "shrinkage": self.shrinkage,
        }

    def covariances(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``Sb = V^T V``, ``Sw = W^-1``."""
        require(type(self).__name__, mu=self.mu, V=self.V, W=self.W)
        v = np.asarray(self.V, dtype=np.float64)
        return np.asarray(self.mu, dtype=np.float64), v.T @ v, inv_pd(np.asarray(self.W, np.float64), "W")

    def _build_scorer(self) -> _Scorer:
        mu, v, w = (np.asarray(p, dtype=np.float64) for p in (self.mu, self.V, self.W))
        return _Scorer.low_rank(mu, v, w)

    def _initialize(self, counts: FloatArray, sums: FloatArray, scatter: FloatArray) -> None:
        means = sums / counts[:, None]
        mu = means.mean(axis=0)
        # Leading right singular vectors of the centred class means, scaled by the singular
        # values (upstream's initialization), from the (dim, dim) Gram matrix: an eigh of a
        # small matrix instead of an SVD of (num_classes, dim).
        centred = means - mu
        eigvals, eigvecs = linalg.eigh(gram(centred), driver="evd", check_finite=False)
        eigvals, eigvecs = eigvals[::-1], eigvecs[:, ::-1]
        rank = min(sums.shape[1], counts.shape[0])
        limit = min(sums.shape[1], counts.shape[0] - 1)
        self.y_dim = min(self.y_dim or limit, rank)
        self.mu = mu
        singular = np.sqrt(np.maximum(eigvals[: self.y_dim], 0.0))
        self.V = singular[:, None] * eigvecs[:, : self.y_dim].T
        scaled = sums / np.sqrt(counts)[:, None]  # sum_i f_i f_i^T / N_i as one syrk
        within = (scatter - scaled.T @ scaled) / counts.sum()
        self.W = _precision(within, self.shrinkage, self.fullcov_W)

    def _em_step(self, stats: _EMStats, use_ml: bool, use_md: bool) -> float:
        mu, v, w = (np.asarray(p, dtype=np.float64) for p in (self.mu, self.V, self.W))
        counts, num_classes, total = stats.counts, stats.num_classes, stats.total
        y_dim, x_dim = v.shape
        wv = w @ v.T  # (dim, y_dim)
        vv = v @ wv  # (y_dim, y_dim)
        lam, q, info = lapack.dsyevd(0.5 * (vv + vv.T), compute_v=1, lower=0)
        if info != 0:
            raise linalg.LinAlgError(f"syevd failed (info={info})")
        lam = np.maximum(lam, 0.0)
        # E-step: posterior of y_i is N(L_i^-1 gamma_i, L_i^-1) with L_i = I + N_i V W V^T
        # = Q diag(1 + N_i lam) Q^T. All statistics are accumulated in the eigenbasis Q (suffix
        # _q) and the M-step solves there too; only V (and, for the MD step, the y covariance)
        # is rotated back. gamma_q = (F_i - N_i mu) W V^T Q without the centred copy of F.
        proj = wv @ q  # (dim, y_dim)
        if self.update_mu:
            gamma_q = stats.sums @ proj
            gamma_q -= counts[:, None] * (mu @ proj)
        else:  # mu is fixed for the whole fit: centre the sums once
            gamma_q = stats.centred_sums(self.mu if self.mu is mu else mu) @ proj
        # Eigenvalues of L_i^-1 depend on the class only through N_i: one row per distinct size.
        inv_size = 1.0 / (1.0 + stats.sizes[:, None] * lam)  # (distinct, y_dim)
        y_q = gamma_q * inv_size[stats.size_index]
        # Per-class terms that depend only on N_i: summed over the distinct class sizes.
        logdet_l_sum = float(stats.size_counts @ np.log1p(stats.sizes[:, None] * lam).sum(axis=1))
        logpy_sum = -0.5 * num_classes * y_dim * _LOG_2PI + 0.5 * (logdet_l_sum - float(np.vdot(y_q, gamma_q)))
        # ELBO (for monitoring), as upstream Hyperion computes it; tr(W S_hat) with the centred
        # scatter S_hat = S - f mu^T - mu f^T + N mu mu^T expanded, so no (dim, dim) temporaries.
        f_tot = stats.f_tot
        logdet_w = stats.logdet_w(self.W if self.W is w else w)
        w_mu = w @ mu
        trace_ws = float(np.vdot(w, stats.scatter)) - 2.0 * float(f_tot @ w_mu) + total * float(mu @ w_mu)
        elbo = 0.5 * (-total * x_dim * _LOG_2PI + total * logdet_w - trace_ws)
        elbo += -0.5 * num_classes * y_dim * _LOG_2PI - logpy_sum
        if use_ml:
            scaled = y_q * stats.sqrt_counts
            ry_q = scaled.T @ scaled
            ry_q[np.diag_indices(y_dim)] += (stats.size_counts * stats.sizes) @ inv_size
            ry1_q = counts @ y_q
            cy_q = stats.sums.T @ y_q  # (dim, y_dim)
            self._mstep_ml(stats, q, ry1_q, ry_q, cy_q)
        if use_md:
            mu_y_q = y_q.sum(axis=0) / num_classes
            if self.update_mu:
                self.mu = np.asarray(self.mu, np.float64) + (q @ mu_y_q) @ np.asarray(self.V, np.float64)
            if self.update_V:
                py_q = y_q.T @ y_q  # NumPy runs x^T x as one syrk
                py_q[np.diag_indices(y_dim)] += stats.size_counts @ inv_size
                cov_y = q @ (py_q / num_classes - np.outer(mu_y_q, mu_y_q)) @ q.T
                self.V = chol_pd(cov_y, "posterior covariance of y") @ np.asarray(self.V, np.float64)
        return float(elbo)

    def _mstep_ml(self, stats: _EMStats, q: FloatArray, ry1_q: FloatArray, ry_q: FloatArray, cy_q: FloatArray) -> None:
        """ML M-step from the E-step statistics in the eigenbasis ``q`` (``Ry = q Ry_q q^T``, ``Cy = Cy_q q^T``).

        With ``V = q V_q`` the normal equations ``Ry V = Cy^T - ...`` become ``Ry_q V_q = Cy_q^T - ...``,
        and ``Cy V = Cy_q V_q``, so nothing of size (y_dim, y_dim) needs rotating back.
        """
        mu, v = np.asarray(self.mu, np.float64), np.asarray(self.V, np.float64)
        total, f_tot, scatter = stats.total, stats.f_tot, stats.scatter
        if self.update_V:
            if self.update_mu:
                r_tilde = np.block([[ry_q, ry1_q[:, None]], [ry1_q[None, :], np.array([[total]])]])
                v_tilde = solve_pd(r_tilde, np.hstack([cy_q, f_tot[:, None]]).T)
                v_q, mu = v_tilde[:-1], v_tilde[-1]
                # At the joint ML solution the quadratic terms cancel: W^-1 = (S - Cy V - f mu^T) / N.
                cov_w = scatter - cy_q @ v_q - np.outer(f_tot, mu)
            else:
                v_q = solve_pd(ry_q, cy_q.T - np.outer(ry1_q, mu))
                # With Ry_q V_q = Cy_q^T - ry1_q mu^T, the general update
                # S - Ct Vt - Vt^T Ct^T + Vt^T Rt Vt (Vt = [V; mu]) reduces to
                # S - Cy V - f mu^T - mu f^T + mu (ry1^T V) + N mu mu^T.
                cov_w = scatter - cy_q @ v_q - np.outer(f_tot, mu) - np.outer(mu, f_tot - ry1_q @ v_q - total * mu)
            v = q @ v_q
        else:
            ry1 = q @ ry1_q
            if self.update_mu:
                mu = (f_tot - ry1 @ v) / total
            ry = q @ ry_q @ q.T
            cy = cy_q @ q.T
            v_tilde = np.vstack([v, mu])
            r_tilde = np.block([[ry, ry1[:, None]], [ry1[None, :], np.array([[total]])]])
            cvt = np.hstack([cy, f_tot[:, None]]) @ v_tilde
            cov_w = scatter - cvt - cvt.T + v_tilde.T @ r_tilde @ v_tilde
        if self.update_W:
            shrunk = shrink(cov_w / total, self.shrinkage)
            if self.fullcov_W:
                factor = chol_pd(shrunk, "within-class covariance")
                self.W = inv_from_chol(factor)
                stats.w_logdet[:] = [self.W, -2.0 * float(np.sum(np.log(np.diag(factor))))]
            else:
                self.W = np.diag(1.0 / np.diag(shrunk))
        self.mu, self.V = mu, v

    def sample(self, num_classes: int, num_per_class: int, rng: np.random.Generator) -> tuple[FloatArray, NDArray[Any]]:
        """Draw ``num_classes * num_per_class`` embeddings from the model.

        Returns:
            ``(x (num_classes*num_per_class, dim) float64, labels (same,) int)``.
        """
        mu, _, sw = self.covariances()
        chol_w = linalg.cholesky(sw, lower=False)
        y = rng.standard_normal((num_classes, int(np.asarray(self.V).shape[0]))) @ np.asarray(self.V, np.float64)
        labels = np.repeat(np.arange(num_classes), num_per_class)
        noise = rng.standard_normal((labels.shape[0], mu.shape[0])) @ chol_w
        return mu + y[labels] + noise, labels


class FRPLDA(_PLDABase):
    """Full-rank PLDA: speaker means ``y ~ N(mu, B^-1)``, embeddings ``x ~ N(y, W^-1)``.

    Fixes two upstream EM defects: the within-class update now includes the posterior
    covariance of ``y`` (upstream left it out of ``Ry``), and the between-class update with
    ``update_mu=False`` uses ``mu ybar^T + ybar mu^T`` (upstream subtracted one term twice).

    Args:
        mu: float (dim,) mean of speaker means.
        B: float (dim, dim) between-class precision.
        W: float (dim, dim) within-class precision.
        fullcov_W: full (``True``) or diagonal within-class covariance.
        update_mu, update_B, update_W: which parameters EM re-estimates.
        shrinkage: in [0, 1]; each within-class covariance estimate is shrunk towards its scaled
            identity (Ledoit & Wolf 2004) before it is inverted. 0 (the default, as upstream)
            is plain ML. Use 0.05-0.3 when the data has few vectors per dimension, e.g. a few
            hundred 256-dim embeddings: with fewer than dim + num_classes vectors the ML
            within-class covariance is singular and the LLRs degenerate.
        name, save_dtype: see :class:`HyperNPModel`.
    """

    param_names = ("mu", "B", "W")
    legacy_keys: ClassVar[Mapping[str, str | None]] = {"x_dim": None, "y_dim": None}

    def __init__(
        self,
        mu: Any = None,
        B: Any = None,
        W: Any = None,
        fullcov_W: bool = True,
        update_mu: bool = True,
        update_B: bool = True,
        update_W: bool = True,
        shrinkage: float = 0.0,
        *,
        name: str | None = None,
        save_dtype: str | None = None,
    ) -> None:
        super().__init__(name=name, save_dtype=save_dtype)
        owner = type(self).__name__
        self.mu = param(owner, "mu", mu, ndim=1)
        self.B = param(owner, "B", B, ndim=2)
        self.W = param(owner, "W", W, ndim=2)
        _check_square(owner, "B", self.B, self.x_dim)
        _check_square(owner, "W", self.W, self.x_dim)
        self.fullcov_W = check_bool(owner, "fullcov_W", fullcov_W)
        self.update_mu = check_bool(owner, "update_mu", update_mu)
        self.update_B = check_bool(owner, "update_B", update_B)
        self.update_W = check_bool(owner, "update_W", update_W)
        self.shrinkage = check_float(owner, "shrinkage", shrinkage, low=0.0, high=1.0)

    def get_config(self) -> dict[str, Any]:
        """Config: base keys plus ``fullcov_W`` and the ``update_*`` flags."""
        return {
            **super().get_config(),
            "fullcov_W": self.fullcov_W,
            "update_mu": self.update_mu,
            "update_B": self.update_B,
            "update_W": self.update_W,
            "shrinkage": self.shrinkage,
        }

    def covariances(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``Sb = B^-1``, ``Sw = W^-1``."""
        require(type(self).__name__, mu=self.mu, B=self.B, W=self.W)
        return (
            np.asarray(self.mu, dtype=np.float64),
            inv_pd(np.asarray(self.B, np.float64), "B"),
            inv_pd(np.asarray(self.W, np.float64), "W"),
        )

    def _initialize(self, counts: FloatArray, sums: FloatArray, scatter: FloatArray) -> None:
        means = sums / counts[:, None]
        within = (scatter - (means * counts[:, None]).T @ means) / counts.sum()
        self.mu = means.mean(axis=0)
        between = means.T @ means / means.shape[0] - np.outer(self.mu, self.mu)
        self.B = inv_pd(between, "between-class covariance")
        self.W = _precision(within, self.shrinkage, True)

    def _em_step(self, stats: _EMStats, use_ml: bool, use_md: bool) -> float:
        mu, b, w = (np.asarray(p, dtype=np.float64) for p in (self.mu, self.B, self.W))
        counts, sums, scatter = stats.counts, stats.sums, stats.scatter
        num_classes, total = stats.num_classes, stats.total
        dim = mu.shape[0]
        # Joint diagonalization Q^T B Q = I, Q^T W Q = diag(lam): L_i^-1 = Q diag(1/(1+N_i lam)) Q^T.
        lam, q = linalg.eigh(0.5 * (w + w.T), 0.5 * (b + b.T), check_finite=False)
        lam = np.maximum(lam, 0.0)
        gamma = sums @ w + mu @ b
        inv_diag = 1.0 / (1.0 + counts[:, None] * lam)
        y = ((gamma @ q) * inv_diag) @ q.T
        logdet_b = logdet_pd(b, "B")
        logdet_l = logdet_b - np.log(inv_diag).sum(axis=1)
        logpy = -0.5 * dim * _LOG_2PI + 0.5 * (logdet_l - np.einsum("ij,ij->i", y, gamma))
        py = (q * inv_diag.sum(axis=0)) @ q.T + y.T @ y
        ry = (q * (counts[:, None] * inv_diag).sum(axis=0)) @ q.T + (y * counts[:, None]).T @ y
        cy = sums.T @ y
        logdet_w = logdet_pd(w, "W")
        elbo = 0.5 * (-total * dim * _LOG_2PI + total * logdet_w - float(np.sum(w * scatter)))
        elbo += 0.5 * num_classes * (-dim * _LOG_2PI + logdet_b - float(mu @ b @ mu)) - float(logpy.sum())
        if use_ml:
            y_bar = y.sum(axis=0) / num_classes
            if self.update_mu:
                mu = y_bar
            if self.update_B:
                cross = np.outer(mu, y_bar)
                self.B = inv_pd(py / num_classes - cross - cross.T + np.outer(mu, mu), "between-class covariance")
            if self.update_W:
                cov_w = (scatter - cy - cy.T + ry) / total
                self.W = _precision(cov_w, self.shrinkage, self.fullcov_W)
            self.mu = mu
        return float(elbo)


__all__ = ["FRPLDA", "SPLDA", "NvsMMethod"]
