"""map_single_threaded: order, one intra-op thread per worker, the caller's thread count and autograd
mode, errors."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from voicehub.architectures.parallel import map_single_threaded


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
    torch.stack(results).sum().backward()
    assert weight.grad is not None and torch.equal(weight.grad, torch.full((3,), 3.0))
