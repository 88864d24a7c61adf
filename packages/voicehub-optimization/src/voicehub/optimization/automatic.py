"""Automatic selection: the passes an architecture records as verified, for the loaded device and dtype.

Seed 001: "Architecture ``optimization_passes`` metadata records implementations verified for
automatic selection". :func:`select_verified_passes` reads that metadata (the kinds listed by a
``voicehub.registry.ArchitectureSpec``, through the :class:`~voicehub.optimization.ArchitectureSupport`
protocol) and keeps, in the order the architecture lists them, every kind that

1. is registered under its own name (the built-ins register each pass under its kind), and builds
   a pass of that kind with its registered defaults;
2. fits the runtime: its capabilities accept the mode, device and dtype the runtime is loaded in
   *as the passes selected before it leave it* (:meth:`OptimizationPass.planned_context`: after
   ``dtype`` casts to bfloat16, a float32-only ``int8-dynamic`` no longer fits and is skipped);
3. is not declined by the architecture (a ``<kind>-<mode>-unsafe`` feature).

Irreversible passes go last (the plan manager refuses them anywhere else). Everything skipped is
kept with its reason in :attr:`AutomaticPlan.skipped`. Task wrappers apply the selection with
``model.apply_optimization_plan("auto")``: the runtime is loaded first, then selected for.
"""

from __future__ import annotations

import dataclasses

from voicehub.core.errors import VoiceHubError
from voicehub.optimization.capabilities import ArchitectureSupport, OptimizationContext
from voicehub.optimization.errors import OptimizationConfigurationError
from voicehub.optimization.registry import AUTOMATIC_PLAN, OPTIMIZATION_PASSES, OptimizationPassRegistry


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AutomaticPlan:
    """The result of automatic selection.

    Attributes:
        architecture: the architecture id whose metadata was read.
        context: the runtime the selection was made for (mode, device, dtype).
        passes: registry names to apply, in order.
        skipped: ``(kind, reason)`` for every verified kind that was not selected.
    """

    architecture: str
    context: OptimizationContext
    passes: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]

    def describe_skipped(self) -> str:
        """The skipped kinds and reasons as one sentence (``"none"`` when nothing was skipped)."""
        return "; ".join(f"{kind}: {reason}" for kind, reason in self.skipped) or "none"


def select_verified_passes(
    architecture: ArchitectureSupport,
    context: OptimizationContext,
    *,
    registry: OptimizationPassRegistry | None = None,
) -> AutomaticPlan:
    """Pick exactly the architecture's verified passes that fit the loaded runtime (see the module doc).

    Args:
        architecture: the architecture's verified facts (a ``voicehub.registry.ArchitectureSpec``).
        context: the loaded runtime's mode, device and dtype (``infer_context(module, mode)``).
        registry: where kinds are looked up (default: the global registry).

    Returns:
        The selection; ``passes`` may be empty (then every verified kind is in ``skipped``).

    Raises:
        OptimizationConfigurationError: if ``architecture.optimization_passes`` is not a tuple.
    """
    name = architecture.architecture_id
    kinds = architecture.optimization_passes
    if isinstance(kinds, str) or not isinstance(kinds, tuple):
        raise OptimizationConfigurationError(
            f"architecture {name!r}: optimization_passes must be a tuple of pass kinds, got {kinds!r}"
        )
    source = OPTIMIZATION_PASSES if registry is None else registry
    stage = context.with_architecture(architecture)
    selected: list[tuple[str, bool]] = []
    skipped: list[tuple[str, str]] = []
    for kind in kinds:
        if kind not in source:
            skipped.append((kind, f"no optimization pass is registered under {kind!r}"))
            continue
        try:
            instance = source.create(kind)
        except VoiceHubError as err:
            skipped.append((kind, f"the registered pass cannot be built: {err}"))
            continue
        if instance.compatibility_kind != kind:
            skipped.append(
                (kind, f"the pass registered as {kind!r} is of kind {instance.compatibility_kind!r}, not {kind!r}")
            )
            continue
        unsafe = f"{kind}-{stage.mode.value}-unsafe"
        if unsafe in stage.architecture_features:
            skipped.append((kind, f"the architecture declares {unsafe!r}"))
            continue
        reasons = instance.capabilities.incompatibilities(stage)
        if reasons:
            moved = (stage.device, stage.dtype) != (context.device, context.dtype)
            after = f" (as {[n for n, _ in selected]} leave the runtime)" if moved else ""
            skipped.append((kind, "; ".join(reasons) + after))
            continue
        selected.append((kind, instance.capabilities.reversible))
        stage = instance.planned_context(stage)
    ordered = [n for n, reversible in selected if reversible] + [n for n, reversible in selected if not reversible]
    return AutomaticPlan(architecture=name, context=context, passes=tuple(ordered), skipped=tuple(skipped))


__all__ = ["AUTOMATIC_PLAN", "AutomaticPlan", "select_verified_passes"]
