"""The plan manager: validate a whole plan, then apply it in order, or roll it back.

``OptimizationPassManager().apply(runtime, ("eval-mode", "int8-dynamic"), context)``:

1. resolves names through a registry (names and pass instances may be mixed);
2. refuses a plan that names a pass twice (by name or by ``pass_id@version``), and a plan in
   which an irreversible pass is followed by another pass: irreversible passes may only come
   last, because a later failure could not be rolled back past them;
3. snapshots every pass's declaration (id, kind, version, configuration, capabilities);
4. validates every pass against the runtime, the context and the architecture's verified
   facts -- nothing has changed yet, so any error here leaves the runtime untouched. A pass the
   architecture declines (feature ``<kind>-<mode>-unsafe``) becomes ``not-applicable`` with that
   reason, or an error when the pass is configured with ``requirement="required"``;
5. applies the passes in order, checking each result and its strict-JSON metadata; before each
   pass after the first, its capabilities are checked again against the device and dtype the
   runtime has *now* (a ``dtype`` pass makes a later float32-only pass impossible);
6. if a pass fails, restores the earlier passes in reverse order and raises
   :class:`~voicehub.optimization.errors.OptimizationApplicationError`. If a restore itself
   fails, the error carries a *tainted* :class:`~voicehub.optimization.passes.OptimizationResult`
   (``error.result``): the runtime is partly changed and must be rebuilt.

An exception that is not a VoiceHub error, raised by a pass's own ``validate()`` or
``manifest_configuration()``, becomes an
:class:`~voicehub.optimization.errors.OptimizationValidationError` naming the pass (nothing has
changed at that point).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from voicehub.core import strict_json
from voicehub.core.errors import StrictJSONError, VoiceHubError
from voicehub.optimization.capabilities import KNOWN_DTYPES, OptimizationContext, OptimizationMode, parse_mode
from voicehub.optimization.errors import (
    DEFAULT_RECOVERY,
    OptimizationApplicationError,
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationValidationError,
)
from voicehub.optimization.execution import refuse_tainted_calls
from voicehub.optimization.passes import (
    FORBIDDEN_OUTCOMES,
    AppliedPass,
    OptimizationPass,
    OptimizationResult,
    PassResult,
    normalize_outcome,
    restore_pass,
    speed_claims,
)
from voicehub.optimization.registry import OPTIMIZATION_PASSES, OptimizationPassRegistry

_T = TypeVar("_T")

PlanItem = str | OptimizationPass
"""One plan entry: a registry name or a configured pass instance."""
Plan = PlanItem | Sequence[PlanItem]
"""A plan: one entry or an ordered sequence of entries."""


def _plan_items(plan: Plan) -> tuple[PlanItem, ...]:
    if isinstance(plan, (str, OptimizationPass)):
        return (plan,)
    if not isinstance(plan, Sequence):
        raise OptimizationConfigurationError(
            f"an optimization plan must be a pass name, a pass instance or a sequence of them; got "
            f"{type(plan).__name__}"
        )
    items = tuple(plan)
    if not items:
        raise OptimizationConfigurationError("the optimization plan is empty; name at least one pass")
    for item in items:
        if not isinstance(item, (str, OptimizationPass)):
            raise OptimizationConfigurationError(
                f"optimization plan entries must be pass names or OptimizationPass instances; got {item!r}"
            )
    return items


def infer_context(runtime: object, mode: OptimizationMode | str = OptimizationMode.INFERENCE) -> OptimizationContext:
    """Describe a runtime: its device and floating dtype, read from its first parameter or buffer.

    A runtime that is not a ``torch.nn.Module`` gets ``device=None`` and ``dtype=None``: device-
    and dtype-bound passes then report not-applicable; a module without floating tensors gets
    ``dtype=None``. A floating dtype other than float32/float16/bfloat16 (``float64``) is reported
    as it is -- also when only some tensors have it -- so every pass that declares dtypes refuses
    the runtime before any change. torch is not imported by this function; a torch module implies
    torch is already loaded.

    Args:
        runtime: the object the plan will be applied to.
        mode: the optimization mode.
    """
    mode = parse_mode(mode)
    torch: Any = sys.modules.get("torch")
    if torch is None or not isinstance(runtime, torch.nn.Module):
        return OptimizationContext(mode=mode, device=None, dtype=None)
    device: str | None = None
    dtype: str | None = None
    for tensor in (*runtime.parameters(), *runtime.buffers()):
        if device is None:
            device = str(tensor.device)
        if not tensor.is_floating_point():
            continue
        name = str(tensor.dtype).removeprefix("torch.")
        if dtype is None:
            dtype = name
        if name not in KNOWN_DTYPES:  # one float64 tensor is enough for dtype-bound passes to refuse
            dtype = name
            break
    if device == "cuda":
        device = "cuda:0"
    return OptimizationContext(mode=mode, device=device or "cpu", dtype=dtype)


class OptimizationPassManager:
    """Validates and applies optimization plans transactionally.

    Args:
        registry: where pass names are looked up (default: the global registry).
    """

    def __init__(self, registry: OptimizationPassRegistry | None = None) -> None:
        self.registry = OPTIMIZATION_PASSES if registry is None else registry

    def resolve(self, plan: Plan) -> tuple[tuple[str, OptimizationPass], ...]:
        """Turn a plan into ``(name, pass)`` pairs and refuse duplicates.

        Raises:
            OptimizationConfigurationError: for an empty or malformed plan, a pass named twice, or
                an irreversible pass that is not the last one.
            UnknownPassError: for an unregistered name, listing the registered ones.
        """
        resolved: list[tuple[str, OptimizationPass]] = []
        for item in _plan_items(plan):
            if isinstance(item, str):
                name = item.strip().lower()
                instance = self.registry.create(name)
            else:
                type(item).validate_declaration()
                name, instance = item.pass_id, item
            resolved.append((name, instance))
        seen_names: set[str] = set()
        seen_ids: set[str] = set()
        for name, instance in resolved:
            if name in seen_names or instance.qualified_id in seen_ids:
                raise OptimizationConfigurationError(
                    f"the optimization plan names pass {name!r} ({instance.qualified_id}) more than once; "
                    f"plan: {[n for n, _ in resolved]}"
                )
            seen_names.add(name)
            seen_ids.add(instance.qualified_id)
        for index, (name, instance) in enumerate(resolved[:-1]):
            if not instance.capabilities.reversible:
                later = [n for n, _ in resolved[index + 1 :]]
                raise OptimizationConfigurationError(
                    f"the optimization plan puts the irreversible pass {name!r} before {later}; irreversible passes "
                    "may only come last in a plan (if a later pass failed, the change could not be rolled back and "
                    f"the runtime would be left corrupted). Nothing was changed: move {name!r} to the end of the plan"
                )
        return tuple(resolved)

    def validate(
        self,
        model: object,
        plan: Plan,
        context: OptimizationContext | None = None,
        *,
        architecture: object | None = None,
    ) -> tuple[tuple[str, OptimizationPass], ...]:
        """Validate a complete plan without changing anything.

        Returns:
            The resolved ``(name, pass)`` pairs.

        Raises:
            OptimizationCompatibilityError: when a pass does not fit the context or architecture.
            OptimizationProtocolError: when the runtime exposes a pass's protocol in a malformed way.
            OptimizationConfigurationError: for a malformed plan.
        """
        resolved = self.resolve(plan)
        ctx = self._context(model, context, architecture)
        self._validate(model, resolved, ctx)
        return resolved

    def apply(
        self,
        model: object,
        plan: Plan,
        context: OptimizationContext | None = None,
        *,
        architecture: object | None = None,
    ) -> OptimizationResult:
        """Validate the whole plan, then apply it in order; all of it or none of it.

        Args:
            model: the runtime, usually a ``torch.nn.Module``.
            plan: pass names and/or pass instances, applied in order.
            context: the runtime description; inferred from ``model`` (inference mode) if omitted.
            architecture: an architecture spec whose verified facts are added to the context.

        Returns:
            The result holding the optimized runtime, the manifest and ``restore()``.

        Raises:
            OptimizationCompatibilityError, OptimizationProtocolError,
            OptimizationConfigurationError: before anything changed.
            OptimizationValidationError: a pass's own check raised a non-VoiceHub exception.
            OptimizationApplicationError: a pass failed during application; the earlier passes
                were rolled back (see its ``rollback_errors``; when they are not empty,
                ``error.result`` is the tainted plan).
        """
        return self.apply_resolved(model, self.resolve(plan), context, architecture=architecture)

    def apply_resolved(
        self,
        model: object,
        resolved: Sequence[tuple[str, OptimizationPass]],
        context: OptimizationContext | None = None,
        *,
        architecture: object | None = None,
        recovery: str = DEFAULT_RECOVERY,
    ) -> OptimizationResult:
        """Like :meth:`apply`, for a plan already turned into ``(name, pass)`` pairs by :meth:`resolve`.

        Args:
            recovery: the sentence a tainted runtime's errors use to say how to get a usable
                runtime back (task wrappers name their own way).
        """
        ctx = self._context(model, context, architecture)
        declarations = [_checked(i, "manifest_configuration()", i.declaration) for _, i in resolved]
        declined = self._validate(model, resolved, ctx)

        applied: list[AppliedPass] = []
        current = model
        for (name, instance), declaration in zip(resolved, declarations, strict=True):
            if name in declined:
                declined_result = instance.not_applicable_result(current, reason=declined[name])
                applied.append(
                    AppliedPass(name=name, optimization_pass=instance, result=declined_result, declaration=declaration)
                )
                continue
            returned: object = None
            try:
                stage = _staged_context(ctx, current) if applied else ctx
                reasons = instance.capabilities.incompatibilities(stage)
                if reasons:  # an earlier pass of this plan moved the runtime outside this pass's capabilities
                    raise OptimizationCompatibilityError(
                        instance.pass_id,
                        (*reasons, f"after {[a.name for a in applied]}; reorder the plan or drop one of the passes"),
                    )
                returned = instance.apply(current, stage)
                result = _check_result(instance, returned)
            except Exception as err:
                undo, last = list(applied), current
                if isinstance(returned, PassResult):  # apply() finished but its result was refused: undo it too
                    undo.append(
                        AppliedPass(name=name, optimization_pass=instance, result=returned, declaration=declaration)
                    )
                    last = returned.model
                rollback_errors = _rollback(undo, last, ctx)
                tainted: OptimizationResult | None = None
                if rollback_errors:
                    failed = "; ".join(f"{pid}: {msg}" for pid, msg in rollback_errors)
                    tainted = OptimizationResult(
                        model=model,
                        original_model=model,
                        context=ctx,
                        applied=tuple(undo),
                        tainted=f"pass {instance.pass_id!r} failed ({type(err).__name__}: {err}) and rolling back "
                        f"failed ({failed})",
                        recovery=recovery,
                    )
                error = OptimizationApplicationError(
                    instance.pass_id, err, rollback_errors, result=tainted, recovery=recovery
                )
                if tainted is not None:
                    for runtime in {id(model): model, id(last): last}.values():
                        refuse_tainted_calls(runtime, f"the runtime is TAINTED and must not be used: {error}")
                raise error from err
            applied.append(AppliedPass(name=name, optimization_pass=instance, result=result, declaration=declaration))
            current = result.model
        return OptimizationResult(model=current, original_model=model, context=ctx, applied=tuple(applied))

    # ---------------------------------------------------------------- internals
    @staticmethod
    def _context(
        model: object, context: OptimizationContext | None, architecture: object | None
    ) -> OptimizationContext:
        if context is None:
            context = infer_context(model)
        elif not isinstance(context, OptimizationContext):
            raise OptimizationConfigurationError(
                f"context must be an OptimizationContext, got {type(context).__name__}"
            )
        return context.with_architecture(architecture)

    @staticmethod
    def _validate(
        model: object, resolved: Sequence[tuple[str, OptimizationPass]], ctx: OptimizationContext
    ) -> dict[str, str]:
        """Validate every pass; return ``{name: reason}`` for passes the architecture declines."""
        declined: dict[str, str] = {}
        architecture_reasons = ctx.incompatibilities_with_architecture()
        if architecture_reasons:
            raise OptimizationCompatibilityError(
                ", ".join(name for name, _ in resolved),
                (*architecture_reasons, "move or cast the model to a verified device and dtype before optimizing"),
            )
        for name, instance in resolved:
            unsafe = f"{instance.compatibility_kind}-{ctx.mode.value}-unsafe"
            if unsafe in ctx.architecture_features:
                reason = (
                    f"architecture {ctx.architecture!r} declares the feature {unsafe!r}: the pass was measured to "
                    f"break this model's outputs in {ctx.mode.value} mode; the runtime is unchanged"
                )
                if instance.requirement == "required":
                    raise OptimizationCompatibilityError(instance.pass_id, (reason,))
                declined[name] = reason
                continue
            if instance.requires_architecture_support:
                verified = ctx.architecture_passes or ()
                if instance.compatibility_kind not in verified:
                    where = repr(ctx.architecture) if ctx.architecture else "the runtime (no architecture is known)"
                    raise OptimizationCompatibilityError(
                        instance.pass_id,
                        (
                            f"the pass requires audited architecture support, and {where} does not list the kind "
                            f"{instance.compatibility_kind!r} among its verified optimization passes {list(verified)}",
                        ),
                    )
            _checked(instance, "validate()", functools.partial(instance.validate, model, ctx))
        return declined


def _checked(instance: OptimizationPass, stage: str, call: Callable[[], _T]) -> _T:
    """Run a pass's own check; a non-VoiceHub exception becomes an error naming the pass."""
    try:
        return call()
    except VoiceHubError:
        raise
    except Exception as err:
        raise OptimizationValidationError(instance.pass_id, stage, err) from err


