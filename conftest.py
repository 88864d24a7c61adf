"""Fixtures shared by the test folders of every workspace package (pytest finds this file above them).

The intra-op thread fixtures: the test machines are shared, oversubscribed threads wait on each other
and small graphs gain nothing from a second thread, so most model tests run on one; the tests of
work split over threads ask for two. Each restores the count it found. Use them per module with
``pytestmark = pytest.mark.usefixtures("one_intra_op_thread")``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import torch


@contextlib.contextmanager
def _intra_op_threads(count: int) -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def one_intra_op_thread() -> Iterator[None]:
    """One intra-op thread for a test module."""
    with _intra_op_threads(1):
        yield


@pytest.fixture(scope="module")
def two_intra_op_threads() -> Iterator[None]:
    """Two intra-op threads for a test module."""
    with _intra_op_threads(2):
        yield


@pytest.fixture(scope="session")
def one_intra_op_thread_for_the_session() -> Iterator[None]:
    """One intra-op thread from the first test that asks until the session ends (for session-wide
    fixtures, such as loaded checkpoints, whose users share them)."""
    with _intra_op_threads(1):
        yield
