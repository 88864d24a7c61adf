"""The ``local`` engine: a pool of worker processes on this machine (no extra dependency).

Worker processes come from a ``forkserver`` (``spawn`` where there is none, e.g. Windows): a
clean server process that has imported torch and this module once, and never ran a torch
operation or held a model, forks each worker, so no worker inherits thread pools or locks in use
and none pays torch's import again (seconds, much more on a loaded machine). The server lives as
long as the driver process, so later jobs start faster still. Each worker pins its torch
threads to ``cpus_per_worker`` and builds one :class:`~voicehub.batch._worker.BatchWorker`
from the job's steps, whose wrappers arrive as pickled recipes and load once, on that
worker's first batch. At most two batches per worker are in flight (back-pressure: the driver
never queues the whole corpus). Results come back in completion order. Scripts that call the
local engine need the usual ``if __name__ == "__main__":`` guard, since the workers re-import
the main module.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import TYPE_CHECKING

from voicehub.batch._worker import BatchWorker, OnError, Step, pin_torch_threads

if TYPE_CHECKING:
    import pyarrow as pa

_WORKER: BatchWorker | None = None  # one per worker process, built by _start_worker


def _start_worker(steps: Sequence[Step], on_error: OnError, num_threads: int) -> None:
    global _WORKER
    pin_torch_threads(num_threads)
    _WORKER = BatchWorker(steps, on_error=on_error)


def _run_batch(paths: Sequence[str]) -> pa.Table:
    if _WORKER is None:  # pragma: no cover - the pool always runs the initializer first
        raise RuntimeError("voicehub.batch worker used before it was started")
    return _WORKER(paths)


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", __name__])  # read when the server starts (once per driver)
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
    context = _context()
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

        for _ in range(2 * workers):
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


__all__ = ["run_local"]
