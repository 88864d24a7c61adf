"""``OptimizationHost``: the optimization lifecycle of a task wrapper.

The meta-package's ``PreTrainedSpeechModel`` inherits this mixin, so every TTS, ASR, VAD and
speaker wrapper offers :meth:`~OptimizationHost.apply_optimization_plan`,
:meth:`~OptimizationHost.restore_optimization_plan`, :meth:`~OptimizationHost.active_optimization`
and :meth:`~OptimizationHost.available_optimization_passes` with one implementation. The host
class implements three hooks: ``_optimization_runtime(mode)``, ``_set_optimization_runtime(mode,
runtime)`` and ``_optimization_architecture()``.

At most one plan is active per mode, and only one mode at a time: a reversible plan must be
restored before the runtime is used in the other mode, so inference-only state never leaks into
a training graph (and the reverse).

A plan that fails validation or application leaves the wrapper in the lifecycle state it had:
when the runtime had to be loaded or switched to the plan's mode first, it is switched back. A
plan whose rollback (or restore) fails leaves a *tainted* runtime: :meth:`active_optimization`
reports it (``result.tainted``), every further plan and mode change is refused, and the errors
say how to recover -- build a new wrapper with ``from_pretrained(...)``. A plan that is
irreversible or tainted can only be discarded with the runtime it changed:
:meth:`optimization_requires_reload` tells a host's ``unload()`` that dropping the runtime is
the way back, and the plan is forgotten once the host no longer holds that runtime.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from voicehub.optimization.capabilities import OptimizationContext, OptimizationMode
from voicehub.optimization.errors import (
    OptimizationApplicationError,
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationLifecycleError,
)
from voicehub.optimization.manager import OptimizationPassManager, Plan, infer_context
from voicehub.optimization.passes import OptimizationResult
from voicehub.optimization.registry import OPTIMIZATION_PASSES, OptimizationPassRegistry

_RESULTS_ATTRIBUTE = "_voicehub_optimization_results"
_UNKNOWN: Final = object()
UNLOADED: Final = "unloaded"
"""What :meth:`OptimizationHost._optimization_loaded_mode` returns for a host without a runtime."""


class OptimizationHost:
    """Mixin giving a model wrapper a transactional optimization lifecycle.

    The host implements:

    * ``_optimization_runtime(mode)``: load the wrapper for ``mode`` if needed and return its
      runtime (usually a ``torch.nn.Module``; a non-torch runtime makes torch passes report
      not-applicable);
    * ``_set_optimization_runtime(mode, runtime)``: install a different runtime object (called
      when a pass returns a new object, and again with the original on restore);
    * ``_optimization_architecture()``: the ``voicehub.registry.ArchitectureSpec`` of the
      runtime, or ``None``.

    Optional hooks, whose defaults read the public ``state``, ``runtime`` and ``unload()`` of
    VoiceHub's task wrappers:

    * ``_optimization_loaded_mode()``: the mode the runtime is loaded for, ``"unloaded"``, or
      ``None`` when unknown (then a failed plan cannot switch the wrapper back);
    * ``_optimization_loaded_runtime()``: the runtime currently held, to forget an irreversible
      or tainted plan once that runtime was dropped;
    * ``_release_optimization_runtime()``: drop the runtime (back to ``"unloaded"``);
    * ``_optimization_recovery()``: the sentence telling users how to get a usable runtime
      back after an irreversible or tainted plan.

    Hosts call :meth:`check_optimization_mode_change` before switching the runtime between
    inference and training, and should let ``unload()`` drop a runtime whose plan
    :meth:`optimization_requires_reload`.
    """

    # ---------------------------------------------------------------- hooks
    def _optimization_runtime(self, mode: OptimizationMode) -> object:
        raise NotImplementedError(f"{type(self).__name__} must implement _optimization_runtime(mode)")

    def _set_optimization_runtime(self, mode: OptimizationMode, runtime: object) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _set_optimization_runtime(mode, runtime)")

    def _optimization_architecture(self) -> Any:
        return None

    def _optimization_loaded_mode(self) -> OptimizationMode | Literal["unloaded"] | None:
        state = getattr(self, "state", None)
        value = getattr(state, "value", state)
        if value in ("inference", "training"):
            return OptimizationMode(value)
        if value == "created":
            return UNLOADED
        return None

    def _optimization_loaded_runtime(self) -> object:
        return getattr(self, "runtime", _UNKNOWN)

    def _release_optimization_runtime(self) -> None:
        unload = getattr(self, "unload", None)
        if not callable(unload):
            raise OptimizationLifecycleError(
                f"{type(self).__name__} has no unload(); implement _release_optimization_runtime() to drop the runtime"
            )
        unload()

    def _optimization_recovery(self) -> str:
        name = type(self).__name__
        if not callable(getattr(type(self), "from_pretrained", None)):
            return f"discard this {name} and build a new one (its runtime cannot be trusted any more)"
        return (
            f"build a new wrapper with {name}.from_pretrained(...) (or voicehub.AutoModel.from_pretrained(...) with "
            "the same arguments) and use it instead of this one"
        )

    # ---------------------------------------------------------------- state
    def _optimization_results(self) -> dict[OptimizationMode, OptimizationResult]:
        results: dict[OptimizationMode, OptimizationResult] | None = getattr(self, _RESULTS_ATTRIBUTE, None)
        if results is None:
            results = {}
            setattr(self, _RESULTS_ATTRIBUTE, results)
        return results

    # ---------------------------------------------------------------- public API
    def available_optimization_passes(self) -> tuple[str, ...]:
        """The names of every registered pass (global registry), sorted. Imports no pass.

        Any of them may be requested: a pass whose protocol this model lacks reports
        ``not-applicable`` with a reason instead of changing the model.
        """
        return OPTIMIZATION_PASSES.list()

    def active_optimization(
        self, mode: OptimizationMode | str = OptimizationMode.INFERENCE
    ) -> OptimizationResult | None:
        """The plan currently applied in ``mode`` (possibly tainted: see ``result.tainted``), or ``None``.

        An irreversible or tainted plan is forgotten once the host no longer holds the runtime
        it changed (the runtime was unloaded or rebuilt).
        """
        mode = OptimizationMode.parse(mode)
        results = self._optimization_results()
        result = results.get(mode)
        if result is not None and result.requires_reload:
            current = self._optimization_loaded_runtime()
            if current is not _UNKNOWN and current is not result.model and current is not result.original_model:
                del results[mode]
                return None
        return result

    def optimization_requires_reload(self, mode: OptimizationMode | str = OptimizationMode.INFERENCE) -> bool:
        """True when the plan active in ``mode`` is irreversible or tainted.

        Such a plan cannot be restored; the only way back to the original runtime is dropping
        this one (``unload()`` then ``load()``, or a new wrapper), so a host's ``unload()`` may
        discard it. False when no plan is active or the plan can be restored.
        """
        result = self.active_optimization(mode)
        return result is not None and result.requires_reload

    def _blocked_message(self, mode: OptimizationMode, result: OptimizationResult) -> str:
        if result.tainted is not None:
            return (
                f"the runtime is TAINTED by a failed optimization plan in {mode.value!r} mode ({result.tainted}); "
                f"it cannot be restored or optimized again. To recover, {self._optimization_recovery()}"
            )
        if not result.reversible:
            return (
                f"an irreversible optimization plan {list(result.outcomes())} is active in {mode.value!r} mode; it "
                f"cannot be restored. To get the original runtime back, {self._optimization_recovery()}"
            )
        return (
            f"an optimization plan {list(result.outcomes())} is already active in {mode.value!r} mode; call "
            f"restore_optimization_plan(mode={mode.value!r}) first"
        )

    def check_optimization_mode_change(self, target_mode: OptimizationMode | str) -> None:
        """Refuse to move the runtime to ``target_mode`` while another mode's plan is active.

        Raises:
            OptimizationLifecycleError: (a ``LifecycleError``) naming the active plan and the fix.
        """
        target = OptimizationMode.parse(target_mode)
        for mode in OptimizationMode:
            result = self.active_optimization(mode)
            if result is None or (mode is target and result.tainted is None):
                continue
            raise OptimizationLifecycleError(
                f"cannot switch to {target.value!r} mode: {self._blocked_message(mode, result)}"
            )

    def apply_optimization_plan(
        self,
        plan: Plan,
        *,
        mode: OptimizationMode | str = OptimizationMode.INFERENCE,
        context: OptimizationContext | None = None,
        registry: OptimizationPassRegistry | None = None,
    ) -> OptimizationResult:
        """Load the runtime for ``mode`` and apply ``plan`` to it, transactionally.

        Everything that can be checked without the runtime (the plan, the modes, an explicit
        context) is checked before the runtime is loaded or switched to ``mode``; if the plan
        then fails, the wrapper is switched back to the lifecycle state it had.

        Args:
            plan: a pass name (``"eval-mode"``), a pass instance, or an ordered sequence of them.
            mode: ``"inference"`` or ``"training"``.
            context: an explicit runtime description (its mode must equal ``mode``); by default it
                is inferred from the runtime's first parameter and the architecture's facts.
            registry: where names are looked up (default: the global registry).

        Returns:
            The result (manifest, outcomes, ``restore()``). ``result.restore()`` and
            :meth:`restore_optimization_plan` are equivalent.

        Raises:
            OptimizationLifecycleError: a plan is already active in this mode, a plan is active in
                the other mode, or the runtime is tainted.
            OptimizationConfigurationError: for a malformed plan (including an irreversible pass
                that is not last) or a context of another mode.
            OptimizationCompatibilityError, OptimizationProtocolError,
            OptimizationValidationError: before anything changed.
            OptimizationApplicationError: a pass failed and earlier passes were rolled back; if the
                rollback failed too, the runtime is tainted and the message says how to recover.
        """
        mode = OptimizationMode.parse(mode)
        active = self.active_optimization(mode)
        if active is not None:
            raise OptimizationLifecycleError(f"cannot apply another plan: {self._blocked_message(mode, active)}")
        self.check_optimization_mode_change(mode)
        if context is not None and context.mode is not mode:
            raise OptimizationConfigurationError(
                f"context.mode={context.mode.value!r} disagrees with mode={mode.value!r}"
            )
        manager = OptimizationPassManager(registry)
        resolved = manager.resolve(plan)
        for name, instance in resolved:  # refuse before the runtime is loaded or switched for `mode`
            if mode not in instance.capabilities.modes:
                supported = ", ".join(m.value for m in instance.capabilities.modes)
                raise OptimizationCompatibilityError(
                    instance.pass_id,
                    (f"pass {name!r} supports {supported} mode, not {mode.value!r}; nothing was loaded or changed",),
                )
            if context is not None:
                reasons = instance.capabilities.incompatibilities(context)
                if reasons:
                    raise OptimizationCompatibilityError(instance.pass_id, (*reasons, "nothing was loaded or changed"))
        recovery = self._optimization_recovery()
        previous = self._optimization_loaded_mode()
        runtime = self._optimization_runtime(mode)
        try:
            ctx = infer_context(runtime, mode) if context is None else context
            result = manager.apply_resolved(
                runtime, resolved, ctx, architecture=self._optimization_architecture(), recovery=recovery
            )
        except OptimizationApplicationError as err:
            if isinstance(err.result, OptimizationResult):  # rollback failed: the runtime stays, tainted
                self._optimization_results()[mode] = err.result
            else:
                self._return_to_lifecycle_state(previous, mode, err)
            raise
        except BaseException as err:
            self._return_to_lifecycle_state(previous, mode, err)
            raise
        result.set_recovery(recovery)
        results = self._optimization_results()
        if result.model is not runtime:
            try:
                self._set_optimization_runtime(mode, result.model)
            except BaseException as err:
                try:
                    result.restore()
                except BaseException as restore_error:
                    results[mode] = result  # tainted by the failed restore; active_optimization reports it
                    err.add_note(f"restoring the plan after that failure ALSO failed: {restore_error}")
                    raise
                self._return_to_lifecycle_state(previous, mode, err)
                raise
        results[mode] = result

        def forget(original: object) -> None:
            if results.get(mode) is result:
                del results[mode]
            self._set_optimization_runtime(mode, original)

        result.add_restore_callback(forget)
        return result

    def _return_to_lifecycle_state(
        self, previous: OptimizationMode | Literal["unloaded"] | None, mode: OptimizationMode, error: BaseException
    ) -> None:
        """After a failed plan, switch the wrapper back to the state it had before ``apply_optimization_plan``."""
        if previous is None or previous is mode:
            return
        try:
            if previous == UNLOADED:
                self._release_optimization_runtime()
            else:
                self._optimization_runtime(OptimizationMode(previous))
        except Exception as switch_error:
            error.add_note(
                f"switching the wrapper back to {str(previous)!r} after the failure ALSO failed: "
                f"{type(switch_error).__name__}: {switch_error}; call unload() or load() yourself"
            )

    def restore_optimization_plan(self, mode: OptimizationMode | str = OptimizationMode.INFERENCE) -> None:
        """Undo the plan active in ``mode`` and reinstall the original runtime.

        Raises:
            OptimizationLifecycleError: if no plan is active in ``mode``.
            OptimizationRestoreError: if the plan is irreversible or tainted, or a restore fails
                (the runtime is then tainted); the message says how to recover.
        """
        mode = OptimizationMode.parse(mode)
        result = self.active_optimization(mode)
        if result is None:
            raise OptimizationLifecycleError(
                f"no optimization plan is active in {mode.value!r} mode; nothing to restore"
            )
        result.restore()


__all__ = ["UNLOADED", "OptimizationHost"]