def _staged_context(ctx: OptimizationContext, runtime: object) -> OptimizationContext:
    """``ctx`` with the device and dtype the runtime has now, after earlier passes of the plan."""
    now = infer_context(runtime, ctx.mode)
    if now.device is None or (now.device, now.dtype) == (ctx.device, ctx.dtype):
        return ctx
    return dataclasses.replace(ctx, device=now.device, dtype=now.dtype)


def _check_result(instance: OptimizationPass, result: object) -> PassResult:
    if not isinstance(result, PassResult):
        raise OptimizationConfigurationError(
            f"{type(instance).__name__}.apply() returned {type(result).__name__}, expected a PassResult"
        )
    outcome = result.metadata.get("outcome")
    if not isinstance(outcome, str) or not outcome.strip():
        raise OptimizationConfigurationError(
            f"{instance.pass_id}: PassResult.metadata must contain a non-empty string 'outcome'"
        )
    if normalize_outcome(outcome) in FORBIDDEN_OUTCOMES:
        raise OptimizationConfigurationError(
            f"{instance.pass_id}: outcome {outcome!r} is not allowed; report 'not-applicable' with a reason for an "
            "unchanged runtime, or a factual outcome such as 'configured'"
        )
    claims = speed_claims(dict(result.metadata))
    if claims:
        raise OptimizationConfigurationError(
            f"{instance.pass_id}: PassResult.metadata claims a speed-up ({'; '.join(claims)}); a manifest records "
            "what a pass did, never its effect on speed. Report a factual outcome such as 'configured' and measure "
            "speed with benchmarks/optimization_passes.py"
        )
    if result.is_not_applicable and result.model is not result.state.get("model"):
        raise OptimizationConfigurationError(f"{instance.pass_id}: a not-applicable result must keep the runtime")
    try:
        strict_json.loads(strict_json.dumps(dict(result.metadata)))
    except (StrictJSONError, TypeError) as err:
        raise OptimizationConfigurationError(
            f"{instance.pass_id}: PassResult.metadata is not strict JSON: {err}"
        ) from err
    return result


