"""Run the Python examples of one documentation page in this one process, one after the other.

Run as a process (``python docs_examples_runner.py JOBS RESULTS``) by ``test_docs_examples.py``
(which does not import it, so collecting the tests loads no torch). ``JOBS`` is a JSON list of
``{"name": ..., "body": ..., "cwd": ...}`` in page order; ``RESULTS`` receives a JSON object
``{name: {"ok": bool, "output": str, "seconds": float}}`` (``output``: what the example printed and,
when it failed, its traceback).

Each example runs as ``python -c BODY`` would, except that the interpreter, the imported modules
(torch, the library) and whatever the library keeps loaded are shared with the examples before it,
which is what makes a page's examples one start-up instead of one each:

* its code runs in a fresh ``__main__`` module (installed in ``sys.modules`` while it runs, so
  classes it defines pickle and ``if __name__ == "__main__":`` holds), in its own scratch directory;
* the working directory, ``os.environ``, ``sys.argv``, ``sys.path``, the warning filters and
  torch's intra-op thread count are put back after it, whatever it did;
* an exception or a non-zero ``SystemExit`` fails that example only; the next one still runs.

An example that changes what stays in the process after it (registers a model or a pass in a
global registry, starts worker processes that re-import ``__main__``, checks what a fresh
interpreter has imported) is marked on its page to run in a process of its own instead.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import sys
import time
import traceback
import types
import warnings
from pathlib import Path
from typing import Any


def _torch_threads() -> int | None:
    torch = sys.modules.get("torch")
    return None if torch is None else int(torch.get_num_threads())


def run_one(name: str, body: str, cwd: str) -> dict[str, Any]:
    """Run one example's code in a fresh ``__main__`` in ``cwd``; put the process state back after it."""
    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    saved_argv, saved_path, saved_main = list(sys.argv), list(sys.path), sys.modules["__main__"]
    saved_threads = _torch_threads()
    main = types.ModuleType("__main__")
    output = io.StringIO()
    ok = True
    start = time.perf_counter()
    try:
        os.chdir(cwd)
        sys.argv = ["-c"]
        sys.path[0] = ""  # as `python -c`: the working directory first
        sys.modules["__main__"] = main
        with warnings.catch_warnings(), contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            try:
                exec(compile(body, f"<{name}>", "exec"), main.__dict__)
            except SystemExit as exit_:
                if exit_.code not in (None, 0):
                    ok = False
                    output.write(f"SystemExit({exit_.code!r})\n")
            except BaseException:
                ok = False
                output.write(traceback.format_exc())
    finally:
        sys.modules["__main__"] = saved_main
        sys.argv[:], sys.path[:] = saved_argv, saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        torch = sys.modules.get("torch")
        if saved_threads is not None and torch is not None:
            torch.set_num_threads(saved_threads)
        del main
        gc.collect()
    return {"ok": ok, "output": output.getvalue(), "seconds": round(time.perf_counter() - start, 3)}


def main(jobs_path: str, results_path: str) -> None:
    jobs = json.loads(Path(jobs_path).read_text(encoding="utf-8"))
    results = {job["name"]: run_one(job["name"], job["body"], job["cwd"]) for job in jobs}
    Path(results_path).write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
