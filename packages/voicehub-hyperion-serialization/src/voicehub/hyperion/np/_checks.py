"""Argument and array checks shared by the NumPy back-ends (private)."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voicehub.core.errors import ConfigError
from voicehub.hyperion.errors import HyperionInputError, NotFittedError

FloatArray = NDArray[np.floating[Any]]


def check_bool(owner: str, key: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (NumPy bools accepted), else raise ConfigError."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ConfigError(f"{owner}.{key}: expected bool, got {value!r}", config_type=owner, key=key)


def check_int(owner: str, key: str, value: Any, *, minimum: int | None = None, optional: bool = False) -> Any:
    """Return ``value`` as ``int`` (or ``None`` when ``optional``), checking the lower bound."""
    if value is None and optional:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ConfigError(f"{owner}.{key}: expected int, got {value!r}", config_type=owner, key=key)
    if minimum is not None and int(value) < minimum:
        raise ConfigError(f"{owner}.{key}: expected an int >= {minimum}, got {value!r}", config_type=owner, key=key)
    return int(value)


def check_float(
    owner: str,
    key: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    optional: bool = False,
    open_low: bool = False,
) -> Any:
    """Return ``value`` as a finite ``float`` within ``[low, high]`` (``(low, high]`` if ``open_low``)."""
    if value is None and optional:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{owner}.{key}: expected float, got {value!r}", config_type=owner, key=key)
    out = float(value)
    bad = not np.isfinite(out)
    bad = bad or (low is not None and (out < low or (open_low and out == low)))
    bad = bad or (high is not None and out > high)
    if bad:
        bracket = "(" if open_low else "["
        raise ConfigError(
            f"{owner}.{key}: expected a finite number in {bracket}{low}, {high}], got {value!r}",
            config_type=owner,
            key=key,
        )
    return out


def check_choice(owner: str, key: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(f"{owner}.{key}: expected one of {list(choices)}, got {value!r}", config_type=owner, key=key)
    return value


def param(owner: str, key: str, value: Any, *, ndim: int | None = None) -> FloatArray | None:
    """Convert a parameter to a finite floating array, keeping a float32/float64 dtype (``None`` passes).

    Raises:
        HyperionInputError: for a non-numeric dtype, a wrong rank, or NaN/infinite values (a
            model with them would score silently wrong, e.g. every PLDA trial 0.0).
    """
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype.kind not in "fiub":
        raise HyperionInputError(f"{owner}.{key}: expected a numeric array, got dtype {arr.dtype}")
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    if ndim is not None and arr.ndim != ndim:
        raise HyperionInputError(f"{owner}.{key}: expected a {ndim}-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise HyperionInputError(f"{owner}.{key}: contains NaN or infinite values; parameters must be finite")
    return arr


def check_fit_result(owner: str, **params: Any) -> None:
    """Raise HyperionInputError if a freshly estimated parameter is not finite (the model is not changed)."""
    bad = [k for k, v in params.items() if v is not None and not np.all(np.isfinite(np.asarray(v)))]
    if bad:
        raise HyperionInputError(
            f"{owner}.fit: the estimate of {', '.join(bad)} is not finite (degenerate data: constant, collinear or "
            "too few vectors per class); the model was not changed"
        )


def require(owner: str, **params: Any) -> None:
    """Raise NotFittedError naming the parameters that are still ``None``."""
    missing = [k for k, v in params.items() if v is None]
    if missing:
        raise NotFittedError(f"{owner} is not fitted (missing {', '.join(missing)}); call fit() or load() first")


def fitted(owner: str, key: str, value: FloatArray | None) -> FloatArray:
    """Return a fitted parameter, or raise NotFittedError naming it when it is ``None``."""
    if value is None:
        raise NotFittedError(f"{owner} is not fitted (missing {key}); call fit() or load() first")
    return value


def as_matrix(owner: str, x: Any, *, dim: int | None = None, what: str = "x") -> FloatArray:
    """Return ``x`` as a finite 2-D float array (num_rows, dim).

    float32 and float64 keep their dtype; integer input becomes float64.

    Raises:
        HyperionInputError: for a wrong rank, feature dimension, dtype, or non-finite values.
    """
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu":
        raise HyperionInputError(f"{owner}: expected a numeric {what} array, got dtype {arr.dtype}")
    if arr.dtype.kind != "f" or arr.dtype.itemsize not in (4, 8):
        arr = arr.astype(np.float64)
    if arr.ndim != 2:
        expected = f"(num_rows, {dim})" if dim is not None else "(num_rows, dim)"
        raise HyperionInputError(f"{owner}: expected {what} of shape {expected}, got shape {arr.shape}")
    if dim is not None and arr.shape[1] != dim:
        raise HyperionInputError(f"{owner}: expected {what} of shape (num_rows, {dim}), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise HyperionInputError(f"{owner}: {what} contains NaN or infinite values")
    return arr


def as_labels(owner: str, labels: Any, num_rows: int) -> tuple[NDArray[np.int64], int]:
    """Map class labels (any hashable values) to 0-based int64 ids.

    Returns:
        ``(ids, num_classes)``; ``ids`` has shape (num_rows,).

    Raises:
        HyperionInputError: if the label vector is not 1-D of length ``num_rows``.
    """
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.shape[0] != num_rows:
        raise HyperionInputError(f"{owner}: expected labels of shape ({num_rows},), got shape {arr.shape}")
    _, ids = np.unique(arr, return_inverse=True)
    ids = ids.astype(np.int64).reshape(-1)
    return ids, int(ids.max()) + 1 if ids.size else 0


def class_stats(x: FloatArray, ids: NDArray[np.int64], num_classes: int) -> tuple[FloatArray, FloatArray]:
    """Zeroth and first order statistics per class.

    Returns:
        ``(counts (num_classes,), sums (num_classes, dim))`` in float64.
    """
    counts = np.bincount(ids, minlength=num_classes).astype(np.float64)
    sums = np.zeros((num_classes, x.shape[1]), dtype=np.float64)
    present = counts > 0
    starts = np.concatenate(([0], np.cumsum(counts[present])[:-1])).astype(np.int64)
    if ids.size:
        data = np.asarray(x, dtype=np.float64)
        if np.any(ids[1:] < ids[:-1]):  # group the rows of each class (already grouped: no copy)
            data = data[np.argsort(ids, kind="stable")]
        sums[present] = np.add.reduceat(data, starts, axis=0)
    return counts, sums


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the enclosed small-matrix linear algebra with one BLAS thread, then restore the setting.

    EM steps and eigendecompositions of (dim, dim) matrices with dim of a few hundred gain
    nothing from BLAS threads, and on a busy machine OpenBLAS threads spin-wait, which can make a
    small ``eigh`` two orders of magnitude slower than on one thread (docs/hyperion.md). Uses
    ``threadpoolctl`` when it is installed and is a no-op otherwise.
    """
    try:
        module = importlib.import_module("threadpoolctl")
    except ImportError:
        yield
        return
    with module.threadpool_limits(limits=1, user_api="blas"):
        yield
