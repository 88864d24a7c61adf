"""Model specs and the model registry.

A :class:`ModelSpec` is a declaration: it names a model type, its speech task, and the
``"module:attr"`` import paths of its config and wrapper classes. Nothing is imported until
:meth:`ModelSpec.load_config_class` or :meth:`ModelSpec.load_wrapper_class` is called, so a
registry of every integration can be listed without loading torch or any model code.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from voicehub.core.errors import UnknownModelError, UnknownTaskError, check_flag
from voicehub.core.lazy import parse_reference, resolve_reference
from voicehub.core.tasks import SpeechTask
from voicehub.registry._base import _NamedRegistry, normalize_name, normalize_names
from voicehub.registry.checkpoints import CheckpointSource, parse_source
from voicehub.registry.errors import DuplicateRegistrationError, PluginError, SpecError

_MODEL_TYPE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
GENERIC_MODEL_TYPES = frozenset({"model", "config", "voicehub"})
"""``config_type`` values of base classes, refused as a model type."""


def _reference(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise SpecError(f"ModelSpec.{field} must be a 'module:attr' string, got {type(value).__name__}", field=field)
    try:
        parse_reference(value)
    except ValueError as err:
        raise SpecError(f"ModelSpec.{field}: {err}", field=field) from err
    return value


def class_reference(cls: type) -> str:
    """Return the ``"module:QualName"`` import path of a module-level class.

    Raises:
        SpecError: for a class defined inside a function (its path cannot be imported).
    """
    if not isinstance(cls, type):
        raise SpecError(f"expected a class, got {cls!r}", field="class")
    if "<locals>" in cls.__qualname__:
        raise SpecError(
            f"{cls.__qualname__} is defined inside a function; registries store import paths, so define "
            f"it at module level in an importable module",
            field="class",
        )
    return f"{cls.__module__}:{cls.__qualname__}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """Declaration of one model integration.

    Attributes:
        model_type: the registry key, lower case (``"vad_silero"``).
        task: the speech task the wrapper serves (a string alias such as ``"vad"`` is accepted).
        config: ``"module:attr"`` of the model's config class (a ``ModelConfig`` subclass).
        wrapper: ``"module:attr"`` of the wrapper class.
        default_source: where the default weights come from (a source string such as
            ``"dist:silero-vad/silero_vad/data/silero_vad.jit"`` is parsed), or ``None`` for a
            model without weights or without a default checkpoint.
        aliases: other names accepted for ``model_type`` (case-insensitive).
        capabilities: free-form tags (``"streaming"``, ``"8khz"``...); the task value comes first.
        architecture: the id of the native graph's ``ArchitectureSpec``, if any.
        default_for_task: whether this is the task's default model (one per task).
        license: SPDX licence id of the default weights (``"MIT"``), if known.
        description: one line for listings.
        training_spec: ``"module:attr"`` of the integration's training declaration (a
            ``voicehub.training.ModelTrainingSpec``), read by ``voicehub.training.get_training_spec``;
            ``None`` when the integration has not declared one yet (then training refuses it and says so).
        upstream_model_types: the ``model_type`` values and ``architectures`` class names of an
            upstream (Hugging Face transformers) ``config.json`` whose checkpoints this integration
            loads (``"whisper"``, ``"whisperforconditionalgeneration"``); ``AutoModel`` picks the
            model of such a directory by them, as transformers' ``AutoConfig`` does. Case-insensitive.
        hub_ids: Hub repositories (``owner/name``) whose weights are this model's default source:
            ``from_pretrained("<hub id>")`` loads the shipped checkpoint, offline.
        shipped_checkpoints: upstream checkpoint names (openai-whisper's ``base``) whose weights are
            this model's default source; a lookup by one gives this model. Not aliases: such names
            are the upstream family's, too generic to be VoiceHub model names.
        known_checkpoints: ``(name, where to get it)`` pairs of upstream checkpoints this integration
            loads from a source but does not ship (``("small", "hf:openai/whisper-small")``); looking
            such a name up as a model type raises an error saying so and what to do.
    """

    model_type: str
    task: SpeechTask
    config: str
    wrapper: str
    default_source: CheckpointSource | None = None
    aliases: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    architecture: str | None = None
    default_for_task: bool = False
    license: str | None = None
    description: str = ""
    training_spec: str | None = None
    upstream_model_types: tuple[str, ...] = ()
    hub_ids: tuple[str, ...] = ()
    shipped_checkpoints: tuple[str, ...] = ()
    known_checkpoints: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        model_type = normalize_name(self.model_type, what="model_type")
        if not _MODEL_TYPE.match(model_type) or model_type in GENERIC_MODEL_TYPES:
            raise SpecError(
                f"model_type {self.model_type!r} is not usable: expected lower-case letters, digits, '_', '-' or "
                f"'.', not one of {sorted(GENERIC_MODEL_TYPES)}",
                field="model_type",
            )
        set_ = object.__setattr__
        set_(self, "model_type", model_type)
        try:
            set_(self, "task", SpeechTask.parse(self.task))
        except UnknownTaskError as err:
            raise SpecError(f"ModelSpec {model_type!r}: {err}", field="task") from err
        set_(self, "config", _reference(self.config, "config"))
        set_(self, "wrapper", _reference(self.wrapper, "wrapper"))
        if self.default_source is not None:
            set_(self, "default_source", parse_source(self.default_source))
        set_(self, "aliases", normalize_names(self.aliases, owner="ModelSpec", field="aliases"))
        capabilities = normalize_names(self.capabilities, owner="ModelSpec", field="capabilities")
        task_tag = self.task.value
        set_(self, "capabilities", (task_tag, *(c for c in capabilities if c != task_tag)))
        if self.architecture is not None:
            set_(self, "architecture", normalize_name(self.architecture, what="architecture"))
        if not isinstance(self.default_for_task, bool):
            raise SpecError(f"default_for_task must be a bool, got {self.default_for_task!r}", field="default_for_task")
        if self.license is not None and (not isinstance(self.license, str) or not self.license.strip()):
            raise SpecError(f"license must be an SPDX id string or None, got {self.license!r}", field="license")
        if not isinstance(self.description, str):
            raise SpecError(f"description must be a string, got {self.description!r}", field="description")
        if self.training_spec is not None:
            set_(self, "training_spec", _reference(self.training_spec, "training_spec"))
        set_(
            self,
            "upstream_model_types",
            normalize_names(self.upstream_model_types, owner="ModelSpec", field="upstream_model_types"),
        )
        hub_ids = normalize_names(self.hub_ids, owner="ModelSpec", field="hub_ids")
        if any(hub_id.count("/") != 1 or hub_id.startswith("/") or hub_id.endswith("/") for hub_id in hub_ids):
            raise SpecError(
                f"ModelSpec {model_type!r}: hub_ids must be 'owner/name' ids, got {hub_ids}", field="hub_ids"
            )
        set_(self, "hub_ids", hub_ids)
        set_(
            self,
            "shipped_checkpoints",
            normalize_names(self.shipped_checkpoints, owner="ModelSpec", field="shipped_checkpoints"),
        )
        checkpoints = tuple(self.known_checkpoints)
        if any(
            not isinstance(pair, tuple) or len(pair) != 2 or not all(isinstance(v, str) and v.strip() for v in pair)
            for pair in checkpoints
        ):
            raise SpecError(
                f"ModelSpec {model_type!r}: known_checkpoints must be (name, where to get it) string pairs, "
                f"got {checkpoints!r}",
                field="known_checkpoints",
            )
        set_(self, "known_checkpoints", tuple((normalize_name(n, what="known_checkpoints"), w) for n, w in checkpoints))

    @property
    def name(self) -> str:
        """The registry key (same as ``model_type``)."""
        return self.model_type

    @classmethod
    def from_classes(
        cls,
        config_class: type,
        wrapper_class: type,
        *,
        task: SpeechTask | str,
        model_type: str | None = None,
        default_source: str | CheckpointSource | None = None,
        aliases: Iterable[str] = (),
        capabilities: Iterable[str] = (),
        architecture: str | None = None,
        default_for_task: bool = False,
        license: str | None = None,
        description: str = "",
        training_spec: str | None = None,
    ) -> ModelSpec:
        """Build a spec that stores only the import paths of ``config_class`` and ``wrapper_class``.

        Args:
            config_class: the config class; its ``config_type`` is the model type unless
                ``model_type`` is given (then the two must agree).
            wrapper_class: the wrapper class.
            task: the speech task.
            model_type: optional explicit model type.
            default_source: default checkpoint source (string or source object).
            aliases: alternative names.
            capabilities: free-form tags.
            architecture: the ``ArchitectureSpec`` id.
            default_for_task: mark as the task default.
            license: SPDX licence id.
            description: one line for listings.
            training_spec: ``"module:attr"`` of the training declaration.

        Raises:
            SpecError: for classes defined in functions, or a model type disagreeing with the config.
        """
        default_for_task = check_flag(default_for_task, name="default_for_task")
        declared = getattr(config_class, "config_type", None)
        if model_type is None:
            if not isinstance(declared, str):
                raise SpecError(f"{config_class!r} declares no config_type; pass model_type=", field="model_type")
            model_type = declared
        elif (
            isinstance(declared, str)
            and declared not in GENERIC_MODEL_TYPES
            and normalize_name(declared) != normalize_name(model_type)
        ):
            raise SpecError(
                f"model_type {model_type!r} disagrees with {config_class.__name__}.config_type {declared!r}; "
                f"the saved config.json names the model by config_type, so the two must match",
                field="model_type",
            )
        return cls(
            model_type=model_type,
            task=SpeechTask.parse(task),
            config=class_reference(config_class),
            wrapper=class_reference(wrapper_class),
            default_source=parse_source(default_source) if default_source is not None else None,
            aliases=tuple(aliases),
            capabilities=tuple(capabilities),
            architecture=architecture,
            default_for_task=default_for_task,
            license=license,
            description=description,
            training_spec=training_spec,
        )

    def load_config_class(self) -> Any:
        """Import and return the config class (this imports the config module).

        Raises:
            PluginError: naming the reference when it cannot be imported.
        """
        return _resolve(self.config, self.model_type, "config")

    def load_wrapper_class(self) -> Any:
        """Import and return the wrapper class (this imports the wrapper module, usually torch).

        Raises:
            PluginError: naming the reference when it cannot be imported.
        """
        return _resolve(self.wrapper, self.model_type, "wrapper")

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON-ready description (used by ``voicehub models --json``)."""
        return {
            "model_type": self.model_type,
            "task": self.task.value,
            "config": self.config,
            "wrapper": self.wrapper,
            "default_source": self.default_source.to_string() if self.default_source is not None else None,
            "aliases": list(self.aliases),
            "capabilities": list(self.capabilities),
            "architecture": self.architecture,
            "default_for_task": self.default_for_task,
            "license": self.license,
            "description": self.description,
            "training_spec": self.training_spec,
            "upstream_model_types": list(self.upstream_model_types),
            "hub_ids": list(self.hub_ids),
            "shipped_checkpoints": list(self.shipped_checkpoints),
            "known_checkpoints": [list(pair) for pair in self.known_checkpoints],
        }


def _resolve(reference: str, owner: str, role: str) -> Any:
    from voicehub.core.errors import VoiceHubError

    try:
        return resolve_reference(reference)
    except VoiceHubError as err:
        raise PluginError(f"model {owner!r}: cannot load its {role} {reference!r}: {err}", reference=reference) from err


class ModelRegistry(_NamedRegistry[ModelSpec]):
    """A thread-safe, lazily populated registry of :class:`ModelSpec` records.

    Model types and aliases are case-insensitive and may not collide with each other; each
    task has at most one default; unregistering a model removes its aliases. Create separate
    instances for isolated tests; the process-wide catalog is ``voicehub.registry.MODEL_CATALOG``.
    """

    kind = "model"

    def register(self, spec: ModelSpec, *, exist_ok: bool = False) -> ModelSpec:
        """Add ``spec`` (and its aliases).

        Args:
            spec: the declaration.
            exist_ok: replace an existing registration of the same model type.

        Raises:
            DuplicateRegistrationError: for a taken model type (without ``exist_ok``), an alias
                or type collision, or a second default for the spec's task.
        """
        if not isinstance(spec, ModelSpec):
            raise SpecError(f"expected a ModelSpec, got {type(spec).__name__}", field="spec")
        with self._lock:
            if spec.default_for_task:
                current = self._default_holder(spec.task)
                if current is not None and current != spec.model_type:
                    raise DuplicateRegistrationError(
                        f"task {spec.task.value!r} already has the default model {current!r}; "
                        f"register {spec.model_type!r} with default_for_task=False or unregister {current!r}",
                        name=spec.model_type,
                        owner=current,
                    )
            self._check_upstream_claims(spec)
            return self._register(spec, exist_ok=exist_ok)

    def _check_upstream_claims(self, spec: ModelSpec) -> None:
        """Refuse a spec claiming an upstream model type or hub id another model type already claims."""
        for other in self._specs.values():
            if other.model_type == spec.model_type:
                continue
            for field in ("upstream_model_types", "hub_ids", "shipped_checkpoints"):
                shared = set(getattr(spec, field)) & set(getattr(other, field))
                if shared:
                    raise DuplicateRegistrationError(
                        f"model {spec.model_type!r}: {field} {sorted(shared)} already belong to {other.model_type!r}; "
                        "one upstream name leads to one model, so remove them from one of the two",
                        name=spec.model_type,
                        owner=other.model_type,
                    )

    def get(self, name: str) -> ModelSpec:
        """Return the spec registered under ``name`` or one of its aliases (case-insensitive).

        Raises:
            UnknownModelError: (a ``KeyError``) listing every registered name; for the name of an
                upstream checkpoint a model loads but VoiceHub does not ship (``known_checkpoints``),
                the message names that model and where to get the checkpoint.
        """
        try:
            return super().get(name)
        except UnknownModelError as err:
            key = name.strip().lower() if isinstance(name, str) else ""
            shipped = next((spec for spec in self.list() if key in spec.shipped_checkpoints), None)
            if shipped is not None:
                return shipped
            found = self.find_known_checkpoint(name) if isinstance(name, str) else None
            if found is None:
                raise
            spec, where = found
            err.args = (
                f"{name!r} is an upstream checkpoint that {spec.model_type!r} loads but that is not shipped here; "
                f"download it ({where}) and pass its local path as source with model_type={spec.model_type!r} "
                f"(command line: --model {spec.model_type} --source PATH); shipped models: "
                f"{', '.join(err.available)}",
            )
            raise

    def find_upstream(self, model_type: str | None, architectures: Iterable[str] = ()) -> ModelSpec | None:
        """The spec that loads checkpoints of an upstream ``config.json`` (see ``ModelSpec.upstream_model_types``).

        Args:
            model_type: the file's ``model_type`` (``"whisper"``), if any.
            architectures: the file's ``architectures`` class names, tried after ``model_type``.

        Returns:
            The first spec declaring one of them, or ``None``.
        """
        names = [name.strip().lower() for name in (model_type, *architectures) if isinstance(name, str)]
        specs = self.list()
        for name in names:
            for spec in specs:
                if name in spec.upstream_model_types:
                    return spec
        return None

    def upstream_spec_of(self, document: Mapping[str, object]) -> ModelSpec | None:
        """The spec that loads the checkpoint of an upstream ``config.json`` document, or ``None`` for VoiceHub's own.

        A config written by ``save_pretrained`` carries ``"type"`` (``ModelConfig.to_dict``); one
        without it whose ``model_type`` or ``architectures`` a spec declares in
        ``upstream_model_types`` is an upstream (Hugging Face) checkpoint's config.
        """
        if "type" in document:
            return None
        model_type = document.get("model_type")
        architectures = document.get("architectures")
        names = [a for a in architectures if isinstance(a, str)] if isinstance(architectures, list) else []
        return self.find_upstream(model_type if isinstance(model_type, str) else None, names)

    def upstream_model_types(self) -> dict[str, str]:
        """Every declared upstream ``model_type`` or architecture name -> the model type that loads it."""
        return {name: spec.model_type for spec in self.list() for name in spec.upstream_model_types}

    def find_hub_id(self, repo_id: str) -> ModelSpec | None:
        """The spec whose default source holds the weights of Hub repository ``repo_id`` (``hub_ids``), or ``None``."""
        key = repo_id.strip().lower()
        return next((spec for spec in self.list() if key in spec.hub_ids), None)

    def find_known_checkpoint(self, name: str) -> tuple[ModelSpec, str] | None:
        """The spec declaring ``name`` as an upstream checkpoint it loads but does not ship, and where to get it."""
        key = name.strip().lower()
        for spec in self.list():
            for checkpoint, where in spec.known_checkpoints:
                if checkpoint == key:
                    return spec, where
        return None

    def unregister(self, name: str) -> ModelSpec:
        """Remove a model and every alias pointing to it; return its spec.

        Raises:
            UnknownModelError: listing the registered model types.
        """
        return self._unregister(name)

    def _default_holder(self, task: SpeechTask) -> str | None:
        for key, spec in self._specs.items():
            if spec.task is task and spec.default_for_task:
                return key
        return None

    def get_default(self, task: SpeechTask | str) -> ModelSpec:
        """Return the default model of ``task``.

        Raises:
            UnknownModelError: if the task has no default, listing that task's models.
        """
        parsed = SpeechTask.parse(task)
        self.populate()
        with self._lock:
            holder = self._default_holder(parsed)
            if holder is None:
                options = [k for k, s in self._specs.items() if s.task is parsed]
                raise UnknownModelError(f"default of {parsed.value}", options, kind=f"{parsed.value} model")
            return self._specs[holder]

    def list(self, task: SpeechTask | str | None = None) -> tuple[ModelSpec, ...]:
        """Return the specs in registration order, optionally only those of ``task``."""
        parsed = SpeechTask.parse(task) if task is not None else None
        self.populate()
        with self._lock:
            return tuple(s for s in self._specs.values() if parsed is None or s.task is parsed)

    def load_references(self, references: Iterable[str], *, label: str = "catalog") -> tuple[ModelSpec, ...]:
        """Resolve ``"module:attr"`` references to specs (or sequences of specs) and register them.

        Re-registering an identical spec is a no-op, so loading a catalog twice is harmless.

        Raises:
            PluginError: for a reference that cannot be imported or is not a ``ModelSpec``.
            DuplicateRegistrationError: for a collision with a different registration.
        """
        added: list[ModelSpec] = []
        for reference in references:
            try:
                value = resolve_reference(reference)
            except Exception as err:
                raise PluginError(f"{label}: cannot load {reference!r}: {err}", reference=reference) from err
            for spec in _as_specs(value, reference, label):
                added.append(self.add(spec))
        return tuple(added)

    def add(self, spec: ModelSpec) -> ModelSpec:
        """Register ``spec``; an identical registration already present is kept (idempotent)."""
        with self._lock:
            if self._specs.get(spec.model_type) == spec:
                return spec
            return self.register(spec)

    def copy(self, *, name: str | None = None) -> ModelRegistry:
        """Return an isolated registry with the same (populated) content."""
        self.populate()
        clone = ModelRegistry(name=name or f"{self.name}-copy")
        with self._lock:
            clone._specs = dict(self._specs)
            clone._aliases = dict(self._aliases)
        return clone


def _as_specs(value: object, reference: str, label: str) -> tuple[ModelSpec, ...]:
    if isinstance(value, ModelSpec):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, ModelSpec) for v in value):
        return tuple(value)
    raise PluginError(
        f"{label}: {reference!r} is a {type(value).__name__}, expected a ModelSpec or a tuple of ModelSpec",
        reference=reference,
    )


__all__ = ["GENERIC_MODEL_TYPES", "ModelRegistry", "ModelSpec", "class_reference"]
