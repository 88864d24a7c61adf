"""Capture and restore the random streams a training step may draw from: torch (CPU and CUDA), NumPy, Python.

States are plain tensors, lists and numbers, so a checkpoint holding them loads with
``torch.load(..., weights_only=True)`` (no pickled code).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch


def capture_rng_state() -> dict[str, Any]:
    """The current state of every global random stream of this process."""
    kind, keys, position, has_gauss, cached = np.random.get_state(legacy=True)
    version, internal, gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "torch_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": {
            "kind": str(kind),
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "position": int(position),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "python": {"version": int(version), "internal": list(internal), "gauss": gauss},
    }


def restore_rng_state(state: dict[str, Any]) -> None:
    """Put back a state captured by :func:`capture_rng_state`."""
    torch.set_rng_state(state["torch"])
    if state["torch_cuda"]:
        torch.cuda.set_rng_state_all(state["torch_cuda"])
    numpy_state = state["numpy"]
    np.random.set_state(
        (
            numpy_state["kind"],
            numpy_state["keys"].numpy().astype(np.uint32),
            numpy_state["position"],
            numpy_state["has_gauss"],
            numpy_state["cached_gaussian"],
        )
    )
    python_state = state["python"]
    random.setstate((python_state["version"], tuple(python_state["internal"]), python_state["gauss"]))


def seed_everything(seed: int) -> None:
    """Seed torch (every device), NumPy's global generator and Python's ``random`` with ``seed``."""
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)


__all__ = ["capture_rng_state", "restore_rng_state", "seed_everything"]
