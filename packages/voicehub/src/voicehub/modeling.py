"""The lifecycle every TTS, ASR, VAD and SV wrapper shares: :class:`PreTrainedSpeechModel`.

A wrapper pairs a closed model config, a closed inference-options config and a *runtime*: a
:class:`~voicehub.core.runtime.RuntimeBundle` (the graph module plus the named parts its family
needs). It implements the typed :class:`~voicehub.core.runtime.RuntimeHost` protocol, which is
all that the optimization host and the trainer use. Its lifecycle is::

    created --load()--> loaded for inference --load_for_training()--> loaded for training
       ^                        |  ^-------------- load() -------------------|
       +------- unload() -------+------------------------------------------+

* Construction reads no file and allocates no weights; ``device`` and ``dtype`` are turned into
  a :class:`~voicehub.core.Device` and a :class:`~voicehub.core.DType` once, here. The first
  inference call or an explicit :meth:`~PreTrainedSpeechModel.load` resolves the checkpoint source
  and builds the runtime, exactly once even when many threads call at the same time.
* A load that fails leaves the wrapper in ``created`` with no runtime, so it can be retried; the
  parts a family loads next to its module (a tokenizer, a saved back-end) arrive in the same
  bundle, so they are attached exactly when the load succeeds.
* Switching between inference and training is refused while an optimization plan is active in
  the current mode (restore it first), so inference-only state never reaches a training graph.
* Inference options are validated before any weights load; outputs are checked to be the task's record.

The task bases live in the task modules (:mod:`voicehub.text_to_speech`,
:mod:`voicehub.speech_recognition`, :mod:`voicehub.voice_activity`,
:mod:`voicehub.speaker_verification`). An integration subclasses one of them, sets
``config_class`` and ``options_class``, and implements ``_load_runtime`` plus the task hook
(``_generate``, ``_transcribe``, ``_detect`` or ``_embed``). Nothing here imports torch at import time.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeAlias, TypeVar

from voicehub._call_gate import CallGate
from voicehub._model_files import (
    _inference_context,
    _is_model_config,
    _ModeSwitchable,
    check_architecture_parts,
    dtype_request,
    read_saved_state_dict,
    write_state_dict,
)
from voicehub._recipe import rebuild, recipe_of
from voicehub.core.config import Config
from voicehub.core.device import (
    Device,
    DeviceLike,
    DType,
    DTypeLike,
    normalize_device,
    normalize_dtype,
    resolve_device,
    resolve_dtype,
)
from voicehub.core.errors import (
    ConfigError,
    InferenceOptionError,
    LifecycleError,
    OutputValidationError,
    UnknownModelError,
    check_flag,
)
from voicehub.core.files import (
    CONFIG_FILE_NAME,
    WEIGHTS_FILE_NAME,
    check_output_directory,
    write_directory,
)
from voicehub.core.lazy import import_optional
from voicehub.core.outputs import check_outputs
from voicehub.core.runtime import RuntimeBundle, RuntimeState
from voicehub.core.tasks import SpeechTask
from voicehub.errors import UnknownInferenceOptionError
from voicehub.optimization import (
    OptimizationContext,
    OptimizationHost,
    OptimizationPassRegistry,
    OptimizationResult,
    Plan,
)
from voicehub.registry import ARCHITECTURE_CATALOG, MODEL_CATALOG, ArchitectureSpec, ModelConfig
from voicehub.registry.checkpoints import CheckpointSource, LocalSource, parse_source
from voicehub.registry.errors import CheckpointNotFoundError

if TYPE_CHECKING:
    import torch

    from voicehub.optimization import OptimizationPass

ConfigT = TypeVar("ConfigT", bound=ModelConfig)
OptionsT = TypeVar("OptionsT", bound=Config)
RuntimeT = TypeVar("RuntimeT", bound=RuntimeBundle[object])
InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")

OPTIONS_FILE_NAME = "inference_options.json"
"""File holding the wrapper's default inference options inside a saved directory."""

