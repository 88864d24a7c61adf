"""The call gate of a wrapper: task calls run together, a runtime change runs alone."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class CallGate:
    """Lets task calls run concurrently and a runtime change (an optimization plan applied or
    restored, ``unload()``) run alone.

    A change waits for the calls already running to return; calls that start while a change
    waits or runs wait for it to finish, then run on the changed runtime. So no call ever sees a
    half-converted module (a bfloat16 weight next to a float32 one). A thread that is already
    inside a call or a change passes straight through (no self-deadlock on nested calls).
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._running = 0
        self._changing = False
        self._local = threading.local()

    def _depth(self) -> int:
        return int(getattr(self._local, "depth", 0))

    @contextlib.contextmanager
    def _nested(self) -> Iterator[None]:
        """A call or change made by a thread already inside one passes straight through."""
        self._local.depth += 1
        try:
            yield
        finally:
            self._local.depth -= 1

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """Run a task call (``detect``, ``embed``...): waits while a change is pending or running."""
        if self._depth():
            with self._nested():
                yield
            return
        with self._condition:
            while self._changing:
                self._condition.wait()
            self._running += 1
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            with self._condition:
                self._running -= 1
                self._condition.notify_all()

    @contextlib.contextmanager
    def change(self) -> Iterator[None]:
        """Change the runtime alone: waits for running calls; new calls wait for it."""
        if self._depth():
            with self._nested():
                yield
            return
        with self._condition:
            while self._changing:
                self._condition.wait()
            self._changing = True
            while self._running:
                self._condition.wait()
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            with self._condition:
                self._changing = False
                self._condition.notify_all()


__all__ = ["CallGate"]
