"""Independent pieces of work on the CPU's threads, one intra-op thread each.

PyTorch parallelizes inside each operator (OpenMP / oneDNN / MKL): every operator opens a parallel
region, wakes the other threads, splits its work and waits at a barrier. For independent items
(the sentences of a batch, time pieces of one sentence), running each item on its own thread with a
single intra-op thread does the same arithmetic with one wake-up per item instead of one per
operator. Measured on the 2-core test machine (VITS HiFi-GAN decoder, 256 latent frames, see
docs/tts.md): one thread 190-240 ms per item; two items on two threads 190-250 ms each, against
140-160 ms per item when one item at a time splits every operator over both threads.

The items run on a process-wide pool of worker threads that each set one intra-op thread once,
when the pool starts (``torch.set_num_threads`` sets the calling thread's OpenMP team size and MKL
thread count, and also the count threads created later start with: the pool restores that default
before it is used, so the caller's and other threads' settings never change). The caller waits,
except when it is itself a pool worker (:func:`map_with_caller`): then it takes items too.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar, cast

import torch

T = TypeVar("T")
R = TypeVar("R")

_POOL_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_PID = 0
_THIS_THREAD = threading.local()


def _one_intra_op_thread() -> None:
    """Pool thread initializer: torch's lazy per-thread setup first (it would otherwise reset the
    count at the thread's first parallel operator), then one intra-op thread for good."""
    torch.get_num_threads()
    torch.set_num_threads(1)
    _THIS_THREAD.is_worker = True


def _start(pool: ThreadPoolExecutor, workers: int) -> None:
    """Start all ``workers`` threads of ``pool`` now (each initializes itself, see :func:`_one_intra_op_thread`)."""
    started = threading.Barrier(workers)
    for future in [pool.submit(started.wait) for _ in range(workers)]:
        future.result()


def _pool(workers: int) -> ThreadPoolExecutor:
    """The process's worker pool with at least ``workers`` single-threaded workers (grown on demand).

    A forked child gets a pool of its own: the parent's worker threads do not exist in it.
    """
    global _POOL, _POOL_SIZE, _POOL_PID
    with _POOL_LOCK:
        if _POOL is None or workers > _POOL_SIZE or os.getpid() != _POOL_PID:
            default = torch.get_num_threads()
            pool = ThreadPoolExecutor(workers, thread_name_prefix="voicehub-item", initializer=_one_intra_op_thread)
            try:
                _start(pool, workers)
            finally:
                torch.set_num_threads(default)  # the initializers also set the default of new threads
            # A smaller old pool is left to finish what it runs; its idle threads exit with the process.
            _POOL, _POOL_SIZE, _POOL_PID = pool, workers, os.getpid()
        return _POOL


def map_single_threaded(function: Callable[[T], R], items: Sequence[T], num_threads: int) -> list[R]:
    """``[function(item) for item in items]``, the items spread over up to ``num_threads`` worker
    threads (at most one per CPU), each running with one intra-op thread.

    Threads take the next item as they finish one (pass the items longest first to balance them).
    The workers run in the caller's autograd mode (grad / no-grad / inference mode); the caller waits.
    With one thread, one CPU or a single item, the items run on the caller's thread, unchanged. A
    caller that is itself a pool worker takes items too (:func:`map_with_caller`).

    Args:
        function: work on one item; must not depend on the other items' results.
        items: the items.
        num_threads: threads to use (the caller's intra-op thread count, typically).

    Returns:
        The results in the order of ``items``.

    Raises:
        Exception: the first exception an item raised (after every thread has stopped taking items).
    """
    workers = min(num_threads, len(items), os.cpu_count() or 1)
    if workers <= 1:
        return [function(item) for item in items]
    if _on_a_worker():
        return map_with_caller(function, items, workers)
    return _on_pool(function, items, workers, workers)


def call_single_threaded(function: Callable[[], R]) -> R:
    """``function()`` on one worker thread of the pool (one intra-op thread), the caller waiting.

    For serial work of small operators (a sentence's text side: over a thousand operators, its
    matrix products of tens to a few hundred rows), which a second intra-op thread does not speed
    up: each operator would wake it and wait for it. With one intra-op thread in the caller, or one
    CPU, ``function`` runs on the caller's thread. Runs in the caller's autograd mode. The pool
    gets a worker per intra-op thread of the caller, so that ``function`` finds helpers there
    (:func:`map_with_caller`).

    Raises:
        Exception: what ``function`` raised.
    """
    threads = min(torch.get_num_threads(), os.cpu_count() or 1)
    if threads <= 1:
        return function()
    return _on_pool(lambda _: function(), [None], 1, threads)[0]


