"""Native architecture metadata: lazy references plus verified support facts.

An :class:`ArchitectureSpec` describes an owned PyTorch graph without importing it: the
``"module:attr"`` references of its builder, config, processor, decoder, objective and
checkpoint adapter, and the devices, dtypes, tasks, features and optimization-pass kinds that
tests have verified. References are parsed when the spec is made (so a typo fails at once)
and imported only by :meth:`ArchitectureSpec.resolve`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from voicehub.core.device import normalize_device, normalize_dtype
from voicehub.core.errors import DeviceError, UnknownModelError, VoiceHubError
from voicehub.core.lazy import parse_reference, resolve_reference
from voicehub.core.tasks import SpeechTask
from voicehub.registry._base import _NamedRegistry, normalize_name, normalize_names
from voicehub.registry.errors import PluginError, SpecError, UnsupportedByArchitectureError

ROLES = ("model_builder", "config", "processor", "decoder", "objective", "checkpoint_adapter")
"""The named reference slots of an architecture, in display order."""


def _ref(value: object, field: str, architecture_id: str) -> str:
    if not isinstance(value, str):
        raise SpecError(f"architecture {architecture_id!r}: {field} must be a 'module:attr' string", field=field)
    try:
        parse_reference(value)
    except ValueError as err:
        raise SpecError(f"architecture {architecture_id!r}: {field}: {err}", field=field) from err
    return value


def _tags(values: object, field: str) -> tuple[str, ...]:
    return normalize_names(values, owner="ArchitectureSpec", field=field)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ArchitectureSpec:
    """Declaration of one native architecture family.

    Attributes:
        architecture_id: the registry key, lower case (``"silero-vad"``).
        model_builder: ``"module:attr"`` of the callable that builds the graph from a config.
        version: the graph's version string (bump when the state-dict layout changes).
        config: reference to the architecture config class, if any.
        processor: reference to the feature processor, if any.
        decoder: reference to the decoder (search, vocoder...), if any.
        objective: reference to the training objective, if any.
        checkpoint_adapter: reference to the upstream-checkpoint adapter, if any.
        components: further named references (``{"tokenizer": "pkg.mod:Tokenizer"}``).
        tasks: speech tasks the graph serves.
        devices: devices verified by tests (``"cpu"``, ``"cuda"``, ``"mps"``).
        dtypes: dtypes verified by tests (``"float32"``, ``"bfloat16"``, ``"float16"``).
        features: verified feature tags (``"8khz"``, ``"streaming"``, ``"batched-inference"``...).
        optimization_passes: pass kinds verified for automatic selection (``"int8-dynamic"``...).
        sample_rates: input or output sample rates of the graph, in Hz.
        aliases: other names accepted for ``architecture_id``.
        upstream: where the reference implementation lives (URL and revision), for provenance.
        license: SPDX licence id of the reference implementation.
    """

    architecture_id: str
    model_builder: str
    version: str = "1"
    config: str | None = None
    processor: str | None = None
    decoder: str | None = None
    objective: str | None = None
    checkpoint_adapter: str | None = None
    components: Mapping[str, str] = dataclasses.field(default_factory=dict)
    tasks: tuple[SpeechTask, ...] = ()
    devices: tuple[str, ...] = ("cpu",)
    dtypes: tuple[str, ...] = ("float32",)
    features: tuple[str, ...] = ()
    optimization_passes: tuple[str, ...] = ()
    sample_rates: tuple[int, ...] = ()
    aliases: tuple[str, ...] = ()
    upstream: str | None = None
    license: str | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        key = normalize_name(self.architecture_id, what="architecture_id")
        set_(self, "architecture_id", key)
        set_(self, "model_builder", _ref(self.model_builder, "model_builder", key))
        for role in ROLES[1:]:
            value = getattr(self, role)
            if value is not None:
                set_(self, role, _ref(value, role, key))
        if not isinstance(self.components, Mapping):
            raise SpecError(f"architecture {key!r}: components must be a mapping name -> reference", field="components")
        components = {}
        for name, reference in self.components.items():
            component = normalize_name(name, what="component name")
            if component in ROLES:
                raise SpecError(
                    f"architecture {key!r}: component {name!r} shadows the {component} slot", field="components"
                )
            components[component] = _ref(reference, f"components[{name!r}]", key)
        set_(self, "components", MappingProxyType(components))
        if isinstance(self.tasks, (str, SpeechTask)):
            raise SpecError(f"architecture {key!r}: tasks must be a tuple", field="tasks")
        try:
            set_(self, "tasks", tuple(dict.fromkeys(SpeechTask.parse(t) for t in self.tasks)))
            set_(
                self,
                "devices",
                tuple(dict.fromkeys(normalize_device(d) for d in _tags(self.devices, "devices"))),
            )
            set_(
                self,
                "dtypes",
                tuple(dict.fromkeys(normalize_dtype(d) for d in _tags(self.dtypes, "dtypes"))),
            )
        except (UnknownModelError, DeviceError) as err:
            raise SpecError(f"architecture {key!r}: {err}", field="tasks/devices/dtypes") from err
        if "auto" in self.devices or "auto" in self.dtypes:
            raise SpecError(f"architecture {key!r}: list concrete devices and dtypes, not 'auto'", field="devices")
        set_(self, "features", _tags(self.features, "features"))
        set_(
            self,
            "optimization_passes",
            _tags(self.optimization_passes, "optimization_passes"),
        )
        set_(self, "aliases", _tags(self.aliases, "aliases"))
        rates = tuple(self.sample_rates)
        if any(isinstance(r, bool) or not isinstance(r, int) or r <= 0 for r in rates):
            raise SpecError(
                f"architecture {key!r}: sample_rates must be positive ints in Hz, got {rates}", field="sample_rates"
            )
        set_(self, "sample_rates", rates)
        if not isinstance(self.version, str) or not self.version:
            raise SpecError(f"architecture {key!r}: version must be a non-empty string", field="version")

    @property
    def name(self) -> str:
        """The registry key (same as ``architecture_id``)."""
        return self.architecture_id

    def references(self) -> dict[str, str]:
        """Every declared reference, by role or component name (nothing is imported)."""
        refs = {role: getattr(self, role) for role in ROLES if getattr(self, role) is not None}
        refs.update(self.components)
        return refs

    def resolve(self, role: str, *, expected_type: type | None = None) -> Any:
        """Import and return the object behind one reference.

        Args:
            role: one of :data:`ROLES` or a component name.
            expected_type: when given, the resolved object must be this class or a subclass
                of it (for classes) or an instance of it (for other objects).

        Raises:
            UnknownModelError: if the architecture declares no such reference, listing those it has.
            PluginError: if the import fails or the object has the wrong type.
        """
        refs = self.references()
        reference = refs.get(role)
        if reference is None:
            raise UnknownModelError(role, refs, kind=f"reference of architecture {self.architecture_id!r}")
        try:
            value = resolve_reference(reference)
        except VoiceHubError as err:
            raise PluginError(f"architecture {self.architecture_id!r}: {role}: {err}", reference=reference) from err
        if expected_type is not None:
            ok = issubclass(value, expected_type) if isinstance(value, type) else isinstance(value, expected_type)
            if not ok:
                raise PluginError(
                    f"architecture {self.architecture_id!r}: {role} {reference!r} is {value!r}, "
                    f"expected {expected_type.__name__}",
                    reference=reference,
                )
        return value

    def supports(
        self,
        *,
        device: str | None = None,
        dtype: Any = None,
        task: SpeechTask | str | None = None,
        feature: str | None = None,
        optimization_pass: str | None = None,
    ) -> bool:
        """Whether every given fact is verified (see :meth:`require`)."""
        try:
            self.require(device=device, dtype=dtype, task=task, feature=feature, optimization_pass=optimization_pass)
        except UnsupportedByArchitectureError:
            return False
        return True

    def require(
        self,
        *,
        device: str | None = None,
        dtype: Any = None,
        task: SpeechTask | str | None = None,
        feature: str | None = None,
        optimization_pass: str | None = None,
    ) -> None:
        """Raise unless every given fact is verified for this architecture.

        A device index is ignored (``"cuda:1"`` is covered by ``"cuda"``); dtypes accept the
        same aliases as :func:`voicehub.core.normalize_dtype`, and ``torch.dtype`` objects.

        Raises:
            UnsupportedByArchitectureError: naming the fact and the verified values.
        """
        if device is not None:
            base = normalize_device(device).split(":")[0]
            if base not in self.devices:
                raise UnsupportedByArchitectureError(self.architecture_id, "device", str(device), self.devices)
        if dtype is not None and normalize_dtype(dtype) not in self.dtypes:
            raise UnsupportedByArchitectureError(self.architecture_id, "dtype", str(dtype), self.dtypes)
        if task is not None and SpeechTask.parse(task) not in self.tasks:
            raise UnsupportedByArchitectureError(self.architecture_id, "task", str(task), [t.value for t in self.tasks])
        if feature is not None and feature.strip().lower() not in self.features:
            raise UnsupportedByArchitectureError(self.architecture_id, "feature", feature, self.features)
        if optimization_pass is not None and optimization_pass.strip().lower() not in self.optimization_passes:
            raise UnsupportedByArchitectureError(
                self.architecture_id, "optimization pass", optimization_pass, self.optimization_passes
            )

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON-ready description."""
        return {
            "architecture_id": self.architecture_id,
            "version": self.version,
            "references": self.references(),
            "tasks": [t.value for t in self.tasks],
            "devices": list(self.devices),
            "dtypes": list(self.dtypes),
            "features": list(self.features),
            "optimization_passes": list(self.optimization_passes),
            "sample_rates": list(self.sample_rates),
            "aliases": list(self.aliases),
            "upstream": self.upstream,
            "license": self.license,
        }


