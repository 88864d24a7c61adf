"""A value derived from a module's weights (a transposed, stacked or packed copy), kept until a weight changes.

Several architectures keep such copies for inference: Whisper's column-major copy of its tied
embedding, the VITS execution backend's packed convolution weights. They share one rule, kept here:

* the value is rebuilt when a source tensor changes: another tensor, an in-place update (its
  version counter), another dtype or device;
* sources that keep no version counter (inference tensors) cannot be watched: :meth:`get` then
  returns ``None`` and the caller takes its path without the copy;
* the pickle rule: a holder is never saved, copied or pickled with its module. A deep copy or an
  unpickled module gets an empty holder that builds again on first use, so a copy never shares
  (or keeps alive) the original's derived tensors, and ``state_dict`` never sees them (the holder
  is a plain attribute, not a parameter or buffer).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from torch import Tensor

T = TypeVar("T")


class DerivedTensors(Generic[T]):
    """One value built from source tensors, kept until one of them changes (see the module docstring).

    Thread-safe: concurrent callers see a consistent value; the builder runs outside the lock, so two
    threads that miss at once may both build (the last one is kept).
    """

    __slots__ = ("_key", "_lock", "_value")

    def __init__(self) -> None:
        self._key: tuple[tuple[int, int, object, object], ...] | None = None
        self._value: T | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        """Whether a value is held (a new, copied or unpickled holder holds none)."""
        return self._key is not None

    def get(self, sources: Sequence[Tensor], build: Callable[[], T]) -> T | None:
        """``build()``'s value for the current ``sources``, built now if any changed since the last call.

        Args:
            sources: the tensors the value is derived from (typically parameters).
            build: makes the value from the current sources.

        Returns:
            The value, or ``None`` when a source is an inference tensor (no version counter to watch).
        """
        if any(t.is_inference() for t in sources):
            return None
        key = tuple((t.data_ptr(), t._version, t.dtype, t.device) for t in sources)
        with self._lock:
            if self._key == key:
                return self._value
        value = build()
        with self._lock:
            self._key, self._value = key, value
        return value

    def __deepcopy__(self, memo: dict[int, object]) -> DerivedTensors[T]:
        return DerivedTensors()

    def __reduce__(self) -> tuple[type[DerivedTensors[T]], tuple[()]]:
        return (DerivedTensors, ())


__all__ = ["DerivedTensors"]
