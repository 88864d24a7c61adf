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
"""

from __future__ import annotations

from typing import Any

from voicehub.optimization.capabilities import OptimizationContext, OptimizationMode
from voicehub.optimization.errors import (
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationLifecycleError,
)
from voicehub.optimization.manager import OptimizationPassManager, Plan, infer_context
from voicehub.optimization.passes import OptimizationResult
from voicehub.optimization.registry import OPTIMIZATION_PASSES, OptimizationPassRegistry

_RESULTS_ATTRIBUTE = "_voicehub_optimization_results"


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

    Hosts call :meth:`check_optimization_mode_change` before switching the runtime between
    inference and training.
    """

    # ---------------------------------------------------------------- hooks
    def _optimization_runtime(self, mode: OptimizationMode) -> object:
        raise NotImplementedError(f"{type(self).__name__} must implement _optimization_runtime(mode)")

    def _set_optimization_runtime(self, mode: OptimizationMode, runtime: object) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _set_optimization_runtime(mode, runtime)")

    def _optimization_architecture(self) -> Any:
        return None

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
        """The plan currently applied in ``mode``, or ``None``."""
        return self._optimization_results().get(OptimizationMode.parse(mode))

    def check_optimization_mode_change(self, target_mode: OptimizationMode | str) -> None:
        """Refuse to move the runtime to ``target_mode`` while another mode's plan is active.

        Raises:
            OptimizationLifecycleError: (a ``LifecycleError``) naming the active plan and the fix.
        """
        target = OptimizationMode.parse(target_mode)
        for mode, result in self._optimization_results().items():
            if mode is target:
                continue
            fix = (
                f"call restore_optimization_plan(mode={mode.value!r}) first"
                if result.reversible
                else "the plan is irreversible: reload the model"
            )
            raise OptimizationLifecycleError(
                f"an optimization plan {list(result.outcomes())} is active in {mode.value!r} mode; cannot switch "
                f"to {target.value!r} mode: {fix}"
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
            OptimizationLifecycleError: a plan is already active in this mode, or a plan is
                active in the other mode.
            OptimizationConfigurationError: for a malformed plan or a context of another mode.
            OptimizationCompatibilityError, OptimizationProtocolError: before anything changed.
            OptimizationApplicationError: a pass failed and earlier passes were rolled back.
        """
        mode = OptimizationMode.parse(mode)
        self.check_optimization_mode_change(mode)
        active = self.active_optimization(mode)
        if active is not None:
            raise OptimizationLifecycleError(
                f"an optimization plan {list(active.outcomes())} is already active in {mode.value!r} mode; call "
                f"restore_optimization_plan(mode={mode.value!r}) before applying another"
            )
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
        runtime = self._optimization_runtime(mode)
        ctx = infer_context(runtime, mode) if context is None else context
        result = manager.apply_resolved(runtime, resolved, ctx, architecture=self._optimization_architecture())
        if result.model is not runtime:
            try:
                self._set_optimization_runtime(mode, result.model)
            except BaseException:
                result.restore()
                raise
        results = self._optimization_results()
        results[mode] = result

        def forget(original: object) -> None:
            if results.get(mode) is result:
                del results[mode]
            self._set_optimization_runtime(mode, original)

        result.add_restore_callback(forget)
        return result

    def restore_optimization_plan(self, mode: OptimizationMode | str = OptimizationMode.INFERENCE) -> None:
        """Undo the plan active in ``mode`` and reinstall the original runtime.

        Raises:
            OptimizationLifecycleError: if no plan is active in ``mode``.
            OptimizationRestoreError: if the plan holds an irreversible change (reload the model).
        """
        mode = OptimizationMode.parse(mode)
        result = self.active_optimization(mode)
        if result is None:
            raise OptimizationLifecycleError(
                f"no optimization plan is active in {mode.value!r} mode; nothing to restore"
            )
        result.restore()


__all__ = ["OptimizationHost"]