class ArchitectureRegistry(_NamedRegistry[ArchitectureSpec]):
    """A thread-safe, lazily populated registry of :class:`ArchitectureSpec` records.

    Same rules as the model registry: case-insensitive ids and aliases, no collisions,
    isolated instances for tests, a process-wide ``voicehub.registry.ARCHITECTURE_CATALOG``.
    """

    kind = "architecture"

    def register(self, spec: ArchitectureSpec, *, exist_ok: bool = False) -> ArchitectureSpec:
        """Add ``spec`` and its aliases.

        Raises:
            DuplicateRegistrationError: for a taken id (without ``exist_ok``) or alias.
        """
        if not isinstance(spec, ArchitectureSpec):
            raise SpecError(f"expected an ArchitectureSpec, got {type(spec).__name__}", field="spec")
        return self._register(spec, exist_ok=exist_ok)

    def add(self, spec: ArchitectureSpec) -> ArchitectureSpec:
        """Register ``spec``; an identical registration already present is kept (idempotent)."""
        with self._lock:
            if self._specs.get(spec.architecture_id) == spec:
                return spec
            return self.register(spec)

    def unregister(self, name: str) -> ArchitectureSpec:
        """Remove an architecture and its aliases; return its spec."""
        return self._unregister(name)

    def list(self, task: SpeechTask | str | None = None) -> tuple[ArchitectureSpec, ...]:
        """Return the specs in registration order, optionally only those serving ``task``."""
        parsed = SpeechTask.parse(task) if task is not None else None
        self.populate()
        with self._lock:
            return tuple(s for s in self._specs.values() if parsed is None or parsed in s.tasks)

    def load_references(self, references: Iterable[str], *, label: str = "catalog") -> tuple[ArchitectureSpec, ...]:
        """Resolve ``"module:attr"`` references to specs and register them (idempotent).

        Raises:
            PluginError: for a reference that cannot be imported or is not an ``ArchitectureSpec``.
        """
        added: list[ArchitectureSpec] = []
        for reference in references:
            try:
                value = resolve_reference(reference)
            except Exception as err:
                raise PluginError(f"{label}: cannot load {reference!r}: {err}", reference=reference) from err
            if not isinstance(value, ArchitectureSpec):
                raise PluginError(
                    f"{label}: {reference!r} is a {type(value).__name__}, expected an ArchitectureSpec",
                    reference=reference,
                )
            added.append(self.add(value))
        return tuple(added)


__all__ = ["ROLES", "ArchitectureRegistry", "ArchitectureSpec"]
