"""``OptimizationHost``: the transactional optimization lifecycle of one runtime host.

A *runtime host* is anything that implements the typed protocol
:class:`voicehub.core.runtime.RuntimeHost` (``state``, ``runtime``, ``load()``,
``load_for_training()``, ``unload()``, ``replace_module()``): VoiceHub's task wrappers, or a
trainer's model. ``OptimizationHost(host)`` keeps that host's active plans and drives it through
the protocol only; it reads no attribute of the host beyond it. The task wrappers hold one and
expose it as ``apply_optimization_plan``, ``restore_optimization_plan``, ``active_optimization``
and ``available_optimization_passes``.

At most one plan is active per mode, and only one mode at a time: a reversible plan must be
restored before the runtime is used in the other mode, so inference-only state never leaks into
a training graph (and the reverse). Hosts call :meth:`OptimizationHost.check_mode_change`
before switching their runtime between inference and training.

A plan that fails validation or application leaves the host in the lifecycle state it had:
when the runtime had to be loaded or switched to the plan's mode first, it is switched back. A
plan whose rollback (or restore) fails leaves a *tainted* runtime: :meth:`active` reports it
(``result.tainted``), every further plan and mode change is refused, and the errors say how to
recover. A plan that is irreversible or tainted can only be discarded with the runtime it
changed: :meth:`requires_reload` tells a host's ``unload()`` that dropping the runtime is the way
back, and the plan is forgotten once the host no longer holds that runtime.
"""

from __future__ import annotations

from voicehub.core.runtime import RuntimeHost, RuntimeState
from voicehub.optimization.automatic import AUTOMATIC_PLAN, select_verified_passes
from voicehub.optimization.capabilities import ArchitectureSupport, OptimizationContext, parse_mode
from voicehub.optimization.errors import (
    OptimizationApplicationError,
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationLifecycleError,
)
from voicehub.optimization.manager import OptimizationPassManager, Plan, infer_context
from voicehub.optimization.passes import OptimizationResult
from voicehub.optimization.registry import OPTIMIZATION_PASSES, OptimizationPassRegistry


