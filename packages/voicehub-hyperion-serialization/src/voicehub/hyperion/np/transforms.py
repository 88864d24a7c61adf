"""Feature transforms for speaker embeddings: centering/whitening, length norm, PCA, LDA, chains.

All transforms map ``x`` of shape (num_rows, in_dim) to (num_rows, out_dim) and keep the
input's floating dtype (float32 stays float32; integer input becomes float64). Parameter names
and config keys follow the upstream Hyperion toolkit so its files load unchanged:
``mu`` (in_dim,) and ``T`` (in_dim, out_dim) stored at ``/<name>/mu``, ``/<name>/T``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

import h5py
import numpy as np
from scipy import linalg

from voicehub.core.errors import ConfigError, UnknownConfigKeyError
from voicehub.hyperion.errors import HyperionInputError, UnknownHyperionClassError
from voicehub.hyperion.np import _registry
from voicehub.hyperion.np._checks import (
    FloatArray,
    as_labels,
    as_matrix,
    check_bool,
    check_fit_result,
    check_float,
    check_int,
    class_stats,
    param,
    require,
    single_threaded_blas,
)
from voicehub.hyperion.np.files import CONFIG_DATASET
from voicehub.hyperion.np.model import HyperNPModel, resolve_class

_EIG_FLOOR = 1e-10
"""Eigenvalues below this fraction of the largest are treated as zero (rank-deficient data)."""


def _sign_fix(vectors: FloatArray) -> FloatArray:
    """Flip eigenvector columns so the first row is non-negative (makes the basis unique)."""
    flip = vectors[0, :] < 0
    vectors[:, flip] *= -1
    return vectors


def _covariance(x: FloatArray) -> tuple[FloatArray, FloatArray]:
    mu = x.mean(axis=0, dtype=np.float64)
    delta = np.asarray(x, dtype=np.float64) - mu
    return mu, delta.T @ delta / x.shape[0]


def _refuse_constant(owner: str, cov: FloatArray) -> None:
    if not float(np.trace(cov)) > 0.0:
        raise HyperionInputError(
            f"{owner}.fit: x has zero variance (every row is the same); a transform cannot be estimated from it"
        )


class NPTransform(HyperNPModel, register=False):
    """Base of transforms with ``predict(x) -> x'`` that a :class:`TransformList` can chain."""

    def predict(self, x: Any) -> FloatArray:
        """Apply the transform to ``x`` (num_rows, in_dim)."""
        raise NotImplementedError

    def __call__(self, x: Any) -> FloatArray:
        return self.predict(x)