def map_with_caller(function: Callable[[T], R], items: Sequence[T], num_threads: int | None = None) -> list[R]:
    """``[function(item) for item in items]``, the calling thread and up to ``len(items) - 1`` pool
    workers (``num_threads - 1`` if given) taking the items in turn, for a caller that itself runs
    with one intra-op thread (such as ``function`` of :func:`call_single_threaded`): the caller works
    instead of waiting idle.

    A caller that is itself a pool worker uses the pool as it is (see the comment in the body); any
    other caller gets a pool with a worker per item (up to one per CPU). The caller waits only for
    items a worker has started; an item no worker has taken by then runs on the caller. So a call
    made while every worker is busy (two such callers on a two-worker pool, each waiting for the
    other's worker) finishes on the caller instead of waiting forever. The workers run in the
    caller's autograd mode. With one item or one CPU, everything runs on the caller.

    Args:
        function: work on one item; must not depend on the other items' results.
        items: the items (the caller takes the first).
        num_threads: threads to use, the caller's included (default: one per item, up to one per CPU).

    Returns:
        The results in the order of ``items``.

    Raises:
        Exception: the first exception an item raised (after the items already started have ended).
    """
    workers = min(len(items), os.cpu_count() or 1, num_threads or len(items))
    if workers <= 1:
        return [function(item) for item in items]
    shared = _Shared(function, items)
    # A pool worker never grows the pool: a new pool restores the thread count new threads start
    # with from the caller's own, and a worker's is one. If the caller is the pool's only worker,
    # the items all run on it (the helper finds none left).
    pool = _POOL
    if pool is None or not _on_a_worker():
        pool = _pool(workers)
    for _ in range(workers - 1):
        pool.submit(shared.work)
    shared.drain()
    return shared.results()


def _on_a_worker() -> bool:
    """Whether the calling thread is a pool worker (one intra-op thread) in the process that made the pool."""
    return bool(getattr(_THIS_THREAD, "is_worker", False)) and _POOL is not None and os.getpid() == _POOL_PID


def idle_threads_sleep() -> bool:
    """Whether idle OpenMP threads sleep at once rather than spin: ``OMP_WAIT_POLICY=PASSIVE`` or
    ``GOMP_SPINCOUNT=0`` in the environment (the OpenMP runtime reads them when it starts, so they
    must be set before torch is imported; the ``voicehub`` command sets ``PASSIVE``).

    Work on the pool runs beside the caller's own OpenMP threads. Under libgomp's default policy
    those spin after each parallel region (up to 300,000 polls) and take the cores the pool's
    workers need, so one item is split over the pool only when idle threads sleep. Measured on the
    2-core test machine (one VITS sentence of 160 frames, docs/tts.md): with spinning threads,
    splitting over the pool took 157-181 ms against 126-157 ms for intra-op threads alone.
    """
    policy = os.environ.get("OMP_WAIT_POLICY", "").strip().upper()
    return policy == "PASSIVE" or os.environ.get("GOMP_SPINCOUNT", "").strip() == "0"


class _Shared(Generic[T, R]):
    """The items of one call, taken in turn by every thread that drains them (workers and, for
    :func:`map_with_caller`, the caller); a worker runs them in the caller's autograd mode."""

    def __init__(self, function: Callable[[T], R], items: Sequence[T]) -> None:
        self.function, self.items = function, items
        self.outputs: list[R | None] = [None] * len(items)
        self.errors: list[BaseException] = []
        self.changed = threading.Condition()
        self.next_index = 0
        self.running = 0
        self.inference = torch.is_inference_mode_enabled()
        self.grad = torch.is_grad_enabled()

    def drain(self) -> None:
        """Run items until none is left or one has failed."""
        while True:
            with self.changed:
                if self.errors or self.next_index >= len(self.items):
                    return
                index, self.next_index = self.next_index, self.next_index + 1
                self.running += 1
            try:
                self.outputs[index] = self.function(self.items[index])
            except BaseException as err:  # handed to the caller by results()
                self.stop(err)
            finally:
                with self.changed:
                    self.running -= 1
                    self.changed.notify_all()

    def work(self) -> None:
        """:meth:`drain` on a pool worker, in the caller's autograd mode."""
        with torch.inference_mode(self.inference), torch.set_grad_enabled(self.grad and not self.inference):
            self.drain()

    def stop(self, err: BaseException) -> None:
        """Record ``err``; no thread takes another item."""
        with self.changed:
            self.errors.append(err)

    def results(self) -> list[R]:
        """The outputs in the order of the items, once every started item has ended.

        Raises:
            Exception: the first exception recorded.
        """
        with self.changed:
            self.changed.wait_for(lambda: self.running == 0)
        if self.errors:
            raise self.errors[0]
        return cast(list[R], self.outputs)


def _on_pool(function: Callable[[T], R], items: Sequence[T], workers: int, pool_size: int) -> list[R]:
    """:func:`map_single_threaded` on ``workers`` threads of the pool, which gets at least ``pool_size`` workers."""
    shared = _Shared(function, items)
    pool = _pool(pool_size)
    futures = [pool.submit(shared.work) for _ in range(workers)]
    try:
        for future in futures:
            future.result()
    except BaseException as err:  # e.g. KeyboardInterrupt while waiting: the workers take no more items
        shared.stop(err)
        raise
    return shared.results()


__all__ = ["call_single_threaded", "idle_threads_sleep", "map_single_threaded", "map_with_caller"]