def _rollback(applied: Sequence[AppliedPass], model: object, ctx: OptimizationContext) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    current = model
    for entry in reversed(applied):
        if not entry.result.is_not_applicable and not entry.optimization_pass.capabilities.reversible:
            errors.append((entry.optimization_pass.pass_id, "the pass is irreversible"))
            continue
        try:
            current = restore_pass(entry, current, ctx)
        except Exception as err:
            errors.append((entry.optimization_pass.pass_id, f"{type(err).__name__}: {err}"))
    return errors


def apply_optimization_plan(
    model: object,
    plan: Plan,
    *,
    mode: OptimizationMode | str | None = None,
    context: OptimizationContext | None = None,
    registry: OptimizationPassRegistry | None = None,
    architecture: object | None = None,
) -> OptimizationResult:
    """Apply a plan to a bare runtime (e.g. a ``torch.nn.Module``), without a task wrapper.

    Args:
        model: the runtime.
        plan: pass names and/or instances, applied in order.
        mode: ``"inference"`` (default) or ``"training"``; when ``context`` is given too, they must agree.
        context: an explicit runtime description; inferred from ``model`` when omitted.
        registry: where names are looked up (default: the global registry).
        architecture: an architecture spec whose verified facts join the context.

    Returns:
        The result; use ``result.model`` from now on and ``result.restore()`` to undo.

    Raises:
        OptimizationConfigurationError: if ``context.mode`` disagrees with ``mode``, or the plan
            is malformed; plus everything :meth:`OptimizationPassManager.apply` raises.
    """
    if context is None:
        context = infer_context(model, OptimizationMode.INFERENCE if mode is None else mode)
    elif mode is not None and context.mode is not parse_mode(mode):
        raise OptimizationConfigurationError(
            f"mode={mode!r} disagrees with context.mode={context.mode.value!r}; pass one of them"
        )
    return OptimizationPassManager(registry).apply(model, plan, context, architecture=architecture)


__all__ = ["OptimizationPassManager", "Plan", "PlanItem", "apply_optimization_plan", "infer_context"]
