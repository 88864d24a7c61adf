"""Linear Gaussian back-end classifier (``LinearGBE``).

Each class ``c`` is a Gaussian ``N(mu_c, W^-1)`` with a shared precision ``W``; the class
log-likelihoods are linear in ``x`` up to a class-independent term:
``logit_c(x) = x^T W mu_c - 0.5 mu_c^T W mu_c`` (Bishop 2006, sec. 4.2.1). Parameters follow
upstream Hyperion: ``mu`` (num_classes, dim), ``W`` (dim, dim), ``beta`` (num_classes,) and
``nu`` () -- the Normal-Wishart posterior counts (here the ML class counts and total count).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

import h5py
import numpy as np
from scipy.special import logsumexp

from voicehub.hyperion.errors import HyperionInputError
from voicehub.hyperion.np._checks import (
    FloatArray,
    as_labels,
    as_matrix,
    check_bool,
    check_fit_result,
    check_int,
    class_stats,
    fitted,
    param,
    require,
    single_threaded_blas,
)
from voicehub.hyperion.np.linalg import inv_pd
from voicehub.hyperion.np.model import HyperNPModel


class LinearGBE(HyperNPModel):
    """Linear Gaussian back-end: class means with a shared within-class precision.

    Args:
        mu: float (num_classes, dim) class means.
        W: float (dim, dim) shared within-class precision.
        beta: float (num_classes,) per-class counts; nu: float scalar total count.
        balance_class_weight: weight every class equally in the pooled covariance.
        update_mu, update_W: which parameters :meth:`fit` estimates.
        x_dim, num_classes: dimensions (filled in by fit or from ``mu``).
        name, save_dtype: see :class:`HyperNPModel`.

    The upstream MAP-adaptation settings (``prior_beta``, ``prior_nu``, ``post_beta``,
    ``post_nu``) are not supported; old files that carry them load, with the keys dropped.
    """

    legacy_keys: ClassVar[Mapping[str, str | None]] = {
        "prior_beta": None,
        "prior_nu": None,
        "post_beta": None,
        "post_nu": None,
        "labels": None,
    }

    def __init__(
        self,
        mu: Any = None,
        W: Any = None,
        beta: Any = None,
        nu: Any = None,
        balance_class_weight: bool = True,
        update_mu: bool = True,
        update_W: bool = True,
        x_dim: int | None = None,
        num_classes: int | None = None,
        *,
        name: str | None = None,
        save_dtype: str | None = None,
    ) -> None:
        super().__init__(name=name, save_dtype=save_dtype)
        owner = type(self).__name__
        self.mu = param(owner, "mu", mu, ndim=2)
        self.W = param(owner, "W", W, ndim=2)
        self.beta = param(owner, "beta", beta)
        self.nu = param(owner, "nu", nu)
        self.balance_class_weight = check_bool(owner, "balance_class_weight", balance_class_weight)
        self.update_mu = check_bool(owner, "update_mu", update_mu)
        self.update_W = check_bool(owner, "update_W", update_W)
        self.x_dim = check_int(owner, "x_dim", x_dim, minimum=1, optional=True)
        self.num_classes = check_int(owner, "num_classes", num_classes, minimum=1, optional=True)
        if self.mu is not None:
            self.num_classes, self.x_dim = int(self.mu.shape[0]), int(self.mu.shape[1])
        if self.W is not None and self.x_dim is not None and self.W.shape != (self.x_dim, self.x_dim):
            raise HyperionInputError(f"{owner}.W: expected shape ({self.x_dim}, {self.x_dim}), got {self.W.shape}")

    def get_config(self) -> dict[str, Any]:
        """Config: base keys plus the flags and dimensions."""
        return {
            **super().get_config(),
            "balance_class_weight": self.balance_class_weight,
            "update_mu": self.update_mu,
            "update_W": self.update_W,
            "x_dim": self.x_dim,
            "num_classes": self.num_classes,
        }

    def fit(self, x: Any, labels: Any) -> Self:
        """ML estimate from ``x`` (num_rows, dim) and integer ``labels`` (num_rows,) in [0, num_classes).

        Raises:
            HyperionInputError: for bad arrays, labels that are not integers, or fewer than 2 classes.
        """
        owner = type(self).__name__
        data = np.asarray(as_matrix(owner, x), dtype=np.float64)
        raw = np.asarray(labels)
        if raw.dtype.kind not in "iu" or raw.ndim != 1 or raw.shape[0] != data.shape[0] or raw.min() < 0:
            raise HyperionInputError(f"{owner}.fit: expected non-negative int labels of shape ({data.shape[0]},)")
        num_classes = max(int(raw.max()) + 1, self.num_classes or 0)
        ids = raw.astype(np.int64)
        as_labels(owner, ids, data.shape[0])
        counts, sums = class_stats(data, ids, num_classes)
        if np.count_nonzero(counts) < 2:
            raise HyperionInputError(f"{owner}.fit: needs at least 2 classes with data")
        kept = {
            "mu": (None if self.update_mu else self.mu, (num_classes, data.shape[1])),
            "W": (None if self.update_W else self.W, (data.shape[1], data.shape[1])),
        }
        for key, (value, shape) in kept.items():
            if value is not None and value.shape != shape:
                raise HyperionInputError(
                    f"{owner}.fit: the kept {key} (update_{key}=False) has shape {value.shape}, but x and labels "
                    f"need {shape}; fit on matching data"
                )
        means = sums / np.maximum(counts, 1.0)[:, None]
        new_mu = means if self.update_mu else self.mu
        new_w = self.W
        if self.update_W:
            delta = data - means[ids]
            weights = (1.0 / np.maximum(counts, 1.0))[ids] if self.balance_class_weight else np.ones(ids.shape[0])
            cov = (delta * weights[:, None]).T @ delta / weights.sum()
            if not float(np.trace(cov)) > 0.0:
                raise HyperionInputError(
                    f"{owner}.fit: no within-class variation (every class has one row, or its rows are identical); "
                    "needs >= 2 different rows for some classes"
                )
            with single_threaded_blas():
                new_w = inv_pd(cov, "within-class covariance")
        check_fit_result(owner, mu=new_mu, W=new_w)
        self.mu, self.W = new_mu, new_w
        self.beta, self.nu = counts, np.asarray(float(counts.sum()))
        self.num_classes, self.x_dim = num_classes, data.shape[1]
        return self

    def missing_params(self) -> list[str]:
        """``mu`` and/or ``W`` while unset (save refuses an unfitted model)."""
        return [k for k in ("mu", "W") if getattr(self, k) is None]

    def predict(self, x: Any, *, normalize: bool = False) -> FloatArray:
        """Class scores of ``x`` (num_rows, dim).

        Args:
            normalize: return log posteriors under equal priors instead of linear logits.

        Returns:
            float64 (num_rows, num_classes).

        Raises:
            NotFittedError, HyperionInputError.
        """
        owner = type(self).__name__
        require(owner, mu=self.mu, W=self.W)
        data = np.asarray(as_matrix(owner, x, dim=self.x_dim), dtype=np.float64)
        mu = np.asarray(fitted(owner, "mu", self.mu), np.float64)
        w = np.asarray(fitted(owner, "W", self.W), np.float64)
        a = w @ mu.T
        b = -0.5 * np.einsum("cd,dc->c", mu, a)
        logits: FloatArray = data @ a + b
        if normalize:
            logits = logits - logsumexp(logits, axis=1, keepdims=True)
        return logits

    def save_params(self, f: h5py.File) -> None:
        """Write ``mu``, ``W``, ``beta``, ``nu``."""
        self._save_params_from_dict(f, {"mu": self.mu, "W": self.W, "beta": self.beta, "nu": self.nu})

    @classmethod
    def load_params(cls, f: h5py.File, config: dict[str, Any]) -> Self:
        """Read ``mu`` and ``W`` (required) and ``beta``, ``nu`` (optional)."""
        params = cls._load_params_to_dict(f, config["name"], ["mu", "W", "beta", "nu"], optional=["beta", "nu"])
        return cls.from_config(config, **params)


__all__ = ["LinearGBE"]