class CentWhiten(NPTransform):
    """Centering and whitening: ``(x - mu) @ T`` with ``T`` the inverse square root of the covariance.

    ``T`` = V diag(d)^-1/2 from the eigendecomposition of the ML covariance, eigenvalues in
    descending order; directions with zero variance are dropped (out_dim = rank).

    Args:
        mu: float (in_dim,) mean, or ``None`` until fitted.
        T: float (in_dim, out_dim) whitening matrix, or ``None`` until fitted.
        update_mu: whether :meth:`fit` re-estimates ``mu``.
        update_t: whether :meth:`fit` re-estimates ``T`` (upstream wrote this key but read
            ``update_T``, silently losing it; here the two agree).
        name: HDF5 group prefix (see :class:`HyperNPModel`).
        save_dtype: storage dtype for the parameters, ``None`` = lossless.

    Raises:
        ConfigError: for a flag that is not a bool.
        HyperionInputError: for ``mu``/``T`` of the wrong rank or inconsistent shapes.
    """

    def __init__(
        self,
        mu: Any = None,
        T: Any = None,  # (upstream parameter name, part of the file format)
        update_mu: bool = True,
        update_t: bool = True,
        *,
        name: str | None = None,
        save_dtype: str | None = None,
    ) -> None:
        super().__init__(name=name, save_dtype=save_dtype)
        owner = type(self).__name__
        self.mu = param(owner, "mu", mu, ndim=1)
        self.T = param(owner, "T", T, ndim=2)
        if self.mu is not None and self.T is not None and self.T.shape[0] != self.mu.shape[0]:
            raise HyperionInputError(f"{owner}: mu has shape {self.mu.shape} but T has shape {self.T.shape}")
        self.update_mu = check_bool(owner, "update_mu", update_mu)
        self.update_t = check_bool(owner, "update_t", update_t)

    legacy_keys: ClassVar[Mapping[str, str | None]] = {"update_T": "update_t"}
    optional_params: ClassVar[tuple[str, ...]] = ()
    """Parameters a saved file may lack (none: a CentWhiten/PCA/LDA is saved fitted)."""

    def missing_params(self) -> list[str]:
        """``mu`` and/or ``T`` while they are unset (save refuses an unfitted transform)."""
        return [k for k in ("mu", "T") if k not in self.optional_params and getattr(self, k) is None]

    def _fit_data(self, x: Any) -> FloatArray:
        """Check ``x`` for fit: 2-D, finite, >= 2 rows, and the dimension of any kept parameter."""
        owner = type(self).__name__
        data = as_matrix(owner, x)
        if data.shape[0] < 2:
            raise HyperionInputError(f"{owner}.fit: needs at least 2 rows, got {data.shape[0]}")
        kept = {"mu": None if self.update_mu else self.mu, "T": None if self.update_t else self.T}
        for key, value in kept.items():
            if value is not None and value.shape[0] != data.shape[1]:
                raise HyperionInputError(
                    f"{owner}.fit: x has dimension {data.shape[1]} but the kept {key} (update_{key.lower()}=False) "
                    f"has {value.shape[0]}; fit on data of dimension {value.shape[0]}"
                )
        return data

    def get_config(self) -> dict[str, Any]:
        """Config: base keys plus ``update_mu`` and ``update_t``."""
        return {**super().get_config(), "update_mu": self.update_mu, "update_t": self.update_t}

    @property
    def in_dim(self) -> int | None:
        """Input dimension, or ``None`` before fitting."""
        if self.mu is not None:
            return int(self.mu.shape[0])
        return int(self.T.shape[0]) if self.T is not None else None

    def fit(self, x: Any) -> Self:
        """Estimate ``mu`` and ``T`` from ``x`` (num_rows, dim), num_rows >= 2.

        Returns:
            ``self``.

        Raises:
            HyperionInputError: for a bad array, fewer than 2 rows, constant data, or a dimension
                other than that of a kept parameter. The model is unchanged when fit raises.
        """
        owner = type(self).__name__
        data = self._fit_data(x)
        mu, cov = _covariance(data)
        new_mu, new_t = (mu if self.update_mu else self.mu), self.T
        if self.update_t:
            _refuse_constant(owner, cov)
            with single_threaded_blas():
                d, v = linalg.eigh(cov)
            d, v = d[::-1], v[:, ::-1]
            keep = d > _EIG_FLOOR * max(float(d[0]), 0.0)
            new_t = np.ascontiguousarray(_sign_fix(v[:, keep] / np.sqrt(d[keep])))
        check_fit_result(owner, mu=new_mu, T=new_t)
        self.mu, self.T = new_mu, new_t
        return self

    def _apply(self, data: FloatArray) -> FloatArray:
        out = data
        if self.mu is not None:
            out = out - self.mu.astype(data.dtype, copy=False)
        if self.T is not None:
            projected: FloatArray = out @ self.T.astype(data.dtype, copy=False)
            return projected
        return out

    def predict(self, x: Any) -> FloatArray:
        """Return ``(x - mu) @ T``, shape (num_rows, out_dim), dtype of ``x``.

        Raises:
            NotFittedError: before :meth:`fit` or loading.
            HyperionInputError: for a wrong shape or non-finite values.
        """
        require(type(self).__name__, mu=self.mu, T=self.T)
        return self._apply(as_matrix(type(self).__name__, x, dim=self.in_dim))

    def save_params(self, f: h5py.File) -> None:
        """Write ``mu`` and ``T``."""
        self._save_params_from_dict(f, {"mu": self.mu, "T": self.T})

    @classmethod
    def load_params(cls, f: h5py.File, config: dict[str, Any]) -> Self:
        """Read ``mu`` and ``T`` (required, except for :class:`LNorm`, which works unfitted)."""
        params = cls._load_params_to_dict(f, config["name"], ["mu", "T"], optional=cls.optional_params)
        return cls.from_config(config, **params)


