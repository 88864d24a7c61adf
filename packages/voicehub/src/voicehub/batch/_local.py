"""The ``local`` engine: a pool of worker processes on this machine (no extra dependency).

Start-up is what this engine's speed on a short corpus is made of (importing torch alone takes
seconds, tens of seconds on a loaded machine), so the workers start in one of two ways:

* **fork from the driver** (Linux, ``cpus_per_worker=1``, every step on the CPU): the driver
  loads the steps' models once, then forks the workers, which inherit torch already imported and
  the weights already in memory (shared copy-on-write): a worker is ready in milliseconds and runs
  the first batch at once. Each worker sets one torch thread before any torch operation: with one
  thread torch never enters an OpenMP parallel region, so the driver's OpenMP thread pool (which a
  forked child cannot use: GNU OpenMP waits forever on the parent's threads) is never touched.
  This is how PyTorch's own ``DataLoader`` workers run.
* **forkserver** (``cpus_per_worker > 1``, a step on a GPU, or no ``fork``; ``spawn`` where there
  is no forkserver, e.g. Windows): a clean server process that imported torch and this module
  once, and never ran a torch operation or held a model, forks each worker, so the workers may use
  OpenMP threads; each loads its models from the pickled recipes on its first batch. The server
  (which also imports pyarrow and pandas, which turning rows into Arrow imports) lives as long as
  the driver process, so later jobs start faster.

Each worker pins its torch threads to ``cpus_per_worker`` and builds one
:class:`~voicehub.batch._worker.BatchWorker` from the job's steps. At most two batches per worker
are in flight (back-pressure: the driver never queues the whole corpus). Results come back in
completion order. Scripts that call the local engine need the usual
``if __name__ == "__main__":`` guard (forkserver and spawn workers re-import the main module).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import TYPE_CHECKING

from voicehub.batch._worker import BatchWorker, OnError, Step, pin_torch_threads

if TYPE_CHECKING:
    import pyarrow as pa

_WORKER: BatchWorker | None = None  # one per worker process, built by _start_worker


def _start_worker(steps: Sequence[Step], on_error: OnError, num_threads: int) -> None:
    global _WORKER
    pin_torch_threads(num_threads)  # first: before this (possibly forked) process runs any torch operation
    _WORKER = BatchWorker(steps, on_error=on_error)


def _run_batch(paths: Sequence[str]) -> pa.Table:
    if _WORKER is None:  # pragma: no cover - the pool always runs the initializer first
        raise RuntimeError("voicehub.batch worker used before it was started")
    return _WORKER(paths)


def _on_cpu(step: Step) -> bool:
    from voicehub.core.device import resolve_device

    try:
        return resolve_device(step.model.device).type == "cpu"
    except Exception:  # a device this machine lacks: the workers record the error, as forkserver ones do
        return False


def forks_from_driver(cpus_per_worker: int, steps: Sequence[Step]) -> bool:
    """Whether the workers are forked from the driver, with its loaded models (see the module docstring).

    Only on Linux, with one torch thread per worker, and when every step runs on the CPU (a
    process that has used CUDA cannot hand it to a forked child).
    """
    return (
        sys.platform.startswith("linux")
        and cpus_per_worker == 1
        and "fork" in multiprocessing.get_all_start_methods()
        and all(_on_cpu(step) for step in steps)
    )


def _preload(steps: Sequence[Step], on_error: OnError) -> None:
    """Load the steps' models in the driver, so the forked workers inherit them.

    Also builds one empty result table: turning Python rows into Arrow imports pandas when it is
    installed (pyarrow's pandas shim), seconds that every worker would otherwise spend on its first
    batch; the driver imports it anyway when it writes the first part.
    """
    for step in steps:
        # A model that fails to load here is left unloaded: each worker then tries again on its
        # first file and records the error in that file's row, as the forkserver workers do.
        with contextlib.suppress(Exception):
            step.model.load()
    BatchWorker(steps, on_error=on_error)([])


def _context(cpus_per_worker: int, steps: Sequence[Step]) -> multiprocessing.context.BaseContext:
    if forks_from_driver(cpus_per_worker, steps):
        return multiprocessing.get_context("fork")
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # read when the server starts (once per driver); a module that is not installed is skipped
    context.set_forkserver_preload(["torch", "pyarrow", "pandas", __name__])
    return context


def run_local(
    batches: Iterable[Sequence[str]],
    steps: Sequence[Step],
    *,
    workers: int,
    cpus_per_worker: int,
    on_error: OnError,
) -> Iterator[pa.Table]:
    """Run ``batches`` on a process pool of ``workers``; yield each batch's table as it finishes.

    Raises:
        BatchItemError: with ``on_error="raise"``, from the first failing file (the batches not
            started yet are cancelled; finished ones have already been yielded).
    """
    context = _context(cpus_per_worker, steps)
    if context.get_start_method() == "fork":
        _preload(steps, on_error)
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(tuple(steps), on_error, cpus_per_worker),
    ) as pool:
        queue = iter(batches)
        pending: set[Future[pa.Table]] = set()

        def submit() -> None:
            batch = next(queue, None)
            if batch is not None:
                pending.add(pool.submit(_run_batch, list(batch)))

        with warnings.catch_warnings():
            # Python >= 3.12 warns that forking a process with threads (torch's) may deadlock the
            # child; the workers run torch on one thread, outside those threads (module docstring).
            warnings.filterwarnings(
                "ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning
            )
            for _ in range(2 * workers):  # the first submit starts the workers
                submit()
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    pending.discard(future)
                    yield future.result()
                    submit()
        finally:
            for future in pending:
                future.cancel()


__all__ = ["forks_from_driver", "run_local"]
