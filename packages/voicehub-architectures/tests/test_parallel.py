"""map_single_threaded, call_single_threaded and map_with_caller: order, one intra-op thread per worker, the caller's
thread count and autograd mode, errors."""

from __future__ import annotations

import os
import threading
import time

import pytest
import torch

from voicehub.architectures.parallel import (
    call_single_threaded,
    idle_threads_sleep,
    map_single_threaded,
    map_with_caller,
)


def test_results_keep_the_order_of_the_items_and_use_several_threads() -> None:
    seen: list[tuple[str, int, bool]] = []

    def work(item: int) -> int:
        time.sleep(0.02)  # long enough for the other thread to take an item
        seen.append((threading.current_thread().name, torch.get_num_threads(), torch.is_inference_mode_enabled()))
        return item * item

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with torch.inference_mode():
            assert map_single_threaded(work, [5, 3, 1, 4], 2) == [25, 9, 1, 16]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)
    assert len({name for name, _, _ in seen}) == 2
    assert all(threads == 1 and inference for _, threads, inference in seen)


def test_threads_started_meanwhile_keep_the_default_thread_count() -> None:
    """The workers' one intra-op thread is theirs: a thread started while items run, and the caller,
    keep the process's count."""
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    seen: list[int] = []

    def work(item: int) -> int:
        probe = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        probe.start()
        probe.join()
        return item

    try:
        map_single_threaded(work, list(range(6)), 2)
        assert torch.get_num_threads() == 2
        after = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        after.start()
        after.join()
    finally:
        torch.set_num_threads(previous)
    assert seen == [2] * 7


def test_one_thread_or_one_item_runs_on_the_caller() -> None:
    names: list[str] = []

    def work(item: int) -> int:
        names.append(threading.current_thread().name)
        return item + 1

    assert map_single_threaded(work, [1, 2, 3], 1) == [2, 3, 4]
    assert map_single_threaded(work, [7], 4) == [8]
    assert set(names) == {threading.current_thread().name}


def test_the_first_error_reaches_the_caller_and_the_thread_count_is_restored() -> None:
    def work(item: int) -> int:
        if item == 2:
            raise ValueError("item 2 is bad")
        return item

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pytest.raises(ValueError, match="item 2 is bad"):
            map_single_threaded(work, [1, 2, 3, 4], 2)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)


def test_workers_follow_the_callers_grad_mode() -> None:
    weight = torch.ones(3, requires_grad=True)

    def work(item: float) -> torch.Tensor:
        return (weight * item).sum()

    with torch.no_grad():
        assert not any(r.requires_grad for r in map_single_threaded(work, [1.0, 2.0], 2))
    results = map_single_threaded(work, [1.0, 2.0], 2)
    assert all(r.requires_grad for r in results)
    torch.stack(results).sum().backward()  # type: ignore[no-untyped-call]
    assert weight.grad is not None and torch.equal(weight.grad, torch.full((3,), 3.0))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_its_own_workers() -> None:
    """The parent's pool threads do not exist in a forked child: the child must not wait for them, and
    its own workers run torch operators (on fresh threads, with one intra-op thread each)."""
    assert map_single_threaded(lambda item: item, [1, 2], 2) == [1, 2]  # the parent's pool exists now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running the parent's atexit hooks
        try:
            names: set[str] = set()

            def work(item: int) -> int:
                time.sleep(0.02)
                names.add(threading.current_thread().name)
                weight = torch.full((1, 4, 3), 0.5)
                return int(torch.nn.functional.conv1d(torch.ones(1, 4, 64), weight).sum()) + item

            ok = map_single_threaded(work, [1, 2, 3, 4], 2) == [373, 374, 375, 376] and len(names) == 2
            os.write(write, b"ok" if ok else b"bad")
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung waiting for the parent's pool threads")
    assert os.read(read, 8) == b"ok"