class LNorm(CentWhiten):
    """Length normalization (Garcia-Romero & Espy-Wilson 2011), optionally after centering/whitening.

    ``y = sqrt(out_dim) * z / (||z|| + 1e-10)`` with ``z = (x - mu) @ T``; an unfitted LNorm (no
    ``mu``/``T``) only normalizes the length, as upstream does, and can be saved that way (either
    parameter may be absent from its file).
    """

    optional_params: ClassVar[tuple[str, ...]] = ("mu", "T")

    def predict(self, x: Any) -> FloatArray:
        """Return the length-normalized rows, shape (num_rows, out_dim), dtype of ``x``.

        The norm is computed on rows scaled by their largest absolute value, so it does not
        overflow for rows near the float maximum (the squares would).

        Raises:
            HyperionInputError: for a wrong shape or non-finite values.
        """
        z = self._apply(as_matrix(type(self).__name__, x, dim=self.in_dim))
        if not np.all(np.isfinite(z)):
            raise HyperionInputError(f"{type(self).__name__}: the centred/whitened rows overflow (inputs too large)")
        peak = np.max(np.abs(z), axis=1, keepdims=True) if z.shape[1] else np.ones((z.shape[0], 1), z.dtype)
        peak = np.where(peak > 0, peak, 1).astype(z.dtype, copy=False)
        scaled = z / peak  # z / (||z|| + eps) = scaled / (||scaled|| + eps / peak)
        norms = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))[:, None] + 1e-10 / peak
        out: FloatArray = ((scaled / norms) * np.sqrt(z.shape[1])).astype(z.dtype, copy=False)
        return out


class PCA(CentWhiten):
    """Principal component analysis: ``(x - mu) @ T`` with the leading covariance eigenvectors.

    Args:
        pca_dim: number of components kept; ``None`` keeps all (or uses ``pca_var_r``).
        pca_var_r: keep the fewest components whose variance ratio reaches this value (0, 1].
        pca_min_dim: lower bound on the dimension chosen by ``pca_var_r``.
        whiten: divide each component by its standard deviation (upstream forgot to save it).
        mu, T, update_mu, update_t, name, save_dtype: as :class:`CentWhiten`.
    """

    def __init__(
        self,
        mu: Any = None,
        T: Any = None,
        update_mu: bool = True,
        update_t: bool = True,
        pca_dim: int | None = None,
        pca_var_r: float | None = None,
        pca_min_dim: int = 2,
        whiten: bool = False,
        *,
        name: str | None = None,
        save_dtype: str | None = None,
    ) -> None:
        super().__init__(mu, T, update_mu, update_t, name=name, save_dtype=save_dtype)
        owner = type(self).__name__
        self.pca_dim = check_int(owner, "pca_dim", pca_dim, minimum=1, optional=True)
        self.pca_var_r = check_float(owner, "pca_var_r", pca_var_r, low=0.0, high=1.0, optional=True, open_low=True)
        self.pca_min_dim = check_int(owner, "pca_min_dim", pca_min_dim, minimum=1)
        self.whiten = check_bool(owner, "whiten", whiten)

    def get_config(self) -> dict[str, Any]:
        """Config: CentWhiten keys plus ``pca_dim``, ``pca_var_r``, ``pca_min_dim``, ``whiten``."""
        return {
            **super().get_config(),
            "pca_dim": self.pca_dim,
            "pca_var_r": self.pca_var_r,
            "pca_min_dim": self.pca_min_dim,
            "whiten": self.whiten,
        }

    def fit(self, x: Any) -> Self:
        """Estimate ``mu`` and ``T`` from ``x`` (num_rows, dim).

        Raises:
            HyperionInputError: for a bad array, fewer than 2 rows, constant data, ``pca_dim`` >
                dim, or a dimension other than that of a kept parameter. The model is unchanged
                when fit raises.
        """
        owner = type(self).__name__
        data = self._fit_data(x)
        mu, cov = _covariance(data)
        new_mu = mu if self.update_mu else self.mu
        if not self.update_t:
            check_fit_result(owner, mu=new_mu)
            self.mu = new_mu
            return self
        _refuse_constant(owner, cov)
        with single_threaded_blas():
            d, v = linalg.eigh(cov)
        d, v = d[::-1], _sign_fix(np.ascontiguousarray(v[:, ::-1]))
        dim = v.shape[1]
        if self.pca_dim is not None:
            if self.pca_dim > dim:
                raise HyperionInputError(f"{owner}: pca_dim={self.pca_dim} exceeds the data dimension {dim}")
            dim = self.pca_dim
        elif self.pca_var_r is not None:
            ratio = np.cumsum(d) / np.sum(d)
            reached = int(np.searchsorted(ratio, self.pca_var_r - 1e-12)) + 1
            dim = min(max(reached, self.pca_min_dim), v.shape[1])
        if self.whiten:
            positive = int(np.sum(d > _EIG_FLOOR * max(float(d[0]), 0.0)))
            dim = min(dim, positive)
            v = v[:, :dim] / np.sqrt(d[:dim])
        new_t = np.ascontiguousarray(v[:, :dim])
        check_fit_result(owner, mu=new_mu, T=new_t)
        self.mu, self.T = new_mu, new_t
        return self