class OptimizationHost:
    """The active optimization plans of one :class:`~voicehub.core.runtime.RuntimeHost`.

    Args:
        host: the runtime host whose bundle's ``module`` the plans change.
        recovery: the sentence telling users how to get a usable runtime back after an
            irreversible or tainted plan (default: discard the host and build a new one).
    """

    def __init__(self, host: RuntimeHost, *, recovery: str | None = None) -> None:
        self._host = host
        name = type(host).__name__
        self.recovery = recovery or f"discard this {name} and build a new one (its runtime cannot be trusted any more)"
        self._results: dict[RuntimeState, OptimizationResult] = {}

    # ---------------------------------------------------------------- reading
    @staticmethod
    def available_passes() -> tuple[str, ...]:
        """The names of every registered pass (global registry), sorted. Imports no pass.

        Any of them may be requested: a pass whose protocol the runtime lacks reports
        ``not-applicable`` with a reason instead of changing the model.
        """
        return OPTIMIZATION_PASSES.list()

    def _loaded_module(self) -> object | None:
        runtime = self._host.runtime
        return runtime.module if runtime is not None else None

    def active(self, mode: RuntimeState | str = RuntimeState.INFERENCE) -> OptimizationResult | None:
        """The plan currently applied in ``mode`` (possibly tainted: see ``result.tainted``), or ``None``.

        An irreversible or tainted plan is forgotten once the host no longer holds the module it
        changed (the runtime was unloaded or rebuilt).

        Raises:
            OptimizationConfigurationError: for a mode other than inference or training.
        """
        state = parse_mode(mode)
        result = self._results.get(state)
        if result is not None and result.requires_reload:
            current = self._loaded_module()
            if current is not result.model and current is not result.original_model:
                del self._results[state]
                return None
        return result

    def requires_reload(self, mode: RuntimeState | str = RuntimeState.INFERENCE) -> bool:
        """True when the plan active in ``mode`` is irreversible or tainted.

        Such a plan cannot be restored; the only way back to the original runtime is dropping
        this one (``unload()`` then ``load()``, or a new host), so a host's ``unload()`` may
        discard it. False when no plan is active or the plan can be restored.
        """
        result = self.active(mode)
        return result is not None and result.requires_reload

    def blocking_unload(self) -> RuntimeState | None:
        """The mode of a reversible plan that must be restored before the runtime is dropped, if any."""
        for state in RuntimeState.loaded():
            if self.active(state) is not None and not self.requires_reload(state):
                return state
        return None

    def _blocked_message(self, mode: RuntimeState, result: OptimizationResult) -> str:
        if result.tainted is not None:
            return (
                f"the runtime is TAINTED by a failed optimization plan in {mode.value!r} mode ({result.tainted}); "
                f"it cannot be restored or optimized again. To recover, {self.recovery}"
            )
        if not result.reversible:
            return (
                f"an irreversible optimization plan {list(result.outcomes())} is active in {mode.value!r} mode; it "
                f"cannot be restored. To get the original runtime back, {self.recovery}"
            )
        return (
            f"an optimization plan {list(result.outcomes())} is already active in {mode.value!r} mode; call "
            f"restore_optimization_plan(mode={mode.value!r}) first"
        )

    def check_mode_change(self, target: RuntimeState | str) -> None:
        """Refuse to move the runtime to ``target`` while another mode's plan is active (or it is tainted).

        Raises:
            OptimizationLifecycleError: (a ``LifecycleError``) naming the active plan and the fix.
        """
        state = parse_mode(target)
        for mode in RuntimeState.loaded():
            result = self.active(mode)
            if result is None or (mode is state and result.tainted is None):
                continue
            raise OptimizationLifecycleError(
                f"cannot switch to {state.value!r} mode: {self._blocked_message(mode, result)}"
            )

    # ---------------------------------------------------------------- changing
    def _enter(self, mode: RuntimeState) -> object:
        """Bring the host into ``mode`` through the protocol and return its graph module."""
        if mode is RuntimeState.TRAINING:
            self._host.load_for_training()
        else:
            self._host.load()
        module = self._loaded_module()
        if module is None or self._host.state is not mode:
            raise OptimizationLifecycleError(
                f"{type(self._host).__name__} reported state {self._host.state.value!r} without a runtime after "
                f"loading for {mode.value!r}; its RuntimeHost implementation is broken"
            )
        return module

    def apply(
        self,
        plan: Plan,
        *,
        mode: RuntimeState | str = RuntimeState.INFERENCE,
        context: OptimizationContext | None = None,
        registry: OptimizationPassRegistry | None = None,
        architecture: ArchitectureSupport | None = None,
    ) -> OptimizationResult:
        """Load the host for ``mode`` and apply ``plan`` to its graph module, transactionally.

        Everything that can be checked without the runtime (the plan, the modes, an explicit
        context) is checked before the runtime is loaded or switched to ``mode``; if the plan
        then fails, the host is switched back to the lifecycle state it had.

        Args:
            plan: a pass name (``"eval-mode"``), a pass instance, or an ordered sequence of them;
                or ``"auto"``: once the runtime is loaded, exactly the passes ``architecture``
                records as verified that fit its device and dtype
                (:func:`~voicehub.optimization.automatic.select_verified_passes`).
            mode: ``"inference"`` or ``"training"``.
            context: an explicit runtime description (its mode must equal ``mode``); by default it
                is inferred from the module's first parameter and the architecture's facts.
            registry: where names are looked up (default: the global registry).
            architecture: the verified facts of the module's architecture, if known.

        Returns:
            The result (manifest, outcomes, ``restore()``); ``result.restore()`` and
            :meth:`restore` are equivalent.

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
        state = parse_mode(mode)
        active = self.active(state)
        if active is not None:
            raise OptimizationLifecycleError(f"cannot apply another plan: {self._blocked_message(state, active)}")
        self.check_mode_change(state)
        if context is not None and context.mode is not state:
            raise OptimizationConfigurationError(
                f"context.mode={context.mode.value!r} disagrees with mode={state.value!r}"
            )
        manager = OptimizationPassManager(registry)
        automatic = isinstance(plan, str) and plan.strip().lower() == AUTOMATIC_PLAN
        if automatic and architecture is None:
            raise OptimizationConfigurationError(
                f"plan {AUTOMATIC_PLAN!r} selects the passes an architecture records as verified, but "
                f"{type(self._host).__name__} has no architecture metadata; name the passes instead (available: "
                f"{list(manager.registry.list())})"
            )
        resolved = () if automatic else manager.resolve(plan)
        for name, instance in resolved:  # refuse before the runtime is loaded or switched for `mode`
            if state not in instance.capabilities.modes:
                supported = ", ".join(m.value for m in instance.capabilities.modes)
                raise OptimizationCompatibilityError(
                    instance.pass_id,
                    (f"pass {name!r} supports {supported} mode, not {state.value!r}; nothing was loaded or changed",),
                )
            if context is not None:
                reasons = instance.capabilities.incompatibilities(context)
                if reasons:
                    raise OptimizationCompatibilityError(instance.pass_id, (*reasons, "nothing was loaded or changed"))
        previous = self._host.state
        try:
            module = self._enter(state)
            ctx = infer_context(module, state) if context is None else context
            if automatic and architecture is not None:
                resolved = manager.resolve(self._automatic_plan(architecture, ctx, manager.registry))
            result = manager.apply_resolved(module, resolved, ctx, architecture=architecture, recovery=self.recovery)
        except OptimizationApplicationError as err:
            if isinstance(err.result, OptimizationResult):  # rollback failed: the runtime stays, tainted
                self._results[state] = err.result
            else:
                self._return_to(previous, state, err)
            raise
        except BaseException as err:
            self._return_to(previous, state, err)
            raise
        result.set_recovery(self.recovery)
        if result.model is not module:
            try:
                self._host.replace_module(result.model, state=state)
            except BaseException as err:
                try:
                    result.restore()
                except BaseException as restore_error:
                    self._results[state] = result  # tainted by the failed restore; active() reports it
                    err.add_note(f"restoring the plan after that failure ALSO failed: {restore_error}")
                    raise
                self._return_to(previous, state, err)
                raise
        self._results[state] = result

        def forget(original: object) -> None:
            if self._results.get(state) is result:
                del self._results[state]
            self._host.replace_module(original, state=state)

        result.add_restore_callback(forget)
        return result

    @staticmethod
    def _automatic_plan(
        architecture: ArchitectureSupport, context: OptimizationContext, registry: OptimizationPassRegistry
    ) -> tuple[str, ...]:
        selection = select_verified_passes(architecture, context, registry=registry)
        if not selection.passes:
            raise OptimizationConfigurationError(
                f"plan {AUTOMATIC_PLAN!r}: architecture {selection.architecture!r} records no optimization pass "
                f"verified for this runtime (mode {context.mode.value!r}, device {context.device!r}, dtype "
                f"{context.dtype!r}); skipped: {selection.describe_skipped()}. Nothing was changed; name passes "
                f"explicitly to try unverified ones"
            )
        return selection.passes

    def _return_to(self, previous: RuntimeState, mode: RuntimeState, error: BaseException) -> None:
        """After a failed plan, switch the host back to the state it had before :meth:`apply`."""
        if previous is mode or self._host.state is previous:
            return
        try:
            if previous is RuntimeState.CREATED:
                self._host.unload()
            elif previous is RuntimeState.TRAINING:
                self._host.load_for_training()
            else:
                self._host.load()
        except Exception as switch_error:
            error.add_note(
                f"switching {type(self._host).__name__} back to {previous.value!r} after the failure ALSO failed: "
                f"{type(switch_error).__name__}: {switch_error}; call unload() then load() yourself (load() alone "
                f"is refused while a plan is active)"
            )

    def restore(self, mode: RuntimeState | str = RuntimeState.INFERENCE) -> None:
        """Undo the plan active in ``mode`` and reinstall the original module.

        Raises:
            OptimizationLifecycleError: if no plan is active in ``mode``.
            OptimizationRestoreError: if the plan is irreversible or tainted, or a restore fails
                (the runtime is then tainted); the message says how to recover.
        """
        state = parse_mode(mode)
        result = self.active(state)
        if result is None:
            raise OptimizationLifecycleError(
                f"no optimization plan is active in {state.value!r} mode; nothing to restore"
            )
        result.restore()


__all__ = ["OptimizationHost"]
