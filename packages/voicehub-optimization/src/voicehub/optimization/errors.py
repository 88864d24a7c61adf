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


class OptimizationValidationError(OptimizationError, RuntimeError):
    """A pass's own ``validate()`` or ``manifest_configuration()`` raised a non-VoiceHub exception.

    Raised while the plan is being validated: nothing was changed. It usually means a bug in the
    pass (``validate`` should raise a VoiceHub error that names the mismatch).

    Attributes:
        pass_id: the pass whose check raised.
        cause: the exception it raised.
    """

    def __init__(self, pass_id: str, stage: str, cause: BaseException):
        self.pass_id = pass_id
        self.cause = cause
        super().__init__(
            f"optimization pass {pass_id!r} raised {type(cause).__name__} in {stage}: {cause}; nothing was changed. "
            f"Expected {stage} to succeed or raise a VoiceHub optimization error naming the mismatch: fix the pass, "
            "or drop it from the plan"
        )


DEFAULT_RECOVERY = "do not use this runtime again: reload it from its checkpoint (build a new module)"
"""How to recover a tainted or irreversibly changed bare runtime; task wrappers name their own way."""


class OptimizationApplicationError(OptimizationError, RuntimeError):
    """A pass failed while a plan was being applied; earlier passes were rolled back.

    Attributes:
        pass_id: the pass that failed.
        cause: the exception it raised.
        rollback_errors: ``(pass_id, message)`` for every earlier pass that could not be rolled
            back; empty when the runtime is back in its original state.
        result: when ``rollback_errors`` is not empty, the *tainted* plan (an
            ``OptimizationResult`` whose ``tainted`` says why): the runtime is partly changed and
            must be rebuilt; ``None`` otherwise.
        recovery: the sentence telling the caller how to get a usable runtime back.
    """

    def __init__(
        self,
        pass_id: str,
        cause: BaseException,
        rollback_errors: Iterable[tuple[str, str]] = (),
        *,
        result: object | None = None,
        recovery: str = DEFAULT_RECOVERY,
    ):
        self.pass_id = pass_id
        self.cause = cause
        self.rollback_errors = tuple(rollback_errors)
        self.result = result
        self.recovery = recovery
        message = f"optimization pass {pass_id!r} failed: {type(cause).__name__}: {cause}"
        if self.rollback_errors:
            details = "; ".join(f"{pid}: {msg}" for pid, msg in self.rollback_errors)
            message += (
                f"; rolling back earlier passes ALSO failed ({details}). The runtime is TAINTED (partly changed); "
                f"further plans are refused. To recover, {recovery}"
            )
        else:
            message += "; earlier passes were rolled back and the runtime is unchanged"
        super().__init__(message)


class OptimizationRestoreError(OptimizationError, RuntimeError):
    """A plan (or one pass) cannot be restored: it is irreversible, already restored, or restore failed."""


class OptimizationLifecycleError(OptimizationError, LifecycleError):
    """An optimization plan conflicts with the runtime's lifecycle (mode change, plan already active)."""


__all__ = [
    "DEFAULT_RECOVERY",
    "OptimizationApplicationError",
    "OptimizationCompatibilityError",
    "OptimizationConfigurationError",
    "OptimizationError",
    "OptimizationLifecycleError",
    "OptimizationProtocolError",
    "OptimizationRestoreError",
    "OptimizationValidationError",
]
