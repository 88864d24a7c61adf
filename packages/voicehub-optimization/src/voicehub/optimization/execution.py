"""Runtime inspection and scoped method patching shared by the passes and the plan manager.

Execution methods are the methods a task wrapper calls to run the runtime. By default that is
``forward``; a runtime whose entry points differ exposes the protocol
``optimization_execution_methods() -> tuple[str, ...]``. Passes that wrap execution
(inference mode, threads, dtype casting, compile) install an *instance attribute* over the
method, which leaves ``state_dict`` keys untouched and is removed again on restore.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

from voicehub.optimization.errors import (
    OptimizationLifecycleError,
    OptimizationProtocolError,
    OptimizationRestoreError,
)

EXECUTION_METHODS_PROTOCOL: Final = "optimization_execution_methods"
_MISSING: Final = object()
_WRAPPER_MARK: Final = "__voicehub_optimization_wrapper__"


def torch_module(runtime: object) -> bool:
    """True when ``runtime`` is a ``torch.nn.Module`` (without importing torch)."""
    torch: Any = sys.modules.get("torch")
    return torch is not None and isinstance(runtime, torch.nn.Module)


def not_a_module_reason(runtime: object, what: str) -> str:
    """The standard not-applicable reason for a runtime that is not a torch module."""
    return (
        f"the runtime is {type(runtime).__module__}.{type(runtime).__qualname__}, not a torch.nn.Module, so {what} "
        "does not apply; use a model whose runtime is a PyTorch graph"
    )


def execution_methods(runtime: object, pass_id: str) -> tuple[str, ...]:
    """The runtime's execution methods (``("forward",)`` unless the protocol says otherwise).

    Raises:
        OptimizationProtocolError: if ``optimization_execution_methods`` is present but not a
            method returning a non-empty tuple of names of callable attributes.
    """
    hook = getattr(runtime, EXECUTION_METHODS_PROTOCOL, None)
    if hook is None:
        return ("forward",)
    if not callable(hook):
        raise OptimizationProtocolError(
            f"{type(runtime).__name__}.{EXECUTION_METHODS_PROTOCOL} must be a method returning a tuple of method "
            f"names, got {type(hook).__name__}",
            pass_id=pass_id,
        )
    names = hook()
    if (
        not isinstance(names, tuple)
        or not names
        or not all(isinstance(n, str) for n in names)
        or len(set(names)) != len(names)
    ):
        raise OptimizationProtocolError(
            f"{type(runtime).__name__}.{EXECUTION_METHODS_PROTOCOL}() must return a non-empty tuple of distinct "
            f"method names, got {names!r}",
            pass_id=pass_id,
        )
    for name in names:
        if not callable(getattr(runtime, name, None)):
            raise OptimizationProtocolError(
                f"{type(runtime).__name__}.{EXECUTION_METHODS_PROTOCOL}() names {name!r}, which is not a method of "
                "the runtime",
                pass_id=pass_id,
            )
    return names


def patch_methods(
    runtime: object, names: tuple[str, ...], make_wrapper: Callable[[str, Callable[..., Any]], Callable[..., Any]]
) -> dict[str, object]:
    """Install ``make_wrapper(name, current_method)`` as an instance attribute over each method.

    All methods are patched or none (a failure removes the ones already installed).

    Returns:
        The token for :func:`unpatch_methods`: each name's previous instance attribute.
    """
    previous: dict[str, object] = {}
    try:
        for name in names:
            previous[name] = vars(runtime).get(name, _MISSING)
            current = getattr(runtime, name)
            wrapper = functools.wraps(current)(make_wrapper(name, current))
            setattr(wrapper, _WRAPPER_MARK, True)
            setattr(runtime, name, wrapper)
    except BaseException:
        _put_back(runtime, previous)
        raise
    return previous


def unpatch_methods(runtime: object, token: Mapping[str, object], pass_id: str) -> None:
    """Remove the wrappers :func:`patch_methods` installed.

    Raises:
        OptimizationRestoreError: if a method was replaced again by someone else after the pass
            (restoring it would discard that change).
    """
    for name in token:
        installed = vars(runtime).get(name, _MISSING)
        if installed is _MISSING or not getattr(installed, _WRAPPER_MARK, False):
            raise OptimizationRestoreError(
                f"{pass_id}: {type(runtime).__name__}.{name} was replaced after the pass was applied; restore the "
                "later change first"
            )
    _put_back(runtime, token)


def refuse_tainted_calls(runtime: object, message: str) -> None:
    """Make every execution method of a tainted runtime raise ``OptimizationLifecycleError(message)``.

    A runtime whose rollback failed is partly changed: computing with it would give silently
    wrong outputs (a VAD finding 6 segments instead of 19). Best effort: a method that cannot be
    replaced (a read-only attribute) is left as it is; a malformed execution-method protocol
    falls back to ``forward``.
    """
    try:
        names = execution_methods(runtime, "voicehub.tainted-runtime")
    except Exception:
        names = ("forward",)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OptimizationLifecycleError(message)

    for name in names:
        if callable(getattr(runtime, name, None)):
            try:
                setattr(runtime, name, refuse)
            except Exception:  # a read-only attribute: nothing more can be done
                continue


def _put_back(runtime: object, previous: Mapping[str, object]) -> None:
    for name, value in previous.items():
        if value is _MISSING:
            vars(runtime).pop(name, None)
        else:
            setattr(runtime, name, value)


__all__ = [
    "EXECUTION_METHODS_PROTOCOL",
    "execution_methods",
    "not_a_module_reason",
    "patch_methods",
    "refuse_tainted_calls",
    "torch_module",
    "unpatch_methods",
]
