"""Modes, capabilities and the context a plan runs in.

These records are plain data (no torch): a pass declares :class:`OptimizationCapabilities`,
the caller (or the task wrapper) describes the runtime with an :class:`OptimizationContext`,
and :meth:`OptimizationCapabilities.incompatibilities` compares the two in readable sentences.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from voicehub.core.device import normalize_device, normalize_dtype
from voicehub.core.errors import DeviceError, LifecycleError
from voicehub.core.runtime import RuntimeState
from voicehub.core.strict_json import JSONValue
from voicehub.optimization.errors import OptimizationConfigurationError

KNOWN_DEVICE_TYPES = ("cpu", "cuda", "mps")
"""Device types a capability may name (a context's ``cuda:1`` has device type ``cuda``)."""

KNOWN_DTYPES = ("float32", "float16", "bfloat16")
"""Floating dtypes a capability may name, in VoiceHub's canonical spelling."""

_OTHER_FLOATING_DTYPE = re.compile(r"b?float[0-9]+(_[a-z0-9]+)*")
"""Other torch floating dtype names a *context* may carry (``float64``, ``float8_e4m3fn``): no pass
may declare them, so every pass that declares dtypes refuses such a runtime before any change."""


OptimizationMode = RuntimeState
"""What an optimized runtime is for: the lifecycle state it is loaded in (``INFERENCE`` or ``TRAINING``).

The same enum as :class:`voicehub.core.RuntimeState`, under the name the optimization API uses; a
plan never applies to ``CREATED`` (:func:`parse_mode` refuses it)."""


def parse_mode(value: str | RuntimeState) -> RuntimeState:
    """Accept ``RuntimeState.INFERENCE`` / ``TRAINING`` or their names (``"inference"``, ``"training"``).

    Raises:
        OptimizationConfigurationError: for ``created`` or any other value, listing the valid ones.
    """
    try:
        mode = RuntimeState.parse(value)
    except LifecycleError:
        mode = None
    if mode is None or not mode.is_loaded:
        raise OptimizationConfigurationError(
            f"unknown optimization mode {value!r}; expected one of {[m.value for m in RuntimeState.loaded()]}"
        )
    return mode


def _modes(values: Iterable[str | RuntimeState], where: str) -> tuple[RuntimeState, ...]:
    if isinstance(values, str):
        raise OptimizationConfigurationError(f"{where}: expected a tuple of modes, got the single value {values!r}")
    out = tuple(parse_mode(v) for v in values)
    if not out:
        raise OptimizationConfigurationError(f"{where}: at least one mode is required (inference and/or training)")
    return tuple(sorted(set(out), key=RuntimeState.loaded().index))


def _names(values: Iterable[str], known: tuple[str, ...], where: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise OptimizationConfigurationError(f"{where}: expected a tuple of names, got the single string {values!r}")
    out = tuple(values)
    unknown = [v for v in out if v not in known]
    if unknown:
        raise OptimizationConfigurationError(f"{where}: unknown value(s) {unknown}; expected some of {list(known)}")
    return tuple(sorted(set(out), key=known.index))


def device_type(device: str) -> str:
    """The device type of a concrete device string (``"cuda:1"`` -> ``"cuda"``)."""
    return device.split(":", 1)[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class OptimizationCapabilities:
    """The execution constraints a pass declares, honestly.

    Attributes:
        modes: the modes the pass supports (required; inference, training or both).
        devices: device types the pass runs on (``cpu``, ``cuda``, ``mps``).
        dtypes: runtime floating dtypes the pass accepts (``float32``, ``float16``, ``bfloat16``), or
            ``None`` (the default) for a pass that works whatever the floating dtype (``eval-mode``).
            A pass that declares dtypes refuses every other runtime dtype, ``float64`` included.
        streaming_safe: the optimized runtime keeps a streaming model's carried state correct.
        distributed_safe: the optimized runtime may be wrapped for distributed training (DDP).
        persistent: the transformed state may be checkpointed as it is.
        reversible: the pass implements ``restore()``.
        changes_parameter_names: state-dict keys differ while the pass is active.
        changes_topology: the module structure (not just values or methods) changes.
        portable_export: the pass can export a state dict in the original names
            (requires ``persistent``).

    Raises:
        OptimizationConfigurationError: on an unknown mode, device or dtype, an empty mode
            list, or ``portable_export`` without ``persistent``.
    """

    modes: tuple[OptimizationMode, ...]
    devices: tuple[str, ...] = KNOWN_DEVICE_TYPES
    dtypes: tuple[str, ...] | None = None
    streaming_safe: bool = True
    distributed_safe: bool = False
    persistent: bool = False
    reversible: bool = False
    changes_parameter_names: bool = False
    changes_topology: bool = False
    portable_export: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "modes", _modes(self.modes, "OptimizationCapabilities.modes"))
        devices = _names(self.devices, KNOWN_DEVICE_TYPES, "OptimizationCapabilities.devices")
        object.__setattr__(self, "devices", devices)
        if self.dtypes is not None:
            dtypes = _names(self.dtypes, KNOWN_DTYPES, "OptimizationCapabilities.dtypes")
            if not dtypes:
                raise OptimizationConfigurationError(
                    "OptimizationCapabilities.dtypes: an empty tuple accepts no runtime; name at least one dtype of "
                    f"{list(KNOWN_DTYPES)}, or pass None for a pass that works in any dtype"
                )
            object.__setattr__(self, "dtypes", dtypes)
        for name in (
            "streaming_safe",
            "distributed_safe",
            "persistent",
            "reversible",
            "changes_parameter_names",
            "changes_topology",
            "portable_export",
        ):
            if not isinstance(getattr(self, name), bool):
                raise OptimizationConfigurationError(
                    f"OptimizationCapabilities.{name} must be a bool, got {getattr(self, name)!r}"
                )
        if self.portable_export and not self.persistent:
            raise OptimizationConfigurationError(
                "OptimizationCapabilities: portable_export=True requires persistent=True (an exported state must be "
                "checkpointable)"
            )

    def incompatibilities(self, context: OptimizationContext) -> tuple[str, ...]:
        """Explain every way ``context`` falls outside these capabilities.

        Args:
            context: the runtime the pass would be applied to.

        Returns:
            One readable sentence per mismatch, each naming what was asked, what is supported
            and how to fix it; empty when the pass may run.
        """
        reasons: list[str] = []
        if context.mode not in self.modes:
            supported = ", ".join(m.value for m in self.modes)
            reasons.append(f"mode {context.mode.value!r} is not supported (supported: {supported})")
        if context.device is not None and device_type(context.device) not in self.devices:
            reasons.append(
                f"device {context.device!r} is not supported (supported device types: {', '.join(self.devices)}); "
                "move the model to a supported device first"
            )
        if self.dtypes is not None and context.dtype is not None and context.dtype not in self.dtypes:
            reasons.append(
                f"runtime dtype {context.dtype!r} is not supported (supported: {', '.join(self.dtypes)}); "
                f"load or cast the model to {self.dtypes[0]} first (e.g. module.to(torch.{self.dtypes[0]}))"
            )
        if context.streaming and not self.streaming_safe:
            reasons.append("the runtime is used for streaming but the pass is not streaming-safe")
        if context.distributed and not self.distributed_safe:
            reasons.append("the runtime is distributed but the pass is not distributed-safe")
        if context.persist_result and not self.persistent:
            reasons.append("persist_result=True was requested but the transformed state is not persistent")
        return tuple(reasons)

    def to_dict(self) -> dict[str, JSONValue]:
        """The capabilities as a strict-JSON object (the manifest's ``capabilities`` entry)."""
        return {
            "modes": [m.value for m in self.modes],
            "devices": list(self.devices),
            "dtypes": list(self.dtypes) if self.dtypes is not None else None,
            "streaming_safe": self.streaming_safe,
            "distributed_safe": self.distributed_safe,
            "persistent": self.persistent,
            "reversible": self.reversible,
            "changes_parameter_names": self.changes_parameter_names,
            "changes_topology": self.changes_topology,
            "portable_export": self.portable_export,
        }


@runtime_checkable
class ArchitectureSupport(Protocol):
    """What the optimization layer reads from an architecture spec (``voicehub.registry.ArchitectureSpec``).

    Only verified facts: the devices and dtypes the architecture was tested in, its feature tags,
    and the optimization-pass kinds verified for it. :meth:`OptimizationContext.with_architecture`
    reads these attributes (also from a ``capabilities`` attribute, or under a ``name`` instead of
    ``architecture_id``), so any object shaped like this works.
    """

    @property
    def architecture_id(self) -> str:
        """The architecture's registered name (``"silero-vad"``)."""
        ...

    @property
    def devices(self) -> tuple[str, ...]:
        """Device types verified by tests."""
        ...

    @property
    def dtypes(self) -> tuple[str, ...]:
        """Dtypes verified by tests."""
        ...

    @property
    def features(self) -> tuple[str, ...]:
        """Feature tags, including ``<kind>-<mode>-unsafe`` opt-outs."""
        ...

    @property
    def optimization_passes(self) -> tuple[str, ...]:
        """Optimization-pass kinds verified on the architecture."""
        ...


def _string_tuple(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    items = tuple(getattr(v, "value", v) for v in value)
    for item in items:
        if not isinstance(item, str):
            raise OptimizationConfigurationError(f"{where}: expected strings, got {item!r}")
    return tuple(sorted(set(items)))


def _first_attribute(obj: object, names: tuple[str, ...]) -> Any:
    for holder in (obj, getattr(obj, "capabilities", None)):
        if holder is None:
            continue
        for name in names:
            if hasattr(holder, name):
                return getattr(holder, name)
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class OptimizationContext:
    """The runtime a plan is validated against and applied to; recorded in the manifest.

    Attributes:
        mode: inference or training.
        device: the runtime's concrete device (``"cpu"``, ``"cuda:0"``), or ``None`` when the
            runtime is not a torch module (e.g. a C extension).
        dtype: the runtime's floating dtype (``"float32"``...), or ``None`` when it has none. Other
            torch floating dtypes (``"float64"``) are kept as they are, so that passes which
            declare dtypes refuse them.
        streaming: the runtime will be driven chunk by chunk with carried state.
        distributed: the runtime is (or will be) wrapped for distributed training.
        persist_result: the caller intends to checkpoint the transformed state.
        architecture: the registered architecture name, when known.
        architecture_devices: device types the architecture was verified on (``None``: unknown).
        architecture_dtypes: dtypes the architecture was verified in (``None``: unknown).
        architecture_features: the architecture's declared feature tags, e.g.
            ``"compile-inference-unsafe"`` (a pass kind followed by the mode and ``-unsafe``).
        architecture_passes: optimization-pass kinds verified on the architecture (``None``: unknown).

    Raises:
        OptimizationConfigurationError: for an invalid mode, device or dtype.
    """

    mode: OptimizationMode = OptimizationMode.INFERENCE
    device: str | None = "cpu"
    dtype: str | None = "float32"
    streaming: bool = False
    distributed: bool = False
    persist_result: bool = False
    architecture: str | None = None
    architecture_devices: tuple[str, ...] | None = None
    architecture_dtypes: tuple[str, ...] | None = None
    architecture_features: tuple[str, ...] = field(default=())
    architecture_passes: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", parse_mode(self.mode))
        try:
            if self.device is not None:
                device = normalize_device(self.device)
                if device == "auto":
                    raise OptimizationConfigurationError(
                        "OptimizationContext.device must be a concrete device ('cpu', 'cuda:0', 'mps'), not 'auto'"
                    )
                object.__setattr__(self, "device", device)
            if self.dtype is not None:
                dtype = _context_dtype(self.dtype)
                if dtype == "auto":
                    raise OptimizationConfigurationError(
                        "OptimizationContext.dtype must be a concrete dtype ('float32', 'float16', 'bfloat16')"
                    )
                object.__setattr__(self, "dtype", dtype)
        except DeviceError as err:
            raise OptimizationConfigurationError(f"OptimizationContext: {err}") from err
        for name in ("streaming", "distributed", "persist_result"):
            if not isinstance(getattr(self, name), bool):
                raise OptimizationConfigurationError(f"OptimizationContext.{name} must be a bool")
        for name in ("architecture_devices", "architecture_dtypes", "architecture_passes"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _string_tuple(value, f"OptimizationContext.{name}"))
        object.__setattr__(
            self, "architecture_features", _string_tuple(self.architecture_features, "architecture_features")
        )

    def with_architecture(self, architecture: object | None) -> OptimizationContext:
        """A copy carrying an architecture spec's verified facts.

        Reads ``name``, ``devices``, ``dtypes``, ``features`` and ``optimization_passes`` from the
        spec (or from its ``capabilities`` attribute); an attribute the spec lacks stays unknown.

        Args:
            architecture: a ``voicehub.registry.ArchitectureSpec`` (or any object with those
                attributes), or ``None`` to return the context unchanged.
        """
        if architecture is None:
            return self
        name = _first_attribute(architecture, ("architecture_id", "name", "architecture", "architecture_type"))
        devices = _first_attribute(architecture, ("devices", "verified_devices"))
        dtypes = _first_attribute(architecture, ("dtypes", "verified_dtypes"))
        features = _first_attribute(architecture, ("features", "verified_features"))
        passes = _first_attribute(architecture, ("optimization_passes", "verified_optimization_passes"))
        return OptimizationContext(
            mode=self.mode,
            device=self.device,
            dtype=self.dtype,
            streaming=self.streaming,
            distributed=self.distributed,
            persist_result=self.persist_result,
            architecture=str(name) if name is not None else self.architecture,
            architecture_devices=_string_tuple(devices, "devices") if devices is not None else None,
            architecture_dtypes=_dtype_names(dtypes) if dtypes is not None else None,
            architecture_features=_string_tuple(features, "features"),
            architecture_passes=_string_tuple(passes, "optimization_passes") if passes is not None else None,
        )

    def incompatibilities_with_architecture(self) -> tuple[str, ...]:
        """Explain where the runtime falls outside what its architecture was verified for."""
        reasons: list[str] = []
        label = self.architecture or "the architecture"
        devices = self.architecture_devices
        if devices is not None and self.device is not None and device_type(self.device) not in devices:
            reasons.append(f"{label} is verified on {list(devices)}, not on device {self.device!r}")
        dtypes = self.architecture_dtypes
        if dtypes is not None and self.dtype is not None and self.dtype not in dtypes:
            reasons.append(f"{label} is verified in {list(dtypes)}, not in dtype {self.dtype!r}")
        return tuple(reasons)

    def to_dict(self) -> dict[str, JSONValue]:
        """The context as a strict-JSON object (the manifest's ``context`` entry)."""
        return {
            "mode": self.mode.value,
            "device": self.device,
            "dtype": self.dtype,
            "streaming": self.streaming,
            "distributed": self.distributed,
            "persist_result": self.persist_result,
            "architecture": self.architecture,
            "architecture_devices": list(self.architecture_devices) if self.architecture_devices is not None else None,
            "architecture_dtypes": list(self.architecture_dtypes) if self.architecture_dtypes is not None else None,
            "architecture_features": list(self.architecture_features),
            "architecture_passes": list(self.architecture_passes) if self.architecture_passes is not None else None,
        }


def _context_dtype(value: object) -> str:
    """A known dtype in canonical spelling, or another torch floating dtype name (``float64``) as is."""
    text = str(value).strip().lower().removeprefix("torch.")
    if text == "double":
        return "float64"
    try:
        return normalize_dtype(text).value
    except DeviceError:
        if _OTHER_FLOATING_DTYPE.fullmatch(text):
            return text
        raise


def _dtype_names(values: Any) -> tuple[str, ...]:
    names: list[str] = []
    for value in _string_tuple([str(v) for v in ((values,) if isinstance(values, str) else values)], "dtypes"):
        try:
            names.append(normalize_dtype(value).value)
        except DeviceError:
            names.append(value)
    return tuple(sorted(set(names)))


__all__ = [
    "KNOWN_DEVICE_TYPES",
    "KNOWN_DTYPES",
    "ArchitectureSupport",
    "OptimizationCapabilities",
    "OptimizationContext",
    "OptimizationMode",
    "device_type",
    "parse_mode",
]
