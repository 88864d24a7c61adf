"""The pass contract: :class:`OptimizationPass`, :class:`PassResult` and :class:`OptimizationResult`.

A pass declares who it is (``pass_id``, ``pass_version``), what it supports
(:class:`~voicehub.optimization.capabilities.OptimizationCapabilities`) and every option that
affects the graph (:meth:`OptimizationPass.manifest_configuration`). The plan manager calls
:meth:`~OptimizationPass.validate` on every pass before it calls the first
:meth:`~OptimizationPass.apply`; ``validate`` must not change anything. A pass whose protocol is
absent returns :meth:`~OptimizationPass.not_applicable_result`: an unchanged runtime and a reason.
"""

from __future__ import annotations

import abc
import re
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

from voicehub.core import strict_json
from voicehub.core.errors import StrictJSONError
from voicehub.core.strict_json import JSONValue
from voicehub.optimization.capabilities import OptimizationCapabilities, OptimizationContext
from voicehub.optimization.errors import (
    DEFAULT_RECOVERY,
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationRestoreError,
)
from voicehub.optimization.execution import refuse_tainted_calls

OUTCOME_CONFIGURED: Final = "configured"
"""The pass changed the runtime as configured."""
OUTCOME_NOT_APPLICABLE: Final = "not-applicable"
"""The runtime lacks the pass's protocol; it is unchanged and the manifest says why."""
NOT_APPLICABLE_STATE_KIND: Final = "not-applicable"
"""``PassResult.state["kind"]`` of a not-applicable result."""
FORBIDDEN_OUTCOMES: Final = frozenset({"skipped", "accelerated", "optimized"})
"""Outcomes a pass may not report (compared after :func:`normalize_outcome`): a skip must be
``not-applicable`` with a reason, and speed is only ever claimed by a benchmark, never by a
manifest (see also :func:`speed_claims`)."""

_SPEED_CLAIM: Final = re.compile(
    r"accelerat\w*|\bfaster\b|\bquicker\b|\bspeed[\s-]*ups?\b|\bboost\w*|\bsped\s+up\b", re.IGNORECASE
)


def normalize_outcome(outcome: str) -> str:
    """``outcome`` lowercased, with surrounding whitespace removed and inner runs collapsed to one space."""
    return " ".join(outcome.split()).lower()


def speed_claims(value: object, where: str = "metadata") -> list[str]:
    """Every speed claim in a strict-JSON value: keys and strings that use speed-up vocabulary.

    The vocabulary, matched case-insensitively with ``_`` read as a space: ``accelerat*``,
    ``faster`` (so ``"2.4x faster"``), ``quicker``, ``speedup``/``speed-up``/``speed up``,
    ``sped up`` and ``boost*``. A manifest records what a pass did; speed is measured only by
    ``benchmarks/optimization_passes.py``, so any such word is refused (there is no exception
    for cited measurements: put the measurement in the benchmark table instead).

    Args:
        value: the metadata (nested mappings, lists and scalars).
        where: the path of ``value``, used in the returned descriptions.

    Returns:
        One ``"<path>: <text>"`` description per offending key or string; empty when there is none.
    """
    found: list[str] = []

    def claims(text: str) -> bool:
        return _SPEED_CLAIM.search(text.replace("_", " ")) is not None

    if isinstance(value, str):
        if claims(value):
            found.append(f"{where}: {value!r}")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if claims(str(key)):
                found.append(f"{where} key {str(key)!r}")
            found.extend(speed_claims(item, f"{where}[{str(key)!r}]"))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found.extend(speed_claims(item, f"{where}[{index}]"))
    return found


ModelRestorer = Callable[[object], None]


