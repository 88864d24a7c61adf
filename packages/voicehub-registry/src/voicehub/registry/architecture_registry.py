"""Native architecture metadata: the support facts tests have verified.

An :class:`ArchitectureSpec` records, for one owned PyTorch graph, the devices, dtypes, tasks,
features, optimization-pass kinds and sample rates that tests have verified, and where the
reference implementation comes from. The library reads these facts: loading refuses or avoids an
unverified device or dtype, and the optimization host declines or refuses passes by them.

The record also holds lazy ``"module:attr"`` references to the family's parts (seed 001: "lazy
references to the builder, config, processor, decoder, objective, and checkpoint adapter"),
imported only by :meth:`ArchitectureSpec.resolve`. ``None`` means the family has no such part
(the reason is documented in its ``registration.py``). Every wrapper's runtime build resolves its
architecture's references and checks that the graph it built is an instance of ``builder``
(``voicehub.modeling``), so a reference that stops resolving fails the first load, naming it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from voicehub.core.device import DeviceLike, DTypeLike, normalize_device, normalize_dtype
from voicehub.core.errors import DeviceError, UnknownNameError, VoiceHubError
from voicehub.core.lazy import parse_reference, resolve_reference
from voicehub.core.tasks import SpeechTask
from voicehub.registry._base import _NamedRegistry, normalize_name, normalize_names
from voicehub.registry.errors import PluginError, SpecError, UnsupportedByArchitectureError

ARCHITECTURE_PARTS: tuple[str, ...] = ("builder", "config", "processor", "decoder", "objective", "checkpoint_adapter")
"""The lazily referenced parts of an architecture family, in the order seed 001 names them."""


def _tags(values: object, field: str) -> tuple[str, ...]:
    return normalize_names(values, owner="ArchitectureSpec", field=field)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ArchitectureSpec:
    """Declaration of one native architecture family.

    Attributes:
        architecture_id: the registry key, lower case: the family's folder name (``"silero"``).
        version: the graph's version string (bump when the state-dict layout changes).
        tasks: speech tasks the graph serves.
        devices: devices verified by tests (``"cpu"``, ``"cuda"``, ``"mps"``).
        dtypes: dtypes verified by tests (``"float32"``, ``"bfloat16"``, ``"float16"``).
        features: verified feature tags (``"8khz"``, ``"streaming"``, ``"batched-inference"``...).
        optimization_passes: pass kinds verified for automatic selection (``"int8-dynamic"``...).
        sample_rates: input or output sample rates of the graph, in Hz.
        aliases: other names accepted for ``architecture_id``.
        upstream: where the reference implementation lives (URL and revision), for provenance.
        license: SPDX licence id of the reference implementation.
        builder: ``"module:attr"`` of the graph class (the runtime module is an instance of it).
        config: ``"module:attr"`` of the graph's config class.
        processor: ``"module:attr"`` of the input processor (feature extractor, text front end or
            tokenizer), or ``None`` when the graph takes raw audio itself.
        decoder: ``"module:attr"`` of the output decoder (search loop, waveform decoder), or ``None``
            when the graph's output is the result.
        objective: ``"module:attr"`` of the training objective, or ``None`` when the family has none
            of its own (it is trained through a generic ``voicehub.training`` objective or not at all).
        checkpoint_adapter: ``"module:attr"`` of the function or method that reads the family's
            checkpoints into the graph.
    """

    architecture_id: str
    version: str = "1"
    tasks: tuple[SpeechTask, ...] = ()
    devices: tuple[str, ...] = ("cpu",)
    dtypes: tuple[str, ...] = ("float32",)
    features: tuple[str, ...] = ()
    optimization_passes: tuple[str, ...] = ()
    sample_rates: tuple[int, ...] = ()
    aliases: tuple[str, ...] = ()
    upstream: str | None = None
    license: str | None = None
    builder: str | None = None
    config: str | None = None
    processor: str | None = None
    decoder: str | None = None
    objective: str | None = None
    checkpoint_adapter: str | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        key = normalize_name(self.architecture_id, what="architecture_id")
        set_(self, "architecture_id", key)
        for part in ARCHITECTURE_PARTS:
            reference = getattr(self, part)
            if reference is None:
                continue
            if not isinstance(reference, str):
                raise SpecError(
                    f"architecture {key!r}: {part} must be a 'module:attr' string or None, got "
                    f"{type(reference).__name__}",
                    field=part,
                )
            try:
                parse_reference(reference)
            except ValueError as err:
                raise SpecError(f"architecture {key!r}: {part}: {err}", field=part) from err
        if isinstance(self.tasks, (str, SpeechTask)):
            raise SpecError(f"architecture {key!r}: tasks must be a tuple", field="tasks")
        try:
            set_(self, "tasks", tuple(dict.fromkeys(SpeechTask.parse(t) for t in self.tasks)))
            set_(
                self,
                "devices",
                tuple(dict.fromkeys(str(normalize_device(d)) for d in _tags(self.devices, "devices"))),
            )
            set_(
                self,
                "dtypes",
                tuple(dict.fromkeys(normalize_dtype(d).value for d in _tags(self.dtypes, "dtypes"))),
            )
        except (UnknownNameError, DeviceError) as err:
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

    def references(self) -> dict[str, str | None]:
        """Part name -> ``"module:attr"`` reference (``None`` for a part the family does not have)."""
        return {part: getattr(self, part) for part in ARCHITECTURE_PARTS}

    def resolve(self, part: str) -> Any:
        """Import and return one of the family's parts (imports its module now).

        Args:
            part: one of :data:`ARCHITECTURE_PARTS` (``"builder"``, ``"checkpoint_adapter"``...).

        Returns:
            The object the reference names.

        Raises:
            SpecError: for an unknown part name (listing the parts), a part the family does not
                declare, or a reference that does not import.
        """
        if part not in ARCHITECTURE_PARTS:
            raise SpecError(
                f"architecture {self.architecture_id!r}: unknown part {part!r}; expected one of "
                f"{list(ARCHITECTURE_PARTS)}",
                field=part,
            )
        reference = getattr(self, part)
        if reference is None:
            raise SpecError(
                f"architecture {self.architecture_id!r} declares no {part}; its registration.py says why",
                field=part,
            )
        try:
            return resolve_reference(reference)
        except VoiceHubError as err:
            raise SpecError(
                f"architecture {self.architecture_id!r}: {part} reference {reference!r} does not resolve: {err}; fix "
                f"the reference in the family's registration.py",
                field=part,
            ) from err

    def supports(
        self,
        *,
        device: DeviceLike | None = None,
        dtype: DTypeLike | None = None,
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
        device: DeviceLike | None = None,
        dtype: DTypeLike | None = None,
        task: SpeechTask | str | None = None,
        feature: str | None = None,
        optimization_pass: str | None = None,
    ) -> None:
        """Raise unless every given fact is verified for this architecture.

        A device index is ignored (``"cuda:1"`` is covered by ``"cuda"``). A typed
        :class:`~voicehub.core.Device` or :class:`~voicehub.core.DType` is used as it is; a string
        (or ``torch.dtype``) given by a caller is normalised here, at this public boundary.

        Raises:
            UnsupportedByArchitectureError: naming the fact and the verified values.
        """
        if device is not None and normalize_device(device).type not in self.devices:
            raise UnsupportedByArchitectureError(self.architecture_id, "device", str(device), self.devices)
        if dtype is not None and normalize_dtype(dtype).value not in self.dtypes:
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
            "tasks": [t.value for t in self.tasks],
            "devices": list(self.devices),
            "dtypes": list(self.dtypes),
            "features": list(self.features),
            "optimization_passes": list(self.optimization_passes),
            "sample_rates": list(self.sample_rates),
            "aliases": list(self.aliases),
            "upstream": self.upstream,
            "license": self.license,
            **self.references(),
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


__all__ = ["ARCHITECTURE_PARTS", "ArchitectureRegistry", "ArchitectureSpec"]
