"""Record the built-in models' outputs on the test audio, for ``tests/test_reference_outputs.py``.

Run it only on a tree whose outputs are known to be right. By default it writes this machine's
recording, ``tests/data/reference_outputs/<cpu signature>.npz`` (compared bit for bit on machines
with the same PyTorch version, CPU capability, vendor, family and model, and thread count), and
refuses to write one that disagrees with the first recording beyond the cross-CPU tolerance.
``--first`` rewrites the first recording, ``tests/data/reference_outputs.npz`` (made on ``main``
at 9284b73, before the runtime-seam refactoring), which every other machine is compared with.
Note the tree it was recorded from in ``tests/data/PROVENANCE.md``. Usage:
``HF_HUB_OFFLINE=1 uv run python tools/record_reference_outputs.py [--first]``.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import numpy as np

TEST_MODULE = Path(__file__).resolve().parents[1] / "tests" / "test_reference_outputs.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--first", action="store_true", help="rewrite the first recording instead of this CPU's")
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("test_reference_outputs", TEST_MODULE)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {TEST_MODULE}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    arrays: dict[str, np.ndarray] = module.all_outputs()
    if args.first:
        target: Path = module.REFERENCE_FILE
    else:
        with np.load(module.REFERENCE_FILE) as data:
            first = {key: data[key] for key in data.files}
        problems = module.differences(first, arrays, "", exact=False)
        if problems:
            raise SystemExit(f"not written: these outputs differ from the first recording: {'; '.join(problems)}")
        target = module.per_cpu_file()
        target.parent.mkdir(exist_ok=True)
    np.savez_compressed(target, allow_pickle=False, **arrays)
    for key, value in arrays.items():
        print(f"{key}: {value.dtype} {value.shape}")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