def _freeze(value: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise OptimizationConfigurationError(f"{where} must be a mapping, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise OptimizationConfigurationError(f"{where} keys must be strings, got {key!r}")
    return types.MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class PassResult:
    """What one pass did.

    Attributes:
        model: the runtime after the pass (the same object when it was changed in place).
        state: whatever the pass needs to undo itself; handed back to ``restore``. Frozen.
        metadata: strict-JSON facts for the manifest; must contain ``"outcome"`` (a string such
            as ``configured``, ``not-applicable``, ``compiled``, ``eager-fallback``). Frozen.
    """

    model: object
    state: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, JSONValue] = field(default_factory=lambda: {"outcome": OUTCOME_CONFIGURED})

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", _freeze(self.state, "PassResult.state"))
        object.__setattr__(self, "metadata", _freeze(self.metadata, "PassResult.metadata"))

    @property
    def outcome(self) -> str:
        """The ``metadata["outcome"]`` string (``""`` when it is missing)."""
        value = self.metadata.get("outcome")
        return value if isinstance(value, str) else ""

    @property
    def is_not_applicable(self) -> bool:
        """True when the pass left the runtime unchanged because its protocol was absent."""
        return self.state.get("kind") == NOT_APPLICABLE_STATE_KIND


class OptimizationPass(abc.ABC):
    """Base class of every optimization pass (built-in or third-party).

    Subclasses set the class attributes and implement :meth:`manifest_configuration` and
    :meth:`apply`; reversible passes also implement :meth:`restore`. Instances are created by
    the registry's factories, one per plan, so a pass may keep configuration on ``self``.

    Attributes:
        pass_id: stable identifier written to manifests (``"voicehub.eval-mode"``).
        pass_version: bump it whenever the transformation changes (manifests record it).
        capabilities: the execution constraints the pass supports.
        requires_architecture_support: set only when the pass relies on a manually audited
            architecture contract that runtime inspection cannot prove; the architecture must
            then list :attr:`compatibility_kind` among its verified optimization passes.
        optimization_kind: the compatibility category (defaults to ``pass_id``); architectures
            declare verified kinds and ``<kind>-<mode>-unsafe`` features with it.
        requirement: ``"auto"``: when the runtime or architecture rules the pass out, the pass
            reports not-applicable (or falls back) with the reason; ``"required"``: that is an
            error before any change. Configurable passes set it per instance.
    """

    pass_id: ClassVar[str]
    pass_version: ClassVar[str]
    capabilities: ClassVar[OptimizationCapabilities]
    requires_architecture_support: ClassVar[bool] = False
    optimization_kind: ClassVar[str | None] = None
    requirement: Literal["auto", "required"] = "auto"

    # ---------------------------------------------------------------- identity
    @property
    def qualified_id(self) -> str:
        """``"<pass_id>@<pass_version>"``; a plan may not contain the same one twice."""
        return f"{self.pass_id}@{self.pass_version}"

    @property
    def compatibility_kind(self) -> str:
        """The kind architectures refer to (``optimization_kind`` or else ``pass_id``)."""
        return self.optimization_kind or self.pass_id

    @classmethod
    def validate_declaration(cls) -> None:
        """Check the class attributes, before the pass is used.

        Raises:
            OptimizationConfigurationError: on a missing or empty ``pass_id``/``pass_version``,
                capabilities of the wrong type, ``reversible`` without a ``restore`` override, or
                ``portable_export`` without an ``export_portable_state`` override.
        """
        name = cls.__qualname__
        for attribute in ("pass_id", "pass_version"):
            value = getattr(cls, attribute, None)
            if not isinstance(value, str) or not value.strip() or value != value.strip():
                raise OptimizationConfigurationError(
                    f"{name}.{attribute} must be a non-empty string without surrounding spaces, got {value!r}"
                )
        if not isinstance(getattr(cls, "capabilities", None), OptimizationCapabilities):
            raise OptimizationConfigurationError(f"{name}.capabilities must be an OptimizationCapabilities instance")
        if not isinstance(cls.requires_architecture_support, bool):
            raise OptimizationConfigurationError(f"{name}.requires_architecture_support must be a bool")
        if cls.capabilities.reversible and cls.restore is OptimizationPass.restore:
            raise OptimizationConfigurationError(
                f"{name} declares reversible=True but does not override restore(); implement it or declare "
                "reversible=False"
            )
        if cls.capabilities.portable_export and cls.export_portable_state is OptimizationPass.export_portable_state:
            raise OptimizationConfigurationError(
                f"{name} declares portable_export=True but does not override export_portable_state()"
            )

    # ---------------------------------------------------------------- contract
    @abc.abstractmethod
    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        """Every option that affects the graph, including defaults, as strict JSON."""

    def validate(self, model: object, context: OptimizationContext) -> None:
        """Check that the pass can run on ``model`` in ``context``, without changing anything.

        The base implementation compares the declared capabilities with the context.
        Overrides call ``super().validate(model, context)`` first, then check the runtime's
        protocol: a present but malformed protocol, an explicitly requested backend that cannot
        run, or unsupported hardware must raise here. An *absent* protocol is not an error:
        ``apply`` returns :meth:`not_applicable_result`.

        Args:
            model: the runtime (usually a ``torch.nn.Module``).
            context: the runtime's mode, device, dtype and architecture facts.

        Raises:
            OptimizationCompatibilityError: listing every capability mismatch.
        """
        reasons = self.capabilities.incompatibilities(context)
        if reasons:
            raise OptimizationCompatibilityError(self.pass_id, reasons)

    def planned_context(self, context: OptimizationContext) -> OptimizationContext:
        """The context the runtime will be in after :meth:`apply`, for planning without applying.

        Automatic selection (:func:`voicehub.optimization.automatic.select_verified_passes`) checks
        each later pass against it. The default is ``context`` unchanged; a pass that moves the
        runtime to another device or dtype overrides it (``DtypePass`` returns its target dtype).
        """
        return context

    @abc.abstractmethod
    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        """Transform ``model``; all of the change or none of it.

        Returns:
            The result; ``result.model`` is the runtime to use from now on.
        """

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        """Undo :meth:`apply` and return the original runtime.

        Args:
            model: the runtime as this pass left it (later passes already restored).
            state: ``PassResult.state`` from :meth:`apply`.
            context: the context the pass was applied in.

        Raises:
            OptimizationRestoreError: always, unless a subclass implements it.
        """
        raise OptimizationRestoreError(f"optimization pass {self.pass_id!r} is not reversible; reload the model")

    def not_applicable_result(self, model: object, *, reason: str) -> PassResult:
        """A model-preserving result for a runtime that lacks this pass's protocol.

        Args:
            model: the runtime, returned unchanged.
            reason: an actionable sentence: what is missing and what would make the pass apply.

        Raises:
            OptimizationConfigurationError: if ``reason`` is empty.
        """
        if not isinstance(reason, str) or not reason.strip():
            raise OptimizationConfigurationError(f"{self.pass_id}: a not-applicable result needs a non-empty reason")
        return PassResult(
            model=model,
            state={"kind": NOT_APPLICABLE_STATE_KIND, "model": model},
            metadata={"outcome": OUTCOME_NOT_APPLICABLE, "reason": reason},
        )

    def runtime_manifest_status(self, result: PassResult) -> Mapping[str, JSONValue] | None:
        """An optional status that evolves after ``apply`` (e.g. a lazy compile that fell back to eager).

        Returns:
            Strict-JSON facts for the manifest's ``runtime_status`` entry, or ``None``.
        """
        return None

    def route_optimizer_parameters(self, model: object, result: PassResult) -> Sequence[Any]:
        """Which parameters an optimizer should train after a topology-changing training pass.

        Raises:
            OptimizationConfigurationError: unless a subclass implements it (fail closed).
        """
        raise OptimizationConfigurationError(f"optimization pass {self.pass_id!r} does not route optimizer parameters")

    def export_portable_state(self, model: object, result: PassResult) -> Mapping[str, Any]:
        """A state dict in the original parameter names, for a topology-changing pass.

        Raises:
            OptimizationConfigurationError: unless a subclass implements it (fail closed).
        """
        raise OptimizationConfigurationError(f"optimization pass {self.pass_id!r} cannot export a portable state")

    def declaration(self) -> dict[str, JSONValue]:
        """The pass's manifest declaration: id, kind, version, configuration, capabilities.

        Raises:
            OptimizationConfigurationError: if the configuration is not strict JSON.
        """
        configuration = self.manifest_configuration()
        try:
            configuration_json = strict_json.loads(strict_json.dumps(dict(configuration)))
        except (StrictJSONError, TypeError) as err:
            raise OptimizationConfigurationError(
                f"{self.pass_id}: manifest_configuration() is not strict JSON: {err}"
            ) from err
        return {
            "pass": self.pass_id,
            "kind": self.compatibility_kind,
            "version": self.pass_version,
            "configuration": configuration_json,
            "capabilities": self.capabilities.to_dict(),
            "requires_architecture_support": self.requires_architecture_support,
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.qualified_id}>"


@dataclass(frozen=True, slots=True, kw_only=True)
class AppliedPass:
    """One pass of an applied plan.

    Attributes:
        name: the name the plan used (a registry name, or the ``pass_id`` of an instance).
        optimization_pass: the pass instance.
        result: what its ``apply`` returned.
        declaration: the manifest declaration snapshotted before any pass ran.
    """

    name: str
    optimization_pass: OptimizationPass
    result: PassResult
    declaration: Mapping[str, JSONValue]


MANIFEST_TYPE: Final = "voicehub.optimization-manifest"
MANIFEST_FORMAT_VERSION: Final = 1


class OptimizationResult:
    """An applied plan: the optimized runtime, its manifest, and the way back.

    Created by :class:`~voicehub.optimization.manager.OptimizationPassManager`; not by users.
    """

    def __init__(
        self,
        *,
        model: object,
        original_model: object,
        context: OptimizationContext,
        applied: tuple[AppliedPass, ...],
        tainted: str | None = None,
        recovery: str = DEFAULT_RECOVERY,
    ) -> None:
        self._model = model
        self._original_model = original_model
        self._context = context
        self._applied = applied
        self._restored = False
        self._tainted = tainted
        self._recovery = recovery
        self._on_restore: list[ModelRestorer] = []

    @property
    def model(self) -> object:
        """The optimized runtime (the original one once restored)."""
        return self._original_model if self._restored else self._model

    @property
    def original_model(self) -> object:
        """The runtime the plan was applied to."""
        return self._original_model

    @property
    def context(self) -> OptimizationContext:
        """The context the plan was validated against."""
        return self._context

    @property
    def applied(self) -> tuple[AppliedPass, ...]:
        """The passes, in application order."""
        return self._applied

    @property
    def restored(self) -> bool:
        """True once :meth:`restore` has run."""
        return self._restored

    @property
    def reversible(self) -> bool:
        """True when every pass can be undone (not-applicable results always can) and the runtime is not tainted."""
        return self._tainted is None and all(
            p.result.is_not_applicable or p.optimization_pass.capabilities.reversible for p in self._applied
        )

    @property
    def tainted(self) -> str | None:
        """Why the runtime is *tainted* -- partly changed after a failed rollback or restore -- or ``None``.

        A tainted runtime cannot be restored or optimized again; :attr:`recovery` says how to get
        a usable one back.
        """
        return self._tainted

    @property
    def requires_reload(self) -> bool:
        """True when the only way back to the original runtime is rebuilding it (irreversible or tainted)."""
        return not self._restored and not self.reversible

    @property
    def recovery(self) -> str:
        """How to get a usable runtime back when :attr:`requires_reload` is true."""
        return self._recovery

    def set_recovery(self, recovery: str) -> None:
        """Replace the :attr:`recovery` sentence (task wrappers name their own way back)."""
        self._recovery = recovery

    def outcomes(self) -> dict[str, str]:
        """``{name: outcome}`` for every pass, in plan order."""
        return {p.name: p.result.outcome for p in self._applied}

    def manifest(self) -> dict[str, JSONValue]:
        """The deterministic strict-JSON manifest of the plan.

        Contains ``type``, ``format_version``, ``context`` and one entry per pass: ``name``,
        ``pass``, ``kind``, ``version``, ``configuration``, ``capabilities``,
        ``requires_architecture_support``, ``metadata`` (with ``outcome``) and, for passes that
        report one, ``runtime_status``. No timings or object ids: the same plan on the same
        runtime gives the same bytes.
        """
        passes: list[JSONValue] = []
        for applied in self._applied:
            entry: dict[str, JSONValue] = {"name": applied.name, **applied.declaration}
            entry["metadata"] = dict(applied.result.metadata)
            status = applied.optimization_pass.runtime_manifest_status(applied.result)
            if status is not None:
                entry["runtime_status"] = dict(status)
            passes.append(entry)
        document: dict[str, JSONValue] = {
            "type": MANIFEST_TYPE,
            "format_version": MANIFEST_FORMAT_VERSION,
            "context": self._context.to_dict(),
            "passes": passes,
            "restored": self._restored,
        }
        if self._tainted is not None:
            document["tainted"] = self._tainted
        checked: dict[str, JSONValue] = strict_json.loads(strict_json.dumps(document))
        return checked

    def manifest_json(self, *, indent: int | None = None) -> str:
        """The manifest as canonical strict JSON text (sorted keys)."""
        return strict_json.dumps(self.manifest(), indent=indent)

    def _topology_passes(self) -> list[AppliedPass]:
        return [
            p
            for p in self._applied
            if not p.result.is_not_applicable and p.optimization_pass.capabilities.changes_topology
        ]

    def optimizer_parameters(self) -> list[Any]:
        """The parameters an optimizer should update under this plan.

        Without a topology-changing pass that is every parameter of the runtime with
        ``requires_grad``; with one (e.g. ``lora``), that pass routes them.

        Raises:
            OptimizationConfigurationError: if more than one pass changed the topology (ambiguous),
                or the runtime has no ``parameters()``.
        """
        changed = self._topology_passes()
        if len(changed) > 1:
            raise OptimizationConfigurationError(
                f"passes {[p.name for p in changed]} all change the topology; route optimizer parameters yourself"
            )
        if changed:
            return list(changed[0].optimization_pass.route_optimizer_parameters(self.model, changed[0].result))
        parameters = getattr(self.model, "parameters", None)
        if not callable(parameters):
            raise OptimizationConfigurationError(f"the runtime {type(self.model).__name__} has no parameters()")
        return [p for p in parameters() if p.requires_grad]

    def portable_state_dict(self) -> dict[str, Any]:
        """The runtime's state in its original parameter names, for a checkpoint any VoiceHub install can load.

        Raises:
            OptimizationConfigurationError: if more than one pass changed the topology, or a pass
                changed parameter names without exporting a portable state (``int8-dynamic``).
        """
        changed = self._topology_passes()
        if len(changed) > 1:
            raise OptimizationConfigurationError(
                f"passes {[p.name for p in changed]} all change the topology; refusing to guess a portable state"
            )
        if changed:
            applied = changed[0]
            if not applied.optimization_pass.capabilities.portable_export:
                raise OptimizationConfigurationError(
                    f"pass {applied.name!r} changes parameter names and has no portable export; restore the plan "
                    "and save the original runtime instead"
                )
            return dict(applied.optimization_pass.export_portable_state(self.model, applied.result))
        state_dict = getattr(self.model, "state_dict", None)
        if not callable(state_dict):
            raise OptimizationConfigurationError(f"the runtime {type(self.model).__name__} has no state_dict()")
        return dict(state_dict())

    def add_restore_callback(self, callback: ModelRestorer) -> None:
        """Call ``callback(original_model)`` after a successful :meth:`restore` (used by task wrappers)."""
        self._on_restore.append(callback)

    def restore(self) -> object:
        """Undo every pass in reverse order and return the original runtime.

        Raises:
            OptimizationRestoreError: if the plan was already restored, is tainted, or contains a
                pass that changed the runtime irreversibly (nothing is undone then); or a restore
                failed -- the result is then tainted, and the message says how to recover.
        """
        if self._restored:
            raise OptimizationRestoreError("this optimization plan was already restored")
        if self._tainted is not None:
            raise OptimizationRestoreError(
                f"the optimization plan cannot be restored: the runtime is tainted ({self._tainted}); to recover, "
                f"{self._recovery}"
            )
        irreversible = [
            p.name
            for p in self._applied
            if not p.result.is_not_applicable and not p.optimization_pass.capabilities.reversible
        ]
        if irreversible:
            raise OptimizationRestoreError(
                f"the optimization plan cannot be restored: pass(es) {irreversible} are irreversible; to get the "
                f"original runtime back, {self._recovery}"
            )
        model = self._model
        for index, applied in enumerate(reversed(self._applied)):
            try:
                model = restore_pass(applied, model, self._context)
            except OptimizationRestoreError as err:
                done = [p.name for p in reversed(self._applied)][:index]
                self._tainted = f"{err} (after restoring {done})"
                message = (
                    f"restoring the optimization plan failed: {err}. The runtime is TAINTED (partly restored); further "
                    f"plans are refused. To recover, {self._recovery}"
                )
                for runtime in {id(self._model): self._model, id(model): model}.values():
                    refuse_tainted_calls(runtime, f"the runtime is TAINTED and must not be used: {message}")
                raise OptimizationRestoreError(message) from err
        self._restored = True
        for callback in self._on_restore:
            callback(model)
        return model


def restore_pass(applied: AppliedPass, model: object, context: OptimizationContext) -> object:
    """Undo one applied pass and return the runtime before it.

    A not-applicable result is undone without calling the pass (nothing changed).

    Raises:
        OptimizationRestoreError: wrapping any failure of the pass's ``restore``.
    """
    result = applied.result
    if result.is_not_applicable:
        return result.state.get("model", model)
    try:
        return applied.optimization_pass.restore(model, result.state, context)
    except OptimizationRestoreError:
        raise
    except Exception as err:
        raise OptimizationRestoreError(
            f"restoring optimization pass {applied.name!r} failed: {type(err).__name__}: {err}"
        ) from err


__all__ = [
    "FORBIDDEN_OUTCOMES",
    "MANIFEST_FORMAT_VERSION",
    "MANIFEST_TYPE",
    "NOT_APPLICABLE_STATE_KIND",
    "OUTCOME_CONFIGURED",
    "OUTCOME_NOT_APPLICABLE",
    "AppliedPass",
    "OptimizationPass",
    "OptimizationResult",
    "PassResult",
    "normalize_outcome",
    "restore_pass",
    "speed_claims",
]
