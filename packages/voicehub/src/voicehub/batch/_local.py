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

A worker never outlives the driver: a driver killed with ``SIGKILL`` runs no cleanup, and its
workers, which wait on a pipe whose write end they hold themselves, would otherwise run forever
(adopted by PID 1, holding the model). On Linux each worker asks the kernel, first thing after
the fork, for ``SIGKILL`` when its parent dies (``prctl(PR_SET_PDEATHSIG)``), then checks that the
driver is still there (it may have died before the request). A forkserver worker's parent is the
server, which the workers themselves keep alive (each holds the descriptor whose closing ends
it), so such a worker also watches the driver from a daemon thread: it waits on a process file
descriptor of the driver (``os.pidfd_open``, Linux), or polls the driver's pid every half second
elsewhere, and exits when the driver is gone. Everywhere, a worker also compares its parent's pid
with the one it started with before each batch and exits when it changed.

Each worker pins its torch threads to ``cpus_per_worker`` and builds one
:class:`~voicehub.batch._worker.BatchWorker` from the job's steps. At most two batches per worker
are in flight (back-pressure: the driver never queues the whole corpus). Results come back in
completion order. Scripts that call the local engine need the usual
``if __name__ == "__main__":`` guard (forkserver and spawn workers re-import the main module).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import TYPE_CHECKING

from voicehub.batch._worker import BatchWorker, OnError, Step, pin_torch_threads

if TYPE_CHECKING:
    import pyarrow as pa

_WORKER: BatchWorker | None = None  # one per worker process, built by _start_worker
_PARENT: int | None = None  # the pid of the worker's parent when it started
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent(driver: int) -> None:
    """Make this worker process exit when its parent does (see the module docstring)."""
    global _PARENT
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no libc symbol: the per-batch check remains
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _PARENT = os.getppid()
    # forked from the driver: the parent is the driver; from a forkserver: the server, a child of the driver
    if _PARENT == 1 or not _alive(driver):
        os._exit(1)
    if driver != _PARENT:
        threading.Thread(target=_watch_driver, args=(driver,), name="voicehub-driver-watch", daemon=True).start()


def _watch_driver(driver: int) -> None:
    """Exit this worker process as soon as the driver process has ended (runs on a daemon thread)."""
    try:
        descriptor = os.pidfd_open(driver)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):  # no pidfd (not Linux, or an old kernel): poll
        while _alive(driver):
            time.sleep(0.5)
        os._exit(1)
    select.select([descriptor], [], [])  # readable once the driver has exited
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a pid reused by another user's process
        return False
    return True


def _start_worker(steps: Sequence[Step], on_error: OnError, num_threads: int, driver: int) -> None:
    global _WORKER
    _die_with_parent(driver)
    pin_torch_threads(num_threads)  # first: before this (possibly forked) process runs any torch operation
    _WORKER = BatchWorker(steps, on_error=on_error)


def _run_batch(paths: Sequence[str]) -> pa.Table:
    if _WORKER is None:  # pragma: no cover - the pool always runs the initializer first
        raise RuntimeError("voicehub.batch worker used before it was started")
    if os.getppid() != _PARENT:  # orphaned (where the kernel does not end it): nobody reads the result
        os._exit(1)
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
        initargs=(tuple(steps), on_error, cpus_per_worker, os.getpid()),
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