SourceLike = str | os.PathLike[str] | CheckpointSource
"""A checkpoint source: a path, an ``hf:``/``dist:`` string, or a :class:`~voicehub.registry.CheckpointSource`."""


class PreTrainedSpeechModel(Generic[ConfigT, OptionsT, RuntimeT]):
    """Base class of every task wrapper; see the module docstring for the lifecycle.

    Type parameters: the model config, the inference options, and the runtime bundle
    (``RuntimeBundle[SileroVAD]``, or a family's typed subclass of it).

    Class attributes a subclass sets:
        config_class: the closed :class:`~voicehub.registry.ModelConfig` subclass.
        options_class: the closed :class:`~voicehub.core.Config` subclass of inference options.
        task: set by the task base classes.
        output_type: the normalized output record the task method returns.
        has_weights: ``False`` for a model without tensors (``save_pretrained`` then writes the
            config and options only).

    Hooks a subclass implements:
        ``_load_runtime(checkpoint, *, device, dtype, training)``: build and return the bundle.
        ``_prepare_for_inference(runtime)`` / ``_prepare_for_training(runtime)``: optional; the
        defaults call ``eval()`` / ``train()`` and set ``requires_grad_`` on the module.
        ``_save_weights(runtime, directory)``: optional; the default writes the module's state
        dict as ``model.safetensors``.
        ``_default_options()``: optional; default inference options (``options_class()``).

    Attributes:
        config: the model config.
        source: where the weights come from (``None`` for a model without weights).
        default_options: the options used when a call passes none.
    """

    task: ClassVar[SpeechTask]
    config_class: ClassVar[type[ModelConfig]]
    options_class: ClassVar[type[Config]]
    output_type: ClassVar[type]
    has_weights: ClassVar[bool] = True
    _task_method: ClassVar[str] = "inference"

    def __init__(
        self,
        config: ConfigT | None = None,
        *,
        source: SourceLike | None = None,
        device: DeviceLike = "auto",
        dtype: DTypeLike = "auto",
        options: OptionsT | None = None,
    ) -> None:
        """Create the wrapper without loading anything.

        Args:
            config: the model config; ``None`` uses ``config_class()``.
            source: the checkpoint source (see :func:`voicehub.registry.parse_source`).
            device: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` or a :class:`~voicehub.core.Device`.
            dtype: ``"auto"`` (float32), ``"float32"``, ``"bfloat16"``, ``"float16"``, a
                :class:`~voicehub.core.DType` or a ``torch.dtype``.
            options: default inference options; ``None`` uses :meth:`_default_options`.

        Raises:
            ConfigError: if ``config`` or ``options`` is not of the declared class.
            DeviceError: for a malformed device or dtype (nothing is allocated yet).
        """
        cls = type(self)
        if config is None:
            config = cls.config_class()  # type: ignore[assignment]
        if not isinstance(config, cls.config_class):
            raise ConfigError(
                f"{cls.__name__} needs a {cls.config_class.__name__}, got {type(config).__name__}; "
                f"build one with {cls.config_class.__name__}(...) or "
                f"AutoConfig.for_model({cls.config_class.config_type!r})",
                config_type=cls.config_class.config_type,
            )
        self.config: ConfigT = config
        self.source: CheckpointSource | None = parse_source(source) if source is not None else None
        self._requested_device: Device = normalize_device(device)
        self._requested_dtype: DType = normalize_dtype(dtype)
        self._device: Device | None = None
        self._lock = threading.RLock()
        self._calls = CallGate()  # task calls run together; plan changes and unload() alone
        self._runtime: RuntimeT | None = None
        self._state = RuntimeState.CREATED
        self._optimization = OptimizationHost(
            self, recovery=f"call unload() then load(), or build a new wrapper with {cls.__name__}.from_pretrained(...)"
        )
        self.default_options: OptionsT = self._check_options_instance(
            options if options is not None else self._default_options()
        )
        self._pending_plan: tuple[OptimizationPass, ...] | None = None  # from a pickled recipe: applied on load

    # ------------------------------------------------------------------ pickling (voicehub._recipe)
    def __reduce__(self) -> tuple[Callable[..., object], tuple[object, ...]]:
        """Pickle as a :class:`~voicehub._recipe.ModelRecipe`; unpickling gives a lazily loading wrapper.

        Raises:
            UnpicklableModelError: for a wrapper loaded for training, a tainted or unpicklable
                optimization plan, or task state that does not pickle (the message says which).
        """
        with self._lock:
            return rebuild, (recipe_of(self),)

    def _recipe_extras(self) -> dict[str, object]:
        """State a task base adds to the pickled recipe (default: none); see :meth:`_apply_recipe_extras`."""
        return {}

    def _apply_recipe_extras(self, extras: Mapping[str, object]) -> None:
        """Restore :meth:`_recipe_extras` into a wrapper rebuilt from a recipe (default: there are none).

        Raises:
            UnpicklableModelError: for state this wrapper does not know.
        """
        if extras:
            from voicehub.errors import UnpicklableModelError

            raise UnpicklableModelError(f"{type(self).__name__}: unknown pickled state {sorted(extras)}")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pretrained(
        cls,
        source: SourceLike | None = None,
        *,
        config: ConfigT | None = None,
        device: DeviceLike = "auto",
        dtype: DTypeLike = "auto",
        lazy_load: bool = True,
        torch_dtype: DTypeLike | None = None,
    ) -> Self:
        """Create a wrapper for a checkpoint; load it now only when ``lazy_load`` is false.

        Args:
            source: a checkpoint source; ``None`` uses the registered default of this model
                type. A local directory written by :meth:`save_pretrained` also supplies the
                config (unless ``config`` is given) and default options.
            config: the model config (overrides a saved one).
            device: see :meth:`__init__`.
            dtype: see :meth:`__init__`.
            lazy_load: defer loading to the first inference call (the default).
            torch_dtype: an alias of ``dtype`` (transformers' older spelling).

        Raises:
            ConfigError: for an unreadable or foreign saved config, or ``dtype`` and ``torch_dtype``
                that disagree.
            CheckpointNotFoundError: when ``lazy_load`` is false and the source does not resolve.
        """
        lazy_load = check_flag(lazy_load, name="lazy_load")
        dtype = dtype_request(dtype, torch_dtype)
        parsed = parse_source(source) if source is not None else cls.registered_default_source()
        options = None
        if isinstance(parsed, LocalSource):
            directory = Path(parsed.path).expanduser()
            if directory.is_dir() and (directory / CONFIG_FILE_NAME).is_file():
                # A config.json that names no model_type belongs to an upstream checkpoint (read once, only here).
                if config is None and _is_model_config(directory / CONFIG_FILE_NAME):
                    config = cls.config_class.from_pretrained(directory)  # type: ignore[assignment]
                options_file = directory / OPTIONS_FILE_NAME
                if options_file.is_file():
                    options = cls._read_options(options_file)
        model = cls(config, source=parsed, device=device, dtype=dtype, options=options)
        if not lazy_load:
            model.load()
        return model

    @classmethod
    def registered_default_source(cls) -> CheckpointSource | None:
        """The default checkpoint source of this wrapper's model type in the process catalog, if any."""
        try:
            spec = MODEL_CATALOG.get(cls.config_class.config_type)
        except UnknownModelError:
            return None
        return spec.default_source

    @classmethod
    def _read_options(cls, path: Path) -> OptionsT:
        try:
            return cls.options_class.from_json(path.read_text(encoding="utf-8"))  # type: ignore[return-value]
        except (ConfigError, ValueError) as err:
            raise ConfigError(f"{path}: {err}", config_type=cls.options_class.config_type) from err

    def _default_options(self) -> OptionsT:
        """Default inference options; subclasses may derive them from ``self.config``."""
        return self.options_class()  # type: ignore[return-value]

    def _check_options_instance(self, options: object) -> OptionsT:
        if not isinstance(options, self.options_class):
            raise InferenceOptionError(
                f"{type(self).__name__} options must be a {self.options_class.__name__}, got {type(options).__name__}"
            )
        return options  # type: ignore[return-value]

    # ------------------------------------------------------------------ state (the RuntimeHost protocol)
    @property
    def state(self) -> RuntimeState:
        """``created``, ``inference`` or ``training``."""
        return self._state

    @property
    def runtime(self) -> RuntimeT | None:
        """The loaded runtime bundle (``runtime.module`` is the graph), or ``None`` before loading."""
        return self._runtime

    @property
    def is_loaded(self) -> bool:
        """Whether a runtime is in memory (for inference or training)."""
        return self._runtime is not None

    @property
    def model_type(self) -> str:
        """The registered model type (the config's ``config_type``)."""
        return self.config.config_type

    @property
    def device(self) -> Device:
        """The device the runtime lives on once loaded; the requested device before that."""
        return self._device if self._device is not None else self._requested_device

    @property
    def dtype(self) -> torch.dtype:
        """The ``torch.dtype`` the model computes in: its graph's floating parameters' once loaded (an
        optimization pass may have changed it), the requested one before that (``"auto"``: float32)."""
        torch = import_optional("torch", purpose="reading a model's dtype")
        module = self._runtime.module if self._runtime is not None else None
        if isinstance(module, torch.nn.Module):
            for parameter in module.parameters():
                if parameter.is_floating_point():
                    return parameter.dtype  # type: ignore[no-any-return]
        requested = self._requested_dtype
        return getattr(torch, "float32" if requested is DType.AUTO else requested.value)  # type: ignore[no-any-return]

    def to(self, device: DeviceLike) -> Self:
        """Move the model to ``device`` (as ``torch.nn.Module.to`` does) and return it.

        A loaded runtime is moved now (its dtype kept); a lazy wrapper records the device, where
        its first load puts the weights. Waits for running task calls (calls started meanwhile
        wait for the move).

        Args:
            device: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` or a :class:`~voicehub.core.Device`.

        Returns:
            This wrapper.

        Raises:
            DeviceError: for a malformed device, one that is not available, or one the model's
                architecture is not verified on (the wrapper stays where it was).
            LifecycleError: while an optimization plan is active (its state may be tied to the
                device; restore it first).
        """
        requested = normalize_device(device)
        with self._calls.change(), self._lock:
            if self._runtime is None:
                self._requested_device = requested
                return self
            for mode in RuntimeState.loaded():
                if self._optimization.active(mode) is not None:
                    raise LifecycleError(
                        f"{type(self).__name__}.to({str(requested)!r}): an optimization plan is active in "
                        f"{mode.value!r} mode; call restore_optimization_plan(mode={mode.value!r}) first, then move"
                    )
            previous = self._requested_device
            self._requested_device = requested
            try:
                target = self._select_device()
                self._runtime = self._move_runtime(self._runtime, device=target, dtype=self.dtype)
            except BaseException:
                self._requested_device = previous
                raise
            self._device = target
            return self

    def architecture_spec(self) -> ArchitectureSpec | None:
        """The native architecture of this model, from the catalogs (``None`` if it has none)."""
        try:
            architecture = MODEL_CATALOG.get(self.model_type).architecture
        except UnknownModelError:
            return None
        if architecture is None:
            return None
        return ARCHITECTURE_CATALOG.get(architecture)

    # ------------------------------------------------------------------ lifecycle
    def load(self) -> Self:
        """Load for inference (first load, or switch back from training); idempotent.

        Raises:
            LifecycleError: if a training optimization plan is active (restore it first).
            CheckpointError: if the checkpoint is missing, corrupt or does not fit.
        """
        self._enter(RuntimeState.INFERENCE)
        return self

    def load_for_training(self) -> Self:
        """Load for training (first load, or switch from inference); idempotent.

        Raises:
            LifecycleError: if an inference optimization plan is active (restore it first).
            CheckpointError: if the checkpoint is missing, corrupt or does not fit.
        """
        self._enter(RuntimeState.TRAINING)
        return self

    def unload(self) -> None:
        """Drop the runtime and return to ``created`` (the next call loads again).

        An irreversible or tainted optimization plan is discarded with the runtime it changed:
        ``unload()`` then ``load()`` is the way back from it.

        Waits for running task calls to return (calls started meanwhile wait for it).

        Raises:
            LifecycleError: if a reversible optimization plan is active (restore it first).
        """
        with self._calls.change(), self._lock:
            blocking = self._optimization.blocking_unload()
            if blocking is not None:
                raise LifecycleError(
                    f"{type(self).__name__}: an optimization plan is active in {blocking.value!r} mode; "
                    f"call restore_optimization_plan(mode={blocking.value!r}) before unload()"
                )
            self._runtime = None
            self._device = None
            self._state = RuntimeState.CREATED

    def replace_module(self, module: object, *, state: RuntimeState) -> None:
        """Install ``module`` as the graph of the loaded bundle (the other parts stay).

        Used by the optimization host when a pass returns a new object, and on restore.

        Raises:
            LifecycleError: if the wrapper is not loaded in ``state``.
        """
        with self._lock:
            if self._runtime is None or self._state is not state:
                raise LifecycleError(
                    f"{type(self).__name__}: cannot install a {state.value} module while in state {self._state.value!r}"
                )
            self._runtime = self._runtime.with_module(module)

    def _enter(self, target: RuntimeState) -> RuntimeT:
        runtime = self._runtime
        if runtime is not None and self._state is target and self._pending_plan is None:  # fast path, no lock
            return runtime
        with self._lock:
            if self._runtime is not None and self._state is target:
                if self._pending_plan and target is RuntimeState.INFERENCE:
                    self._apply_pending_plan()
                return self._runtime
            self._optimization.check_mode_change(target)
            training = target is RuntimeState.TRAINING
            fresh = self._runtime is None
            runtime = self._build_runtime(training=training) if self._runtime is None else self._runtime
            try:
                if training:
                    self._prepare_for_training(runtime)
                else:
                    self._prepare_for_inference(runtime)
            except BaseException:
                if fresh:
                    self._device = None
                else:  # undo a half-done switch so the runtime matches the state still reported
                    with contextlib.suppress(Exception):
                        if training:
                            self._prepare_for_inference(runtime)
                        else:
                            self._prepare_for_training(runtime)
                raise
            self._runtime = runtime
            self._state = target
            if self._pending_plan and target is RuntimeState.INFERENCE:
                self._apply_pending_plan()
            return self._runtime

    def _apply_pending_plan(self) -> None:
        """Apply the plan carried by a pickled recipe, under the lock; a failure unloads and keeps it pending.

        While it is applied, ``_pending_plan`` is ``()``: other threads wait for the lock, this one
        passes through its own nested ``load()``.
        """
        plan, self._pending_plan = self._pending_plan, ()
        try:
            architecture = self.architecture_spec()
            self._optimization.apply(list(plan or ()), mode=RuntimeState.INFERENCE, architecture=architecture)
        except BaseException:
            self._pending_plan = plan
            self._runtime, self._device, self._state = None, None, RuntimeState.CREATED
            raise
        self._pending_plan = None

    def _build_runtime(self, *, training: bool) -> RuntimeT:
        device = self._select_device()
        dtype = resolve_dtype(self._requested_dtype, device)
        architecture = self.architecture_spec()
        if architecture is not None and self._requested_dtype is not DType.AUTO:
            architecture.require(dtype=self._requested_dtype)
        checkpoint = self._resolve_checkpoint()
        runtime = self._load_runtime(checkpoint, device=device, dtype=dtype, training=training)
        if not isinstance(runtime, RuntimeBundle):
            raise LifecycleError(
                f"{type(self).__name__}._load_runtime returned {type(runtime).__name__}; it must return a "
                f"RuntimeBundle (wrap the graph: RuntimeBundle(module=model))"
            )
        if architecture is not None:
            check_architecture_parts(type(self).__name__, architecture, runtime.module)
        runtime = self._move_runtime(runtime, device=device, dtype=dtype)
        self._device = device
        return runtime

    def _resolve_checkpoint(self) -> Path | None:
        """Resolve the source; a missing registered default names its install command and the alternative."""
        if self.source is None:
            return None
        try:
            return self.source.resolve()
        except CheckpointNotFoundError as err:
            if self.source != self.registered_default_source():
                raise
            raise CheckpointNotFoundError(
                f"{self.model_type}: the default weights are not available: {err}; or pass source=<local path or hub "
                f"id> of a {self.model_type} checkpoint (command line: --source PATH)",
                source=self.source.to_string(),
            ) from err

    def _select_device(self) -> Device:
        """Resolve the requested device against the hardware and the architecture's verified devices.

        ``"auto"`` picks the best available device the architecture has verified (falling back
        to the CPU); an explicit device must be verified.
        """
        architecture = self.architecture_spec()
        if self._requested_device.is_auto:
            device = resolve_device(self._requested_device)
            if architecture is not None and not architecture.supports(device=device):
                device = Device("cpu")
            return device
        device = resolve_device(self._requested_device)
        if architecture is not None:
            architecture.require(device=device)
        return device

    def _move_runtime(self, runtime: RuntimeT, *, device: Device, dtype: torch.dtype) -> RuntimeT:
        """Move a ``torch.nn.Module`` graph to ``device`` and floating ``dtype``; other graphs unchanged."""
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(runtime.module, torch.nn.Module):
            moved = runtime.module.to(device=device, dtype=dtype)
            return runtime if moved is runtime.module else runtime.with_module(moved)
        return runtime

    def _load_runtime(self, checkpoint: Path | None, *, device: Device, dtype: torch.dtype, training: bool) -> RuntimeT:
        """Build the runtime bundle from a resolved checkpoint.

        Args:
            checkpoint: the resolved file or directory (an upstream checkpoint, or a directory
                written by :meth:`save_pretrained`: see :meth:`load_saved_state_dict`), or
                ``None`` when the wrapper has no source.
            device: the concrete device.
            dtype: the ``torch.dtype`` to compute in.
            training: whether the load is for training (skip inference-only fusing).

        Returns:
            The bundle. The base class moves a ``torch.nn.Module`` graph to ``device``/``dtype``.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement _load_runtime()")

    def _prepare_for_inference(self, runtime: RuntimeT) -> None:
        """Put the runtime in inference mode (default: the module's ``eval()``, no gradients)."""
        module = runtime.module
        if isinstance(module, _ModeSwitchable):
            module.eval()
            module.requires_grad_(False)

    def _prepare_for_training(self, runtime: RuntimeT) -> None:
        """Put the runtime in training mode (default: the module's ``train()``, gradients on)."""
        module = runtime.module
        if isinstance(module, _ModeSwitchable):
            module.train()
            module.requires_grad_(True)

    def _inference_runtime(self) -> RuntimeT:
        """The runtime loaded for inference (loading it if needed).

        Raises:
            LifecycleError: while the wrapper is loaded for training.
        """
        if self._state is RuntimeState.TRAINING:
            raise LifecycleError(
                f"{type(self).__name__} is loaded for training; call load() to switch back to inference first"
            )
        return self._enter(RuntimeState.INFERENCE)

    # ------------------------------------------------------------------ optimization
    def available_optimization_passes(self) -> tuple[str, ...]:
        """The names of every registered optimization pass, sorted (imports no pass)."""
        return self._optimization.available_passes()

    def active_optimization(self, mode: RuntimeState | str = RuntimeState.INFERENCE) -> OptimizationResult | None:
        """The plan applied in ``mode`` (possibly tainted: ``result.tainted``), or ``None``."""
        return self._optimization.active(mode)

    def optimization_requires_reload(self, mode: RuntimeState | str = RuntimeState.INFERENCE) -> bool:
        """True when the plan active in ``mode`` is irreversible or tainted (``unload()`` discards it)."""
        return self._optimization.requires_reload(mode)

    def check_optimization_mode_change(self, target_mode: RuntimeState | str) -> None:
        """Refuse to move the runtime to ``target_mode`` while another mode's plan is active.

        Raises:
            OptimizationLifecycleError: (a ``LifecycleError``) naming the active plan and the fix.
        """
        self._optimization.check_mode_change(target_mode)

    def apply_optimization_plan(
        self,
        plan: Plan,
        *,
        mode: RuntimeState | str = RuntimeState.INFERENCE,
        context: OptimizationContext | None = None,
        registry: OptimizationPassRegistry | None = None,
    ) -> OptimizationResult:
        """Load the runtime for ``mode`` and apply ``plan`` to its module, transactionally, under the lock.

        ``plan="auto"`` applies exactly the passes this model's architecture records as verified
        (``ArchitectureSpec.optimization_passes``) that fit the device and dtype it is loaded in;
        see :func:`voicehub.optimization.select_verified_passes`.

        See :meth:`voicehub.optimization.OptimizationHost.apply` for the rules; the architecture's
        verified facts come from :meth:`architecture_spec`. Two threads cannot both find no active
        plan and apply one, and ``unload()`` cannot drop the runtime in between. The change waits
        for task calls running in other threads to return, and calls started meanwhile wait for
        it, so none runs on a half-converted module.

        Raises:
            OptimizationLifecycleError, OptimizationConfigurationError, OptimizationCompatibilityError,
            OptimizationProtocolError, OptimizationValidationError, OptimizationApplicationError:
            as :meth:`voicehub.optimization.OptimizationHost.apply`.
        """
        with self._calls.change(), self._lock:
            return self._optimization.apply(
                plan, mode=mode, context=context, registry=registry, architecture=self.architecture_spec()
            )

    def restore_optimization_plan(self, mode: RuntimeState | str = RuntimeState.INFERENCE) -> None:
        """Undo the plan active in ``mode`` and reinstall the original module, under the lock.

        Like :meth:`apply_optimization_plan`, waits for running task calls, and calls started
        meanwhile wait for it.

        Raises:
            OptimizationLifecycleError: if no plan is active in ``mode``.
            OptimizationRestoreError: if the plan is irreversible or tainted, or a restore fails.
        """
        with self._calls.change(), self._lock:
            self._optimization.restore(mode)

    # ------------------------------------------------------------------ options
    def resolve_options(self, options: OptionsT | None = None, **overrides: object) -> OptionsT:
        """Merge ``overrides`` into ``options`` (or the defaults) and validate the result.

        Called by every inference method before any weights are loaded.

        Raises:
            UnknownInferenceOptionError: (a ``TypeError``) naming unknown options and the valid ones.
            InferenceOptionError: for a value of the wrong type or out of range.
        """
        return self.resolve_options_for(self._task_method, options, overrides)

    def resolve_options_for(self, method: str, options: OptionsT | None, overrides: Mapping[str, object]) -> OptionsT:
        """:meth:`resolve_options` for another entry point (``stream``...), named in the messages.

        Args:
            method: the public method the options were passed to (``"stream"``).
            options: a whole options object, or ``None`` for the defaults.
            overrides: individual options.

        Raises:
            UnknownInferenceOptionError: naming ``Wrapper.method()``, the unknown and the valid options.
            InferenceOptionError: for a value of the wrong type or out of range.
        """
        base = self.default_options if options is None else self._check_options_instance(options)
        known = self.options_class.known_keys()
        unknown = set(overrides) - set(known)
        if unknown:
            raise UnknownInferenceOptionError(f"{type(self).__name__}.{method}", unknown, known)
        if not overrides:
            return base
        try:
            return base.replace(**overrides)
        except (ConfigError, TypeError, ValueError) as err:
            raise InferenceOptionError(f"{type(self).__name__}.{method}(): {err}") from err

    # ------------------------------------------------------------------ running
    def _run(
        self,
        hook: Callable[[RuntimeT, Sequence[InputT], OptionsT], Sequence[OutputT]],
        inputs: Sequence[InputT],
        options: OptionsT,
        expected: type[OutputT],
    ) -> list[OutputT]:
        """Run a task hook on the inference runtime and check it returned one ``expected`` per input.

        Raises:
            OutputValidationError: for a wrong count or type of outputs.
        """
        with self._calls.call():
            runtime = self._inference_runtime()
            with _inference_context():
                outputs = list(hook(runtime, inputs, options))
        producer = f"{type(self).__name__}.{self._task_method}"
        if len(outputs) != len(inputs):
            raise OutputValidationError(f"{producer} returned {len(outputs)} outputs for {len(inputs)} inputs")
        check_outputs(outputs, expected, producer=producer)
        return outputs

    # ------------------------------------------------------------------ saving
    def save_pretrained(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``config.json``, the default inference options and the weights into ``directory``.

        The wrapper is loaded first if needed. The destination is checked before anything is
        loaded or written; the files are written as one transaction
        (:func:`voicehub.core.files.write_directory`: staged beside the directory, then merged
        into it, removing what an earlier save wrote and this one does not), so a failure leaves
        nothing new behind. Files get ``0o666 & ~umask`` and directories ``0o777 & ~umask``. A
        model without weights (``has_weights = False``) saves its config and options only.
        Reload with ``AutoModel.from_pretrained(directory)`` or ``Wrapper.from_pretrained(directory)``.

        Returns:
            The directory.

        Raises:
            LifecycleError: while an optimization plan is active (its state is not portable).
            OutputPathError: if ``directory`` is a file, lies under a file, or cannot be
                written (checked first), or writing fails.
        """
        with self._lock:
            for mode in RuntimeState.loaded():
                if self._optimization.active(mode) is not None:
                    raise LifecycleError(
                        f"{type(self).__name__}: cannot save while an optimization plan is active in "
                        f"{mode.value!r} mode; call restore_optimization_plan(mode={mode.value!r}) first"
                    )
            what = f"{type(self).__name__}.save_pretrained() directory"
            target = check_output_directory(directory, what=what)
            runtime = self._runtime if self._runtime is not None else self._enter(RuntimeState.INFERENCE)

            def write(staging: Path) -> None:
                self.config.save_pretrained(staging)
                (staging / OPTIONS_FILE_NAME).write_text(self.default_options.to_json() + "\n", encoding="utf-8")
                if self.has_weights:
                    self._save_weights(runtime, staging)

            return write_directory(target, write, what=what, record=True)

    def _save_weights(self, runtime: RuntimeT, directory: Path) -> None:
        """Write the runtime's weights into ``directory`` (default: the module's state dict as ``model.safetensors``).

        Raises:
            CheckpointError: for a module without a ``state_dict`` (a wrapper author overrides
                this hook, or sets ``has_weights = False`` for a model without weights).
        """
        write_state_dict(runtime.module, directory, owner=type(self).__name__)

    @staticmethod
    def load_saved_state_dict(checkpoint: Path | None) -> dict[str, torch.Tensor] | None:
        """Read the state dict of a directory written by :meth:`save_pretrained`.

        The file is read by :func:`voicehub.core.checkpoint.read_safetensors` (the one reader every
        integration uses) and its values checked by :func:`voicehub.core.checkpoint.check_tensor_values`.

        Returns:
            ``name -> tensor`` (on the CPU), or ``None`` when ``checkpoint`` is not such a directory.

        Raises:
            CheckpointError: naming the file when it is truncated or corrupt, or holds tensors with
                NaN or infinite values.
        """
        return read_saved_state_dict(checkpoint)

    def __repr__(self) -> str:
        source = self.source.to_string() if self.source is not None else None
        return f"{type(self).__name__}(model_type={self.model_type!r}, state={self._state.value!r}, source={source!r})"


AnySpeechModel: TypeAlias = PreTrainedSpeechModel[Any, Any, Any]
"""Any task wrapper, whatever its config, options and runtime types (the generics are invariant)."""


__all__ = [
    "OPTIONS_FILE_NAME",
    "WEIGHTS_FILE_NAME",
    "AnySpeechModel",
    "ConfigT",
    "OptionsT",
    "PreTrainedSpeechModel",
    "RuntimeT",
    "SourceLike",
    "dtype_request",
]
