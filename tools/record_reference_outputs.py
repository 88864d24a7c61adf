"""Record the built-in models' outputs on the test audio into ``tests/data/reference_outputs.npz``.

Run it only on a tree whose outputs are known to be right (it was first run on ``main`` at
9284b73, before the runtime-seam refactoring); ``tests/test_reference_outputs.py`` then checks
that every later tree gives bit-identical arrays. Usage:
``HF_HUB_OFFLINE=1 uv run python tools/record_reference_outputs.py``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

TEST_MODULE = Path(__file__).resolve().parents[1] / "tests" / "test_reference_outputs.py"


def main() -> int:
    spec = importlib.util.spec_from_file_location("test_reference_outputs", TEST_MODULE)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {TEST_MODULE}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    arrays: dict[str, np.ndarray] = module.all_outputs()
    reference_file: Path = module.REFERENCE_FILE
    np.savez_compressed(reference_file, allow_pickle=False, **arrays)
    for key, value in arrays.items():
        print(f"{key}: {value.dtype} {value.shape}")
    print(f"wrote {reference_file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
