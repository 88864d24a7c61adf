"""Auto factories: pick a model by type, config or saved directory, without importing it early.

Loading path (``AutoModel.from_pretrained(source, model_type=..., device=..., dtype=..., lazy_load=True)``):

1. the registry resolves the :class:`~voicehub.registry.ModelSpec` (no model module imported);
2. a task factory refuses a model of another task *before* importing anything, naming the
   right factory;
3. the config is built (``AutoConfig``), the wrapper class is imported and created with no
   runtime; the first inference call or ``load()`` builds the runtime.

No factory takes ``**kwargs``: a misspelt keyword is a ``TypeError`` naming it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from voicehub.core import strict_json
from voicehub.core.device import DeviceLike, DTypeLike, normalize_device
from voicehub.core.errors import (
    ConfigError,
    RegistryError,
    TaskMismatchError,
    UnknownConfigKeyError,
    UnknownModelError,
    check_flag,
)
from voicehub.core.files import CONFIG_FILE_NAME
from voicehub.core.strict_json import JSONValue
from voicehub.core.tasks import SpeechTask
from voicehub.errors import NoModelForTaskError
from voicehub.modeling import AnySpeechModel, PreTrainedSpeechModel, SourceLike, dtype_request
from voicehub.models import install_builtin_catalogs
from voicehub.registry import MODEL_CATALOG, ModelConfig, ModelRegistry, ModelSpec
from voicehub.registry.checkpoints import CheckpointSource, HubSource, LocalSource, parse_source
from voicehub.speaker_verification import PreTrainedSVModel
from voicehub.speech_recognition import PreTrainedASRModel
from voicehub.text_to_speech import PreTrainedTTSModel
from voicehub.voice_activity import PreTrainedVADModel

WrapperT = TypeVar("WrapperT", bound=AnySpeechModel)

FACTORY_NAMES: Mapping[SpeechTask, str] = {
    SpeechTask.TEXT_TO_SPEECH: "AutoModelForTextToSpeech",
    SpeechTask.AUTOMATIC_SPEECH_RECOGNITION: "AutoModelForSpeechRecognition",
    SpeechTask.VOICE_ACTIVITY_DETECTION: "AutoModelForVoiceActivityDetection",
    SpeechTask.SPEAKER_VERIFICATION: "AutoModelForSpeakerVerification",
}
"""The task factory to use for each task (named in task-mismatch errors)."""


def _catalog(registry: ModelRegistry | None) -> ModelRegistry:
    if registry is not None:
        return registry
    install_builtin_catalogs()
    return MODEL_CATALOG


# --------------------------------------------------------------------------- spec helpers
def list_model_specs(task: SpeechTask | str | None = None) -> tuple[ModelSpec, ...]:
    """Every registered model spec in registration order, optionally only one task's.

    Imports no model module (the built-in catalog holds declarations only).

    Args:
        task: a :class:`~voicehub.core.SpeechTask` or an alias (``"vad"``, ``"asr"``...).
    """
    return _catalog(None).list(task)


def get_model_spec(model_type: str) -> ModelSpec:
    """The spec of a model type or alias (case-insensitive).

    Raises:
        UnknownModelError: (a ``KeyError``) listing the registered model types.
    """
    return _catalog(None).get(model_type)


def get_default_model_spec(task: SpeechTask | str) -> ModelSpec:
    """The default model of ``task``.

    Raises:
        UnknownModelError: if the task has no default, listing its models.
    """
    return _catalog(None).get_default(task)


def _read_config_document(source: SourceLike) -> tuple[dict[str, JSONValue], str]:
    """Read ``config.json`` from a directory, a JSON file or a hub repository."""
    parsed = parse_source(source)
    if isinstance(parsed, HubSource):
        if parsed.filename is None:
            parsed = HubSource(repo_id=parsed.repo_id, revision=parsed.revision, filename=CONFIG_FILE_NAME)
        path = parsed.resolve()
    else:
        path = parsed.resolve()
        if path.is_dir():
            path = path / CONFIG_FILE_NAME
    where = str(path)
    if path.suffix.lower() != ".json":
        raise ConfigError(
            f"{parsed.to_string()} is a weight file, not a config; pass model_type= to choose the model, "
            f"or point at a directory holding {CONFIG_FILE_NAME}"
        )
    try:
        document = strict_json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"cannot read {where}: {err.strerror or err}") from err
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from err
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(document).__name__}")
    return document, where


def local_config_file(source: SourceLike | None) -> Path | None:
    """The ``config.json`` of a local directory source (or a local ``.json`` file), when there is one.

    Reads nothing and needs no network: a hub or distribution source gives ``None``.
    """
    if source is None:
        return None
    parsed = parse_source(source)
    if not isinstance(parsed, LocalSource):
        return None
    path = Path(parsed.path).expanduser()
    candidate = path / CONFIG_FILE_NAME if path.is_dir() else path
    return candidate if candidate.is_file() and candidate.suffix.lower() == ".json" else None


def _shipped_hub_source(
    source: SourceLike | None, model_type: str | None, config: ModelConfig | None, catalog: ModelRegistry
) -> tuple[SourceLike | None, str | None]:
    """A Hub id whose weights a model ships (``ModelSpec.hub_ids``): that model and its default source, offline.

    ``from_pretrained("openai/whisper-tiny.en")`` then loads the shipped tiny.en checkpoint without
    the network, as long as no other model type, config or revision was asked for; any other
    source comes back unchanged.
    """
    if source is None:
        return source, model_type
    parsed = parse_source(source)
    if not isinstance(parsed, HubSource) or parsed.filename is not None or parsed.revision is not None:
        return source, model_type
    spec = catalog.find_hub_id(parsed.repo_id)
    if spec is None or spec.default_source is None:
        return source, model_type
    if model_type is not None and catalog.get(model_type).model_type != spec.model_type:
        return source, model_type
    if config is not None and config.model_type != spec.model_type:
        return source, model_type
    return spec.default_source, spec.model_type


def _source_document(source: SourceLike | None) -> tuple[dict[str, JSONValue], str] | None:
    """The ``config.json`` of a local directory, or of a Hub repository (downloaded), if it has one.

    Raises:
        CheckpointNotFoundError: when a Hub repository's ``config.json`` cannot be fetched (offline,
            unknown id), naming the repository.
    """
    if source is None:
        return None
    config_file = local_config_file(source)
    if config_file is not None:
        return _read_config_document(config_file)
    parsed = parse_source(source)
    if isinstance(parsed, HubSource) and parsed.filename is None:
        return _read_config_document(parsed)
    return None


# --------------------------------------------------------------------------- AutoConfig
class AutoConfig:
    """Builds the registered config class of a model type."""

    def __init__(self) -> None:
        raise TypeError("AutoConfig is a factory; use AutoConfig.for_model() or AutoConfig.from_pretrained()")

    @classmethod
    def for_model(cls, model_type: str, /, **fields: object) -> ModelConfig:
        """Return the config of ``model_type`` with ``fields`` set (the rest default).

        Imports only the config module, never the wrapper or torch.

        Raises:
            UnknownModelError: listing the registered model types.
            UnknownConfigKeyError: for a field the config does not define, listing the known ones.
            ConfigError: for a value of the wrong type or range.
        """
        spec = get_model_spec(model_type)
        config_class = _config_class(spec)
        unknown = set(fields) - set(config_class.known_keys())
        if unknown:
            raise UnknownConfigKeyError(config_class.config_type, unknown, config_class.known_keys())
        config: ModelConfig = config_class(**fields)
        return config

    @classmethod
    def from_pretrained(cls, source: SourceLike, *, model_type: str | None = None) -> ModelConfig:
        """Read ``config.json`` (in a directory, a JSON file or a hub repository) into its registered class.

        The model type comes from the file's ``model_type`` key; ``model_type=`` is needed only
        for files without one, and must agree with it otherwise. Nothing is guessed from the path.

        Raises:
            ConfigError: for a weight file, a file without ``model_type`` (and none given), or a
                disagreement between the two.
            UnknownModelError: for an unregistered ``model_type``, listing the valid ones.
            CheckpointNotFoundError: when the source does not exist.
        """
        document, where = _read_config_document(source)
        return _config_from_document(document, where, model_type)


def _config_from_document(document: Mapping[str, JSONValue], where: str, model_type: str | None) -> ModelConfig:
    """Build the registered config class from a read ``config.json`` (see :meth:`AutoConfig.from_pretrained`)."""
    document = dict(document)
    declared = document.pop("model_type", None)
    if declared is not None and not isinstance(declared, str):
        raise ConfigError(f"{where}: model_type must be a string, got {declared!r}")
    if declared is None and model_type is None:
        raise ConfigError(f"{where} has no 'model_type'; pass model_type= (one of {list(MODEL_CATALOG.names())})")
    if (
        declared is not None
        and model_type is not None
        and get_model_spec(declared).model_type != get_model_spec(model_type).model_type
    ):
        raise ConfigError(f"{where} declares model_type {declared!r} but model_type={model_type!r} was passed")
    spec = get_model_spec(declared if declared is not None else str(model_type))
    config_class = _config_class(spec)
    try:
        config: ModelConfig = config_class.from_dict(document)
    except ConfigError as err:
        err.args = (f"{where}: {err.args[0]}", *err.args[1:])  # keep the subclass (UnknownConfigKeyError)
        raise
    return config


def _config_class(spec: ModelSpec) -> type[ModelConfig]:
    config_class = spec.load_config_class()
    if not (isinstance(config_class, type) and issubclass(config_class, ModelConfig)):
        raise RegistryError(
            f"model {spec.model_type!r}: config {spec.config!r} is not a ModelConfig subclass; fix its registration"
        )
    return config_class


# --------------------------------------------------------------------------- model factories
class _BaseAutoModel:
    """Shared implementation of the task factories; ``task`` is ``None`` for :class:`AutoModel`."""

    task: ClassVar[SpeechTask | None] = None

    def __init__(self) -> None:
        raise TypeError(f"{type(self).__name__} is a factory; use {type(self).__name__}.from_pretrained()")

    @classmethod
    def _check_task(cls, spec: ModelSpec) -> None:
        if cls.task is not None and spec.task is not cls.task:
            raise TaskMismatchError(
                f"model {spec.model_type!r} is registered for task {spec.task.value!r}, so {cls.__name__} "
                f"({cls.task.value}) cannot load it; use {FACTORY_NAMES[spec.task]} (or AutoModel) instead"
            )

    @classmethod
    def _get_spec(cls, catalog: ModelRegistry, model_type: str) -> ModelSpec:
        """``catalog.get(model_type)``; an unknown name lists only this factory's task's models."""
        try:
            return catalog.get(model_type)
        except UnknownModelError as err:
            if cls.task is None:
                raise
            valid = [s.model_type for s in catalog.list(cls.task)]
            raise UnknownModelError(model_type, valid, kind=f"{cls.task.short_name} model") from err

    @classmethod
    def available_models(cls) -> tuple[ModelSpec, ...]:
        """The registered specs this factory can load (imports nothing)."""
        return list_model_specs(cls.task)

    @classmethod
    def register(
        cls,
        config_class: type[ModelConfig],
        wrapper_class: type[AnySpeechModel],
        *,
        default_model_path: str | os.PathLike[str] | CheckpointSource | None = None,
        aliases: Iterable[str] = (),
        capabilities: Iterable[str] = (),
        architecture: str | None = None,
        default_for_task: bool = False,
        license: str | None = None,
        description: str = "",
        exist_ok: bool = False,
        registry: ModelRegistry | None = None,
    ) -> ModelSpec:
        """Register an extension's config and wrapper; only their import paths are stored.

        The model type is ``config_class.config_type``. After this call the model is found by
        :class:`AutoModel`, the task factory, :func:`list_model_specs` and ``voicehub models``
        (for the latter, register from a module the CLI imports, e.g. an entry-point plug-in).

        Args:
            config_class: a module-level :class:`~voicehub.registry.ModelConfig` subclass.
            wrapper_class: a module-level wrapper subclass of the factory's task base class.
            default_model_path: default checkpoint source (path, ``hf:``/``dist:`` string).
            aliases: other accepted names.
            capabilities: free-form tags.
            architecture: the ``ArchitectureSpec`` id of the native graph.
            default_for_task: make this the task's default model.
            license: SPDX id of the default weights.
            description: one line for listings.
            exist_ok: replace an existing registration of the same model type.
            registry: an isolated registry (tests); default: the process-wide catalog.

        Returns:
            The registered spec.

        Raises:
            RegistryError: for classes of the wrong kind, or a config the wrapper does not use.
            TaskMismatchError: when the wrapper serves another task than this factory.
            DuplicateRegistrationError: for name, alias or default collisions.
        """
        default_for_task = check_flag(default_for_task, name="default_for_task")
        exist_ok = check_flag(exist_ok, name="exist_ok")
        if not (isinstance(config_class, type) and issubclass(config_class, ModelConfig)):
            raise RegistryError(f"{cls.__name__}.register: {config_class!r} is not a ModelConfig subclass")
        if not (isinstance(wrapper_class, type) and issubclass(wrapper_class, PreTrainedSpeechModel)):
            raise RegistryError(
                f"{cls.__name__}.register: {wrapper_class!r} is not a PreTrainedSpeechModel subclass "
                f"(derive it from PreTrainedTTSModel, PreTrainedASRModel, PreTrainedVADModel or PreTrainedSVModel)"
            )
        wrapper_task = getattr(wrapper_class, "task", None)
        if not isinstance(wrapper_task, SpeechTask):
            raise RegistryError(f"{wrapper_class.__name__} declares no task; derive it from a task base class")
        task = cls.task if cls.task is not None else wrapper_task
        if wrapper_task is not task:
            raise TaskMismatchError(
                f"{wrapper_class.__name__} serves {wrapper_task.value!r}; register it with "
                f"{FACTORY_NAMES[wrapper_task]}, not {cls.__name__}"
            )
        if not issubclass(config_class, wrapper_class.config_class):
            raise RegistryError(
                f"{wrapper_class.__name__}.config_class is {wrapper_class.config_class.__name__}, "
                f"but {config_class.__name__} was given"
            )
        spec = ModelSpec.from_classes(
            config_class,
            wrapper_class,
            task=task,
            default_source=parse_source(default_model_path) if default_model_path is not None else None,
            aliases=aliases,
            capabilities=capabilities,
            architecture=architecture,
            default_for_task=default_for_task,
            license=license,
            description=description,
        )
        return _catalog(registry).register(spec, exist_ok=exist_ok)

    @classmethod
    def unregister(cls, model_type: str, *, registry: ModelRegistry | None = None) -> ModelSpec:
        """Remove a registration (and its aliases) of this factory's task.

        Raises:
            TaskMismatchError: for a model of another task.
            UnknownModelError: listing the registered model types.
        """
        catalog = _catalog(registry)
        cls._check_task(catalog.get(model_type))
        return catalog.unregister(model_type)

    @classmethod
    def resolve_spec(
        cls,
        source: SourceLike | None = None,
        *,
        model_type: str | None = None,
        config: ModelConfig | None = None,
        registry: ModelRegistry | None = None,
    ) -> ModelSpec:
        """Find the spec :meth:`from_pretrained` would load, importing no model module.

        Order: ``config.model_type``, then ``model_type``, then a Hub id whose weights a model ships
        (``ModelSpec.hub_ids``), then the source's ``config.json`` (a local directory's, or a Hub
        repository's, downloaded): VoiceHub's own names its ``model_type``; an upstream one (Hugging
        Face transformers: ``model_type``, ``architectures``) is matched against the models'
        ``upstream_model_types``; then (with no source) the task default. Nothing is guessed from
        the source's path or name.

        Raises:
            ConfigError: when ``config`` and ``model_type`` disagree, or nothing names the model.
            TaskMismatchError: for a model of another task, naming the right factory.
            UnknownModelError: for an unregistered model type, listing the valid ones.
        """
        catalog = _catalog(registry)
        source, model_type = _shipped_hub_source(source, model_type, config, catalog)
        saved = _source_document(source) if config is None and model_type is None else None
        return cls._resolve(source, model_type=model_type, config=config, catalog=catalog, saved=saved)

    @classmethod
    def _resolve(
        cls,
        source: SourceLike | None,
        *,
        model_type: str | None,
        config: ModelConfig | None,
        catalog: ModelRegistry,
        saved: tuple[dict[str, JSONValue], str] | None,
    ) -> ModelSpec:
        """:meth:`resolve_spec` with the local ``config.json`` already read (``saved``: document and path)."""
        if config is not None:
            if not isinstance(config, ModelConfig):
                raise ConfigError(f"config must be a ModelConfig, got {type(config).__name__}")
            spec = catalog.get(config.model_type)
            if model_type is not None and catalog.get(model_type).model_type != spec.model_type:
                raise ConfigError(
                    f"model_type={model_type!r} disagrees with config.model_type {config.model_type!r}; pass one"
                )
        elif model_type is not None:
            spec = cls._get_spec(catalog, model_type)
        elif saved is not None:
            document, where = saved
            upstream = catalog.upstream_spec_of(document)
            declared = document.get("model_type")
            if upstream is not None:
                spec = upstream
            elif "type" not in document and "architectures" in document:
                known = catalog.upstream_model_types()
                raise ConfigError(
                    f"{where} is an upstream config (model_type {declared!r}, architectures "
                    f"{document.get('architectures')!r}) that no registered model loads; models load these upstream "
                    f"types: {known or '(none)'}; pass model_type= to choose one"
                )
            elif not isinstance(declared, str):
                raise ConfigError(f"{where} has no 'model_type'; pass model_type= (one of {list(catalog.names())})")
            else:
                spec = catalog.get(declared)
        elif source is None and cls.task is not None:
            if not catalog.list(cls.task):
                have = sorted({s.task.short_name for s in catalog.list()})
                raise NoModelForTaskError(cls.task.value, have)
            spec = catalog.get_default(cls.task)
        else:
            what = f"the model type of {parse_source(source).to_string()!r}" if source is not None else "which model"
            valid = [s.model_type for s in catalog.list(cls.task)]
            raise ConfigError(f"cannot tell {what}; pass model_type= (one of {valid})")
        cls._check_task(spec)
        return spec

    @classmethod
    def _create(
        cls,
        source: SourceLike | None,
        *,
        model_type: str | None,
        device: DeviceLike,
        dtype: DTypeLike,
        lazy_load: bool,
        config: ModelConfig | None,
        torch_dtype: DTypeLike | None = None,
    ) -> AnySpeechModel:
        """The shared body of the factories' ``from_pretrained`` (see :meth:`AutoModel.from_pretrained`).

        ``device`` and ``dtype`` are turned into typed values here, once, before any model module
        is imported; a local ``config.json`` is read once.
        """
        requested_device = normalize_device(device)  # malformed requests fail before any model module is imported
        requested_dtype = dtype_request(dtype, torch_dtype)
        catalog = _catalog(None)
        source, model_type = _shipped_hub_source(source, model_type, config, catalog)
        saved = None
        if config is None:
            config_file = local_config_file(source)
            if config_file is not None:
                saved = _read_config_document(config_file)
            elif model_type is None:
                saved = _source_document(source)  # a Hub repository's config.json, downloaded
        spec = cls._resolve(
            source,
            model_type=model_type,
            config=config,
            catalog=catalog,
            saved=saved if model_type is None else None,
        )
        wrapper_class = spec.load_wrapper_class()
        if not (isinstance(wrapper_class, type) and issubclass(wrapper_class, PreTrainedSpeechModel)):
            raise RegistryError(
                f"model {spec.model_type!r}: wrapper {spec.wrapper!r} is not a PreTrainedSpeechModel subclass"
            )
        if wrapper_class.task is not spec.task:
            raise RegistryError(
                f"model {spec.model_type!r} is registered for {spec.task.value!r} but its wrapper "
                f"{wrapper_class.__name__} serves {wrapper_class.task.value!r}; fix the registration"
            )
        if config is None:
            upstream = saved is not None and catalog.upstream_spec_of(saved[0]) is not None
            if saved is not None and not upstream and ("model_type" in saved[0] or model_type is None):
                config = _config_from_document(*saved, model_type)
            else:
                # no config file, an upstream one (Hugging Face Whisper), or a foreign one (e.g. a
                # Hyperion checkpoint directory's config.json) next to an explicit model_type: the
                # model's default config
                config = _config_class(spec)()
        chosen = source if source is not None else spec.default_source
        model: AnySpeechModel = wrapper_class.from_pretrained(
            chosen, config=config, device=requested_device, dtype=requested_dtype, lazy_load=lazy_load
        )
        return model


class AutoModel(_BaseAutoModel):
    """Loads a model of any task; the spec's task picks the wrapper family.

    ``AutoModel.register(Config, Wrapper)`` registers under the wrapper's own task.
    """

    task: ClassVar[SpeechTask | None] = None

    @classmethod
    def from_pretrained(
        cls,
        source: SourceLike | None = None,
        *,
        model_type: str | None = None,
        device: DeviceLike = "auto",
        dtype: DTypeLike = "auto",
        lazy_load: bool = True,
        config: ModelConfig | None = None,
        torch_dtype: DTypeLike | None = None,
    ) -> AnySpeechModel:
        """Create the wrapper of a registered model; weights load on first use unless ``lazy_load=False``.

        Args:
            source: a checkpoint source: a local file or directory (a directory written by
                ``save_pretrained`` also carries the config), ``"hf:owner/name"`` or
                ``"owner/name"``, or ``"dist:<distribution>/<path>"``. ``None`` uses the model's
                registered default source. Without ``model_type`` the model comes from the
                source's ``config.json`` (see :meth:`resolve_spec`): VoiceHub's own, or an upstream
                (Hugging Face) one by its ``model_type``/``architectures``; a Hub id whose weights
                are shipped (``"openai/whisper-tiny.en"``, ``"openai/whisper-base"``) loads the
                shipped checkpoint offline.
            model_type: the registered model type or alias.
            device: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` or a :class:`~voicehub.core.Device`.
            dtype: ``"auto"``, ``"float32"``, ``"bfloat16"``, ``"float16"``, a :class:`~voicehub.core.DType`
                or a torch dtype.
            lazy_load: defer loading to the first inference call.
            config: a model config (its ``model_type`` selects the model).
            torch_dtype: an alias of ``dtype`` (transformers' older spelling); both given and
                different is a ``ConfigError``.

        Returns:
            The task wrapper (a :class:`~voicehub.modeling.PreTrainedSpeechModel` subclass); the
            task factories return their task's base class.

        Raises:
            TaskMismatchError: for a model of another task, before its module is imported.
            UnknownModelError: for an unknown ``model_type``, listing the valid ones.
            ConfigError: when the model type cannot be determined or disagrees with ``config``.
            DeviceError: for a malformed device or dtype, before anything is imported.
            TypeError: for any keyword this signature does not define.
        """
        lazy_load = check_flag(lazy_load, name="lazy_load")
        return cls._create(
            source,
            model_type=model_type,
            device=device,
            dtype=dtype,
            lazy_load=lazy_load,
            config=config,
            torch_dtype=torch_dtype,
        )


class _TaskAutoModel(_BaseAutoModel, Generic[WrapperT]):
    """A factory of one task; :meth:`from_pretrained` returns that task's wrapper base class."""

    @classmethod
    def wrapper_base(cls) -> type[WrapperT]:
        """The task base class every wrapper this factory loads derives from."""
        raise NotImplementedError(f"{cls.__name__} must implement wrapper_base()")

    @classmethod
    def from_pretrained(
        cls,
        source: SourceLike | None = None,
        *,
        model_type: str | None = None,
        device: DeviceLike = "auto",
        dtype: DTypeLike = "auto",
        lazy_load: bool = True,
        config: ModelConfig | None = None,
        torch_dtype: DTypeLike | None = None,
    ) -> WrapperT:
        """Create the wrapper of a registered model of this factory's task (see :meth:`AutoModel.from_pretrained`).

        Raises:
            TaskMismatchError: for a model of another task, before its module is imported.
            UnknownModelError, ConfigError, DeviceError, TypeError: as :meth:`AutoModel.from_pretrained`.
            RegistryError: for a registered wrapper that does not derive from the task's base class.
        """
        lazy_load = check_flag(lazy_load, name="lazy_load")
        model = cls._create(
            source,
            model_type=model_type,
            device=device,
            dtype=dtype,
            lazy_load=lazy_load,
            config=config,
            torch_dtype=torch_dtype,
        )
        base = cls.wrapper_base()
        if not isinstance(model, base):
            raise RegistryError(
                f"{type(model).__name__} serves {model.task.value!r} but does not derive from {base.__name__}; "
                f"derive the wrapper from {base.__name__}"
            )
        return model


class AutoModelForTextToSpeech(_TaskAutoModel[PreTrainedTTSModel[Any, Any, Any]]):
    """Loads text-to-speech models; refuses models of other tasks before importing them."""

    task: ClassVar[SpeechTask | None] = SpeechTask.TEXT_TO_SPEECH

    @classmethod
    def wrapper_base(cls) -> type[PreTrainedTTSModel[Any, Any, Any]]:
        """:class:`~voicehub.text_to_speech.PreTrainedTTSModel`."""
        return PreTrainedTTSModel


class AutoModelForSpeechRecognition(_TaskAutoModel[PreTrainedASRModel[Any, Any, Any]]):
    """Loads speech-recognition models; refuses models of other tasks before importing them."""

    task: ClassVar[SpeechTask | None] = SpeechTask.AUTOMATIC_SPEECH_RECOGNITION

    @classmethod
    def wrapper_base(cls) -> type[PreTrainedASRModel[Any, Any, Any]]:
        """:class:`~voicehub.speech_recognition.PreTrainedASRModel`."""
        return PreTrainedASRModel


class AutoModelForVoiceActivityDetection(_TaskAutoModel[PreTrainedVADModel[Any, Any, Any]]):
    """Loads voice-activity-detection models; refuses models of other tasks before importing them."""

    task: ClassVar[SpeechTask | None] = SpeechTask.VOICE_ACTIVITY_DETECTION

    @classmethod
    def wrapper_base(cls) -> type[PreTrainedVADModel[Any, Any, Any]]:
        """:class:`~voicehub.voice_activity.PreTrainedVADModel`."""
        return PreTrainedVADModel


class AutoModelForSpeakerVerification(_TaskAutoModel[PreTrainedSVModel[Any, Any, Any]]):
    """Loads speaker-verification models; refuses models of other tasks before importing them."""

    task: ClassVar[SpeechTask | None] = SpeechTask.SPEAKER_VERIFICATION

    @classmethod
    def wrapper_base(cls) -> type[PreTrainedSVModel[Any, Any, Any]]:
        """:class:`~voicehub.speaker_verification.PreTrainedSVModel`."""
        return PreTrainedSVModel


TASK_FACTORIES: Mapping[SpeechTask, type[_TaskAutoModel[Any]]] = {
    SpeechTask.TEXT_TO_SPEECH: AutoModelForTextToSpeech,
    SpeechTask.AUTOMATIC_SPEECH_RECOGNITION: AutoModelForSpeechRecognition,
    SpeechTask.VOICE_ACTIVITY_DETECTION: AutoModelForVoiceActivityDetection,
    SpeechTask.SPEAKER_VERIFICATION: AutoModelForSpeakerVerification,
}
"""The task factory of each task."""


__all__ = [
    "FACTORY_NAMES",
    "TASK_FACTORIES",
    "AutoConfig",
    "AutoModel",
    "AutoModelForSpeakerVerification",
    "AutoModelForSpeechRecognition",
    "AutoModelForTextToSpeech",
    "AutoModelForVoiceActivityDetection",
    "get_default_model_spec",
    "get_model_spec",
    "list_model_specs",
]
