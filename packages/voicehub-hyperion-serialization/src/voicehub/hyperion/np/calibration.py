"""Score calibration: map raw verification scores to log-likelihood ratios (natural log).

* :class:`GaussCalibration`: target and non-target scores as Gaussians with a shared variance,
  giving the affine map ``llr = a s + b``, ``a = (mu1 - mu2) / sigma2``,
  ``b = (mu2^2 - mu1^2) / (2 sigma2)`` (Brümmer & du Preez 2006, sec. 3; van Leeuwen & Brümmer 2007).
* :class:`BinaryLogisticRegression`: prior-weighted linear logistic regression, the
  BOSARIS/FoCal calibration and fusion (Brümmer & du Preez 2006, "Application-independent
  evaluation of speaker detection"), which minimizes Cllr at the chosen prior.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

import h5py
import numpy as np
from numpy.typing import NDArray
from scipy import optimize
from scipy.special import expit, log_expit

from voicehub.hyperion.errors import HyperionInputError
from voicehub.hyperion.np._checks import (
    FloatArray,
    check_bool,
    check_fit_result,
    check_float,
    check_int,
    fitted,
    param,
    require,
)
from voicehub.hyperion.np.model import HyperNPModel


def _scores_labels(owner: str, scores: Any, labels: Any) -> tuple[FloatArray, NDArray[np.bool_]]:
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    if s.ndim != 1 or y.shape != s.shape:
        raise HyperionInputError(
            f"{owner}.fit: expected scores and labels of one shape (num_trials,), got {s.shape} and {y.shape}"
        )
    if y.dtype.kind not in "biuf":
        raise HyperionInputError(f"{owner}.fit: labels must be 0 (non-target) or 1 (target), got dtype {y.dtype}")
    valid = (y == 0) | (y == 1)
    if not np.all(valid):
        found = np.unique(y[~valid])
        raise HyperionInputError(
            f"{owner}.fit: labels must be exactly 0 (non-target) or 1 (target); also found {found[:5].tolist()}"
        )
    if not np.all(np.isfinite(s)):
        raise HyperionInputError(f"{owner}.fit: scores contain NaN or infinite values")
    target = y.astype(bool)
    if target.all() or not target.any():
        raise HyperionInputError(f"{owner}.fit: needs both target and non-target scores")
    return s, target


def _as_scores(owner: str, scores: Any) -> FloatArray:
    s = np.asarray(scores)
    if s.dtype.kind not in "fiu" or not np.all(np.isfinite(s)):
        raise HyperionInputError(f"{owner}.predict: expected finite numeric scores, got dtype {s.dtype}")
    out: FloatArray = s.astype(np.result_type(s.dtype, np.float32), copy=False)
    return out


class GaussCalibration(HyperNPModel):
    """Gaussian (linear) calibration with a shared variance.

    Args:
        mu1: target score mean; mu2: non-target score mean; sigma2: shared variance (> 0).
        prior: target prior of the training trials (saved; upstream did not save it).
        name, save_dtype: see :class:`HyperNPModel`.
    """

    def __init__(
        self,
        mu1: Any = None,
        mu2: Any = None,
        sigma2: Any = None,
        prior: float = 0.5,
        *,
        name: str | None = None,
        save_dtype: str | None = None,
    ) -> None:
        super().__init__(name=name, save_dtype=save_dtype)
        owner = type(self).__name__
        self.mu1 = param(owner, "mu1", mu1, ndim=0)
        self.mu2 = param(owner, "mu2", mu2, ndim=0)
        self.sigma2 = param(owner, "sigma2", sigma2, ndim=0)
        if self.sigma2 is not None and not float(self.sigma2) > 0:
            raise HyperionInputError(f"{owner}.sigma2: must be > 0, got {float(self.sigma2)}")
        self.prior = check_float(owner, "prior", prior, low=0.0, high=1.0)

    def get_config(self) -> dict[str, Any]:
        """Config: base keys plus ``prior``."""
        return {**super().get_config(), "prior": self.prior}

    def fit(self, scores: Any, labels: Any) -> Self:
        """ML estimate from ``scores`` (num_trials,) and ``labels`` (num_trials,), 1 = target.

        Raises:
            HyperionInputError: for mismatched shapes, other labels, or a single class.
        """
        owner = type(self).__name__
        s, target = _scores_labels(owner, scores, labels)
        tar, non = s[target], s[~target]
        mu1, mu2 = np.asarray(tar.mean()), np.asarray(non.mean())
        sigma2 = (np.sum((tar - mu1) ** 2) + np.sum((non - mu2) ** 2)) / s.shape[0]
        if not float(sigma2) > 0.0:
            raise HyperionInputError(
                f"{owner}.fit: the target scores and the non-target scores are each constant (zero variance); "
                "calibration needs varying scores"
            )
        check_fit_result(owner, mu1=mu1, mu2=mu2, sigma2=sigma2)
        self.mu1, self.mu2, self.sigma2 = mu1, mu2, np.asarray(float(sigma2))
        self.prior = float(target.mean())
        return self

    def missing_params(self) -> list[str]:
        """``mu1``, ``mu2``, ``sigma2`` while unset (save refuses an unfitted calibration)."""
        return [k for k in ("mu1", "mu2", "sigma2") if getattr(self, k) is None]

    @property
    def scale_bias(self) -> tuple[float, float]:
        """``(a, b)`` of ``llr = a s + b``."""
        require(type(self).__name__, mu1=self.mu1, mu2=self.mu2, sigma2=self.sigma2)
        mu1, mu2, sigma2 = float(np.asarray(self.mu1)), float(np.asarray(self.mu2)), float(np.asarray(self.sigma2))
        return (mu1 - mu2) / sigma2, 0.5 * (mu2 * mu2 - mu1 * mu1) / sigma2

    def predict(self, scores: Any) -> FloatArray:
        """Calibrated LLRs, same shape as ``scores``, float64 (float32 for float32 input)."""
        a, b = self.scale_bias
        s = _as_scores(type(self).__name__, scores)
        out: FloatArray = (a * s + b).astype(s.dtype, copy=False)
        return out

    def save_params(self, f: h5py.File) -> None:
        """Write ``mu1``, ``mu2``, ``sigma2``."""
        self._save_params_from_dict(f, {"mu1": self.mu1, "mu2": self.mu2, "sigma2": self.sigma2})

    @classmethod
    def load_params(cls, f: h5py.File, config: dict[str, Any]) -> Self:
        """Read ``mu1``, ``mu2``, ``sigma2`` (upstream read ``sigma2`` from the config: a KeyError)."""
        return cls.from_config(config, **cls._load_params_to_dict(f, config["name"], ["mu1", "mu2", "sigma2"]))


class BinaryLogisticRegression(HyperNPModel):
    """Prior-weighted linear logistic regression producing LLRs: ``llr = x @ A + b``.

    Minimizes ``P/N_tar sum log(1 + exp(-(llr + logit P)))
    + (1-P)/N_non sum log(1 + exp(llr + logit P)) + lambda_reg |A|^2`` (the Cllr objective at
    prior P, Brümmer & du Preez 2006) with L-BFGS.

    Args:
        A: float (dim, 1) weights; b: float (1,) bias.
        prior: target prior ``P`` in (0, 1) of the training objective.
        lambda_reg: L2 penalty on ``A`` (>= 0).
        use_bias: fit ``b`` (``False`` keeps it 0).
        max_iter: L-BFGS iteration limit; tol: gradient tolerance.
        name, save_dtype: see :class:`HyperNPModel`.
    """

    legacy_keys: ClassVar[Mapping[str, str | None]] = {
        key: None
        for key in (
            "penalty",
            "bias_scaling",
            "random_state",
            "solver",
            "dual",
            "verbose",
            "warm_start",
            "lr_seed",
            "multi_class",
            "class_weight",
        )
    }

    def __init__(
        self,
        A: Any = None,
        b: Any = None,
        prior: float = 0.5,
        lambda_reg: float = 1e-6,
        use_bias: bool = True,
        max_iter: int = 100,
        tol: float = 1e-4,
        *,
        name: str | None = None,
        save_dtype: str | None = None,
    ) -> None:
        super().__init__(name=name, save_dtype=save_dtype)
        owner = type(self).__name__
        self.A = param(owner, "A", A)
        if self.A is not None:
            self.A = self.A.reshape(-1, 1) if self.A.ndim == 1 else self.A
        self.b = param(owner, "b", b)
        self.prior = check_float(owner, "prior", prior, low=0.0, high=1.0, open_low=True)
        if self.prior >= 1.0:
            raise HyperionInputError(f"{owner}.prior: must be < 1, got {self.prior}")
        self.lambda_reg = check_float(owner, "lambda_reg", lambda_reg, low=0.0)
        self.use_bias = check_bool(owner, "use_bias", use_bias)
        self.max_iter = check_int(owner, "max_iter", max_iter, minimum=1)
        self.tol = check_float(owner, "tol", tol, low=0.0)

    @classmethod
    def migrate_legacy_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        """Upstream stores ``priors: {"0": 1 - P, "1": P}``; keep ``P`` as ``prior``."""
        out = super().migrate_legacy_config(config)
        priors = out.pop("priors", None)
        if isinstance(priors, Mapping) and "1" in priors and "prior" not in out:
            out["prior"] = float(priors["1"])
        return out

    def get_config(self) -> dict[str, Any]:
        """Config: base keys plus the training settings."""
        return {
            **super().get_config(),
            "prior": self.prior,
            "lambda_reg": self.lambda_reg,
            "use_bias": self.use_bias,
            "max_iter": self.max_iter,
            "tol": self.tol,
        }

    @staticmethod
    def _features(owner: str, x: Any) -> FloatArray:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or not np.all(np.isfinite(arr)):
            raise HyperionInputError(f"{owner}: expected finite scores (num_trials,) or (num_trials, num_systems)")
        return arr

    def fit(self, x: Any, labels: Any) -> Self:
        """Train on scores ``x`` (num_trials,) or (num_trials, num_systems) and 0/1 ``labels``.

        Raises:
            HyperionInputError: for mismatched shapes, other labels, or a single class.
        """
        owner = type(self).__name__
        feats = self._features(owner, x)
        _, target = _scores_labels(owner, feats[:, 0], labels)
        dim = feats.shape[1]
        offset = float(np.log(self.prior) - np.log1p(-self.prior))
        sign = np.where(target, 1.0, -1.0)
        weight = np.where(target, self.prior / target.sum(), (1 - self.prior) / (~target).sum())

        def objective(theta: FloatArray) -> tuple[float, FloatArray]:
            a, bias = theta[:dim], (theta[dim] if self.use_bias else 0.0)
            z = sign * (feats @ a + bias + offset)
            loss = -float(np.sum(weight * log_expit(z))) + self.lambda_reg * float(a @ a)
            g = -weight * sign * expit(-z)
            grad = np.concatenate([feats.T @ g + 2 * self.lambda_reg * a, [g.sum()] if self.use_bias else [0.0]])
            return loss, grad

        result = optimize.minimize(
            objective,
            np.zeros(dim + 1),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": self.max_iter, "gtol": self.tol * 1e-3},
        )
        weights_new, bias_new = result.x[:dim, None].copy(), np.array([result.x[dim] if self.use_bias else 0.0])
        check_fit_result(owner, A=weights_new, b=bias_new)
        self.A, self.b = weights_new, bias_new
        return self

    def missing_params(self) -> list[str]:
        """``A`` and/or ``b`` while unset (save refuses an unfitted model)."""
        return [k for k in ("A", "b") if getattr(self, k) is None]

    def predict(self, x: Any) -> FloatArray:
        """LLRs of ``x``: float64 (num_trials,).

        Raises:
            NotFittedError: before fitting; HyperionInputError: for a wrong number of systems.
        """
        owner = type(self).__name__
        require(owner, A=self.A, b=self.b)
        weights, bias = fitted(owner, "A", self.A), fitted(owner, "b", self.b)
        feats = self._features(owner, x)
        if feats.shape[1] != weights.shape[0]:
            raise HyperionInputError(f"{owner}: expected {weights.shape[0]} score column(s), got {feats.shape[1]}")
        out: FloatArray = (feats @ np.asarray(weights, np.float64) + np.asarray(bias, np.float64)).ravel()
        return out

    def save_params(self, f: h5py.File) -> None:
        """Write ``A`` and ``b``."""
        self._save_params_from_dict(f, {"A": self.A, "b": self.b})

    @classmethod
    def load_params(cls, f: h5py.File, config: dict[str, Any]) -> Self:
        """Read ``A`` and ``b``."""
        return cls.from_config(config, **cls._load_params_to_dict(f, config["name"], ["A", "b"]))


__all__ = ["BinaryLogisticRegression", "GaussCalibration"]