class LDA(CentWhiten):
    """Linear discriminant analysis: directions maximizing between- over within-class variance.

    Solves the generalized eigenproblem ``Sb v = λ Sw v`` (Fukunaga 1990) with ML scatter
    matrices; ``Sw`` gets a ridge of 1e-2·max(diag Sw) when it is singular (as upstream).

    Args:
        lda_dim: output dimension; ``None`` means min(dim, num_classes - 1).
        mu, T, update_mu, update_t, name, save_dtype: as :class:`CentWhiten`.
    """

    def __init__(
        self,
        mu: Any = None,
        T: Any = None,
        update_mu: bool = True,
        update_t: bool = True,
        lda_dim: int | None = None,
        *,
        name: str | None = None,
        save_dtype: str | None = None,
    ) -> None:
        super().__init__(mu, T, update_mu, update_t, name=name, save_dtype=save_dtype)
        self.lda_dim = check_int(type(self).__name__, "lda_dim", lda_dim, minimum=1, optional=True)

    def get_config(self) -> dict[str, Any]:
        """Config: CentWhiten keys plus ``lda_dim``."""
        return {**super().get_config(), "lda_dim": self.lda_dim}

    def fit(self, x: Any, labels: Any) -> Self:  # type: ignore[override]
        """Estimate ``mu`` and ``T`` from ``x`` (num_rows, dim) and class ``labels`` (num_rows,).

        Raises:
            HyperionInputError: for bad arrays, fewer than 2 classes, no within-class variation,
                ``lda_dim`` > dim, or a dimension other than that of a kept parameter. The model
                is unchanged when fit raises.
        """
        owner = type(self).__name__
        data = self._fit_data(x)
        ids, num_classes = as_labels(owner, labels, data.shape[0])
        if num_classes < 2:
            raise HyperionInputError(f"{owner}.fit: needs at least 2 classes, got {num_classes}")
        counts, sums = class_stats(data, ids, num_classes)
        mu, total = _covariance(data)
        means = sums / counts[:, None]
        delta = means - mu
        sb = (delta * counts[:, None]).T @ delta / data.shape[0]
        sw = total - sb
        new_mu = mu if self.update_mu else self.mu
        if not self.update_t:
            check_fit_result(owner, mu=new_mu)
            self.mu = new_mu
            return self
        _refuse_constant(owner, total)
        if not float(np.trace(sw)) > 1e-12 * float(np.trace(total)):
            raise HyperionInputError(
                f"{owner}.fit: no within-class variation (every class has one row, or its rows are identical); "
                "LDA needs >= 2 different rows for some classes"
            )
        dim = self.lda_dim if self.lda_dim is not None else min(data.shape[1], num_classes - 1)
        if dim > data.shape[1]:
            raise HyperionInputError(f"{owner}: lda_dim={dim} exceeds the data dimension {data.shape[1]}")
        with single_threaded_blas():
            try:
                try:
                    _, v = linalg.eigh(sb, sw)
                except linalg.LinAlgError:
                    ridge = 1e-2 * float(np.max(np.diag(sw)))
                    _, v = linalg.eigh(sb, sw + ridge * np.eye(sw.shape[0]))
            except (linalg.LinAlgError, ValueError) as err:
                raise HyperionInputError(f"{owner}.fit: the scatter matrices are degenerate ({err})") from err
        v = _sign_fix(np.ascontiguousarray(v[:, ::-1]))
        new_t = np.ascontiguousarray(v[:, :dim])
        check_fit_result(owner, mu=new_mu, T=new_t)
        self.mu, self.T = new_mu, new_t
        return self