def test_call_single_threaded_runs_on_a_one_thread_worker_and_returns_or_raises() -> None:
    """With two intra-op threads the call runs on a pool worker with one intra-op thread, in the
    caller's autograd mode; its result comes back and its error is raised in the caller. With one
    intra-op thread it runs on the caller's thread."""
    caller = threading.current_thread().name

    def where() -> tuple[str, int, bool]:
        return threading.current_thread().name, torch.get_num_threads(), torch.is_inference_mode_enabled()

    def fails() -> None:
        raise KeyError("from the worker")

    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        with torch.inference_mode():
            name, threads, inference = call_single_threaded(where)
        assert name != caller and threads == 1 and inference
        assert torch.get_num_threads() == 2
        with pytest.raises(KeyError, match="from the worker"):
            call_single_threaded(fails)
        torch.set_num_threads(1)
        name, threads, inference = call_single_threaded(where)
        assert (name, threads, inference) == (caller, 1, False)
    finally:
        torch.set_num_threads(previous)


@pytest.mark.parametrize(
    ("environment", "sleep"),
    [
        ({"OMP_WAIT_POLICY": "PASSIVE"}, True),
        ({"OMP_WAIT_POLICY": " passive "}, True),
        ({"GOMP_SPINCOUNT": "0"}, True),
        ({"OMP_WAIT_POLICY": "ACTIVE"}, False),
        ({"GOMP_SPINCOUNT": "10000"}, False),
        ({}, False),
    ],
)
def test_idle_threads_sleep_reads_the_openmp_wait_policy(
    environment: dict[str, str], sleep: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert idle_threads_sleep() is sleep


def test_map_with_caller_shares_items_between_the_caller_and_a_worker() -> None:
    """From a one-thread pool worker (the text side of call_single_threaded), the caller takes the
    first item and a second worker the next; results keep their order, both run one intra-op
    thread in the caller's mode, and threads started afterwards keep the process's count (a worker
    never grows the pool, which would reset it)."""
    seen: list[tuple[str, int, bool]] = []

    def work(item: int) -> int:
        time.sleep(0.05)  # long enough for the helper to take an item
        seen.append((threading.current_thread().name, torch.get_num_threads(), torch.is_inference_mode_enabled()))
        return item * 10

    def on_a_worker() -> tuple[list[int], str]:
        return map_with_caller(work, [1, 2]), threading.current_thread().name

    previous = torch.get_num_threads()
    counts: list[int] = []
    try:
        torch.set_num_threads(2)
        call_single_threaded(lambda: None)  # the pool exists with two workers before the timed call
        with torch.inference_mode():
            results, caller = call_single_threaded(on_a_worker)
        probe = threading.Thread(target=lambda: counts.append(torch.get_num_threads()))
        probe.start()
        probe.join()
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)
    assert results == [10, 20]
    assert seen[0][0] == caller or seen[1][0] == caller
    assert len({name for name, _, _ in seen}) == 2, seen
    assert all(threads == 1 and inference for _, threads, inference in seen)
    assert counts == [2]


def test_map_with_caller_runs_untaken_items_itself_instead_of_waiting() -> None:
    """Two callers on the two workers of the pool, each waiting for a helper that the other one
    occupies: each runs its items itself, and both finish (no deadlock), with their own results."""
    previous = torch.get_num_threads()
    results: dict[str, list[int]] = {}
    start = threading.Barrier(2)

    def caller(name: str, base: int) -> None:
        def on_a_worker() -> list[int]:
            start.wait(timeout=10)  # both callers now hold a worker each
            return map_with_caller(lambda item: (time.sleep(0.02), base + item)[1], [1, 2, 3])

        results[name] = call_single_threaded(on_a_worker)

    try:
        torch.set_num_threads(2)
        threads = [threading.Thread(target=caller, args=(name, base)) for name, base in (("a", 100), ("b", 200))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in threads), "map_with_caller waited for a busy worker"
    finally:
        torch.set_num_threads(previous)
    assert results == {"a": [101, 102, 103], "b": [201, 202, 203]}


def test_map_with_caller_raises_the_first_error_and_runs_one_item_on_the_caller() -> None:
    caller = threading.current_thread().name

    def work(item: int) -> str:
        if item == 2:
            raise ValueError("item 2 is bad")
        return threading.current_thread().name

    with pytest.raises(ValueError, match="item 2 is bad"):
        map_with_caller(work, [1, 2, 3])
    assert map_with_caller(work, [5]) == [caller]
