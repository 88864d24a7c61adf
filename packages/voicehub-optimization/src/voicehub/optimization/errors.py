"""Errors of the optimization layer.

Every error derives from a :mod:`voicehub.core.errors` class (and so from ``VoiceHubError``
and the matching builtin). Errors raised while a plan is being *validated* mean nothing was
changed; :class:`OptimizationApplicationError` means a pass failed while the plan was being
*applied* and earlier passes were rolled back (its ``rollback_errors`` say whether that worked).
"""

from __future__ import annotations

from collections.abc import Iterable

from voicehub.core.errors import ConfigError, DeviceError, LifecycleError, VoiceHubError


class OptimizationError(VoiceHubError):
    """Root of the optimization layer's errors."""


class OptimizationConfigurationError(OptimizationError, ConfigError):
    """A pass, plan or context is configured with an invalid value (wrong type, unknown option, duplicate)."""


class OptimizationCompatibilityError(OptimizationError, DeviceError):
    """A pass cannot run on this runtime, device, dtype, mode or architecture; raised before any change.

    Attributes:
        pass_id: the pass that was refused.
        reasons: one readable sentence per incompatibility.
    """

    def __init__(self, pass_id: str, reasons: Iterable[str]):
        self.pass_id = pass_id
        self.reasons = tuple(reasons)
        super().__init__(f"optimization pass {pass_id!r} cannot be applied: " + "; ".join(self.reasons))


class OptimizationProtocolError(OptimizationError, TypeError):
    """A runtime exposes an optimization protocol, but in a malformed way; raised before any change.

    Attributes:
        pass_id: the pass whose protocol check failed.
        module: the dotted name of the offending submodule (``""`` for the root).
    """

    def __init__(self, message: str, *, pass_id: str, module: str = ""):
        super().__init__(message)
        self.pass_id = pass_id
        self.module = module


class OptimizationApplicationError(OptimizationError, RuntimeError):
    """A pass failed while a plan was being applied; earlier reversible passes were rolled back.

    Attributes:
        pass_id: the pass that failed.
        cause: the exception it raised.
        rollback_errors: ``(pass_id, message)`` for every earlier pass that could not be rolled
            back; empty when the runtime is back in its original state.
    """

    def __init__(self, pass_id: str, cause: BaseException, rollback_errors: Iterable[tuple[str, str]] = ()):
        self.pass_id = pass_id
        self.cause = cause
        self.rollback_errors = tuple(rollback_errors)
        message = f"optimization pass {pass_id!r} failed: {type(cause).__name__}: {cause}"
        if self.rollback_errors:
            details = "; ".join(f"{pid}: {msg}" for pid, msg in self.rollback_errors)
            message += f"; rolling back earlier passes ALSO failed ({details}); reload the model"
        else:
            message += "; earlier passes were rolled back and the runtime is unchanged"
        super().__init__(message)


class OptimizationRestoreError(OptimizationError, RuntimeError):
    """A plan (or one pass) cannot be restored: it is irreversible, already restored, or restore failed."""


class OptimizationLifecycleError(OptimizationError, LifecycleError):
    """An optimization plan conflicts with the runtime's lifecycle (mode change, plan already active)."""


__all__ = [
    "OptimizationApplicationError",
    "OptimizationCompatibilityError",
    "OptimizationConfigurationError",
    "OptimizationError",
    "OptimizationLifecycleError",
    "OptimizationProtocolError",
    "OptimizationRestoreError",
]