class TransformList(NPTransform):
    """A chain of transforms applied in order, saved in one file.

    Each child is stored under ``<list name>/<child name>`` (the upstream layout, e.g.
    ``TransformList/PCA/mu``). The given children are not modified: the list holds renamed
    shallow copies, and duplicate child names get ``_2``, ``_3``... suffixes.

    Args:
        transforms: fitted or unfitted transforms, or their configs (built unfitted).
        name: HDF5 group prefix of the list; ``""`` leaves child names unprefixed (legacy).
        save_dtype: ignored by the list itself; each child uses its own.

    Raises:
        ConfigError: for a child that is not a transform.
    """

    def __init__(
        self,
        transforms: Sequence[NPTransform | Mapping[str, Any]] = (),
        *,
        name: str | None = None,
        save_dtype: str | None = None,
    ) -> None:
        super().__init__(name=name, save_dtype=save_dtype)
        self.transforms: list[NPTransform] = []
        for item in transforms:
            self.append(_transform_from(item))

    def append(self, transform: NPTransform) -> None:
        """Add ``transform`` (a renamed shallow copy) at the end of the chain."""
        if not isinstance(transform, NPTransform):
            raise ConfigError(f"TransformList: expected a transform, got {type(transform).__name__}")
        child = transform.copy() if isinstance(transform, TransformList) else _shallow(transform)
        prefix = f"{self.name}/" if self.name else ""
        base = child.name if child.name.startswith(prefix) else prefix + child.name
        taken = {t.name for t in self.transforms}
        candidate, index = base, 2
        while candidate in taken:
            candidate, index = f"{base}_{index}", index + 1
        if candidate.split("/")[0] == CONFIG_DATASET:
            raise ConfigError(
                f"TransformList: child name {candidate!r} is reserved (the file's /{CONFIG_DATASET} dataset); "
                "rename the child or give the list a name"
            )
        nested = [t for t in taken if t.startswith(candidate + "/") or candidate.startswith(t + "/")]
        if nested:
            raise ConfigError(
                f"TransformList: child name {candidate!r} and {nested[0]!r} nest in one another, so their "
                "parameter datasets can collide; give the children names that are not paths inside each other"
            )
        if isinstance(child, TransformList):
            child._rename(candidate)
        else:
            child.name = candidate
        self.transforms.append(child)

    def _rename(self, new_name: str) -> None:
        """Rename this (copied) list and move its children's prefixes along."""
        old_prefix = f"{self.name}/" if self.name else ""
        self.name = new_name
        for child in self.transforms:
            suffix = child.name[len(old_prefix) :] if child.name.startswith(old_prefix) else child.name
            child_name = f"{new_name}/{suffix}" if new_name else suffix
            if isinstance(child, TransformList):
                child._rename(child_name)
            else:
                child.name = child_name

    def get_config(self) -> dict[str, Any]:
        """Config: base keys plus ``transforms``, the child configs (with schema versions) in the
        upstream layout ``{"0": cfg, "1": cfg, ...}``, so hyperion-ml can read the file too.
        """
        children = {
            str(i): {**t.get_config(), "schema_version": t.schema_version} for i, t in enumerate(self.transforms)
        }
        return {**super().get_config(), "transforms": children}

    def missing_params(self) -> list[str]:
        """The missing parameters of every child, as ``<child name>/<param>``."""
        return [f"{t.name}/{m}" if t.name else m for t in self.transforms for m in t.missing_params()]

    @classmethod
    def check_config(cls, config: Mapping[str, Any], *, saved_as: str | None = None) -> dict[str, Any]:
        """As :meth:`HyperNPModel.check_config`; ``transforms`` may be the upstream ``{"0": cfg, ...}``
        mapping (also written by VoiceHub) or a list (VoiceHub before the upstream layout); it
        is returned as a list.
        """
        out = super().check_config(config, saved_as=saved_as)
        children = out.get("transforms")
        if isinstance(children, Mapping):
            keys = sorted(children, key=lambda k: int(k) if str(k).isdigit() else -1)
            if keys != [str(i) for i in range(len(keys))]:
                raise ConfigError(
                    f"TransformList: child keys must be '0', '1', ... without gaps, got {sorted(children)}",
                    config_type=cls.__name__,
                    key="transforms",
                )
            out["transforms"] = [children[k] for k in keys]
        return out

    def predict(self, x: Any) -> FloatArray:
        """Apply every transform in order; shape (num_rows, out_dim of the last), dtype of ``x``."""
        out = as_matrix(type(self).__name__, x)
        for transform in self.transforms:
            out = transform.predict(out)
        return out

    def save_params(self, f: h5py.File) -> None:
        """Write every child's parameters under its prefixed name."""
        for transform in self.transforms:
            transform.save_params(f)

    @classmethod
    def load_params(cls, f: h5py.File, config: dict[str, Any]) -> Self:
        """Load every child with its own class's ``load_params``.

        Raises:
            UnknownConfigKeyError: naming the child (index, class and name) with the bad key.
        """
        children: list[NPTransform] = []
        for index, child_config in enumerate(config.get("transforms", [])):
            child_cls, saved_as = _child_class(child_config)
            try:
                checked = child_cls.check_config(child_config, saved_as=saved_as)
            except UnknownConfigKeyError as err:
                child_name = child_config.get("name")
                owner = f"{child_cls.__name__} {child_name!r} (child {index} of TransformList {config['name']!r})"
                raise UnknownConfigKeyError(owner, err.unknown, err.known) from err
            children.append(child_cls.load_params(f, checked))
        return cls(children, name=config["name"], save_dtype=config.get("save_dtype"))


def _shallow(transform: NPTransform) -> NPTransform:
    clone = object.__new__(type(transform))
    clone.__dict__.update(transform.__dict__)
    return clone


def _child_class(config: Any) -> tuple[type[NPTransform], str | None]:
    """The class of a child config (the caller's ``extra_objs`` first) and the saved name it maps."""
    if not isinstance(config, Mapping) or not isinstance(config.get("class_name"), str):
        raise ConfigError(f"TransformList: each child config needs a 'class_name', got {config!r}")
    name = config["class_name"]
    found = resolve_class(name)
    if found is None:
        raise UnknownHyperionClassError(name, _registry.available())
    if not (isinstance(found, type) and issubclass(found, NPTransform)):
        raise ConfigError(f"TransformList: child class {name!r} is not a transform")
    return found, (name if found.__name__ != name else None)


def _transform_from(item: NPTransform | Mapping[str, Any]) -> NPTransform:
    if isinstance(item, Mapping):
        child_cls, saved_as = _child_class(item)
        checked = child_cls.check_config(item, saved_as=saved_as)
        return child_cls.from_config(checked)
    return item


__all__ = ["LDA", "PCA", "CentWhiten", "LNorm", "NPTransform", "TransformList"]
