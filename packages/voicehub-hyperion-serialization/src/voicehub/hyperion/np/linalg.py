"""Symmetric positive-definite linear algebra for the PLDA models (LAPACK/BLAS through SciPy).

Every routine takes float64 matrices and returns float64 results; a numerically singular
covariance (few training vectors for the dimension) gets a small jitter before its Cholesky
factorisation instead of an error, and a truly indefinite one raises
:class:`~voicehub.hyperion.errors.HyperionInputError`.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.linalg import blas, lapack

from voicehub.hyperion.errors import HyperionInputError
from voicehub.hyperion.np._checks import FloatArray


def chol_pd(matrix: FloatArray, what: str = "matrix") -> FloatArray:
    """Upper Cholesky factor ``R`` (``R^T R = A``) of a symmetric positive-definite matrix.

    A jitter of up to 1e-2 x mean(|diag|) is added when the matrix is numerically singular
    (few training vectors for the dimension).

    Raises:
        HyperionInputError: if the matrix has NaN/infinite entries or stays indefinite.
    """
    if not np.all(np.isfinite(matrix)):
        raise HyperionInputError(f"PLDA: {what} contains NaN or infinite values")
    sym = 0.5 * (matrix + matrix.T)
    upper, info = lapack.dpotrf(sym, lower=0, clean=1)  # the common case, without wrapper checks
    if info == 0:
        first: FloatArray = upper
        return first
    eye = np.eye(sym.shape[0])
    scale = max(float(np.mean(np.abs(np.diag(sym)))), np.finfo(np.float64).tiny)
    for jitter in (1e-10, 1e-8, 1e-6, 1e-4, 1e-2):
        try:
            factor: FloatArray = linalg.cholesky(sym + jitter * scale * eye, lower=False, check_finite=False)
        except linalg.LinAlgError:
            continue
        return factor
    raise HyperionInputError(f"PLDA: {what} is not positive definite (too few or collinear training vectors?)")


def inv_pd(matrix: FloatArray, what: str = "matrix") -> FloatArray:
    """Inverse of a symmetric positive-definite matrix via :func:`chol_pd` (symmetric result)."""
    factor = chol_pd(matrix, what)
    inv: FloatArray = linalg.cho_solve((factor, False), np.eye(factor.shape[0]), check_finite=False)
    return 0.5 * (inv + inv.T)


def inv_from_chol(factor: FloatArray) -> FloatArray:
    """Symmetric inverse ``A^-1`` from the upper Cholesky factor of ``A`` (LAPACK potri, no identity solve)."""
    upper, info = lapack.dpotri(factor, lower=0)
    if info != 0:
        raise linalg.LinAlgError(f"potri failed (info={info})")
    out: FloatArray = np.triu(upper) + np.triu(upper, 1).T
    return out


def solve_pd(matrix: FloatArray, rhs: FloatArray) -> FloatArray:
    """``matrix^-1 rhs`` for a symmetric positive-definite ``matrix`` (LAPACK posv, upper triangle)."""
    _, out, info = lapack.dposv(matrix, rhs, lower=0)
    if info != 0:
        raise linalg.LinAlgError(f"posv failed (info={info}): matrix not positive definite")
    result: FloatArray = out
    return result


def gram(x: FloatArray) -> FloatArray:
    """``x^T x`` (dim, dim) of a float64 (num_rows, dim) matrix with one symmetric BLAS update (syrk)."""
    upper = blas.dsyrk(1.0, np.asfortranarray(x.T), trans=0, lower=0)
    out: FloatArray = np.triu(upper) + np.triu(upper, 1).T
    return out


def logdet_pd(matrix: FloatArray, what: str = "matrix") -> float:
    """log det of a symmetric positive-definite matrix."""
    return 2.0 * float(np.sum(np.log(np.diag(chol_pd(matrix, what)))))


def shrink(cov: FloatArray, shrinkage: float) -> FloatArray:
    """``(1 - a) C + a (tr C / d) I``: shrink a covariance towards its scaled identity (Ledoit & Wolf 2004)."""
    if shrinkage == 0.0:
        return cov
    target = float(np.trace(cov)) / cov.shape[0]
    out: FloatArray = (1.0 - shrinkage) * cov + shrinkage * target * np.eye(cov.shape[0])
    return out


__all__ = ["chol_pd", "gram", "inv_from_chol", "inv_pd", "logdet_pd", "shrink", "solve_pd"]
