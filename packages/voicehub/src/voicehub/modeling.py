"""Task wrapper base classes: one guarded lifecycle for every TTS, ASR, VAD and SV integration.

A wrapper pairs a closed model config, a closed inference-options config and a *runtime* (the
object that computes, usually a ``torch.nn.Module``). Its lifecycle is::

    created --load()--> loaded for inference --load_for_training()--> loaded for training
       ^                        |  ^-------------- load() -------------------|
       +------- unload() -------+------------------------------------------+

* Construction reads no file and allocates no weights; the first inference call or an explicit
  :meth:`~PreTrainedSpeechModel.load` resolves the checkpoint source and builds the runtime,
  exactly once even when many threads call at the same time.
* A load that fails leaves the wrapper in ``created`` with no runtime, so it can be retried.
* Switching between inference and training is refused while an optimization plan is active in
  the current mode (restore it first), so inference-only state never reaches a training graph.
* Inference options are validated against the wrapper's options class before any weights load.
* Outputs are checked to be the task's normalized record type.

An integration subclasses one of :class:`PreTrainedTTSModel`, :class:`PreTrainedASRModel`,
:class:`PreTrainedVADModel` or :class:`PreTrainedSVModel`, sets ``config_class`` and
``options_class``, and implements ``_load_runtime`` plus the task hook (``_generate``,
``_transcribe``, ``_detect`` or ``_embed``). Nothing here imports torch at import time.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar, overload

import numpy as np

from voicehub.core import strict_json
from voicehub.core.audio import AudioLike, Waveform, load_audio_batch
from voicehub.core.config import CONFIG_FILE_NAME, Config
from voicehub.core.device import normalize_device, normalize_dtype, resolve_device, resolve_dtype
from voicehub.core.errors import (
    CheckpointError,
    ConfigError,
    InferenceOptionError,
    LifecycleError,
    OutputPathError,
    OutputValidationError,
    SampleRateError,
    UnknownModelError,
)
from voicehub.core.files import check_output_directory, created_parents, default_file_mode, normalize_modes
from voicehub.core.lazy import import_optional
from voicehub.core.outputs import ASROutput, SpeakerOutput, TTSOutput, VADOutput, VerificationOutput, check_outputs
from voicehub.core.tasks import RuntimeState, SpeechTask
from voicehub.errors import UnknownInferenceOptionError
from voicehub.optimization import (
    OptimizationContext,
    OptimizationHost,
    OptimizationMode,
    OptimizationPassRegistry,
    OptimizationResult,
    Plan,
)
from voicehub.registry import ARCHITECTURE_CATALOG, MODEL_CATALOG, ArchitectureSpec, ModelConfig
from voicehub.registry.checkpoints import CheckpointSource, LocalSource, parse_source

ConfigT = TypeVar("ConfigT", bound=ModelConfig)
OptionsT = TypeVar("OptionsT", bound=Config)
OutputT = TypeVar("OutputT")

OPTIONS_FILE_NAME = "inference_options.json"
"""File holding the wrapper's default inference options inside a saved directory."""

WEIGHTS_FILE_NAME = "model.safetensors"
"""File holding the runtime's state dict inside a saved directory (safetensors format)."""

SourceLike = str | os.PathLike[str] | CheckpointSource


SAVED_ENTRIES_FILE_NAME = ".voicehub-saved.json"
"""Hidden file listing the entries a ``save_pretrained`` wrote, so the next save into the same
directory removes the ones it no longer writes (a detached back-end must not come back)."""


def _move_into_place(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target``, or move its entries into an existing ``target`` directory.

    Entries of ``target`` with the same names are replaced (a directory entry as a whole);
    entries an earlier save wrote (listed in ``.voicehub-saved.json``) that this save does not
    write are removed; other entries are kept.
    """
    written = sorted(item.name for item in staging.iterdir())
    (staging / SAVED_ENTRIES_FILE_NAME).write_text(strict_json.dumps(written) + "\n", encoding="utf-8")
    os.chmod(staging / SAVED_ENTRIES_FILE_NAME, default_file_mode())
    if not target.exists():
        os.rename(staging, target)
        return
    previous: list[str] = []
    with contextlib.suppress(OSError, ValueError):
        listed = strict_json.loads((target / SAVED_ENTRIES_FILE_NAME).read_text(encoding="utf-8"))
        previous = [name for name in listed if isinstance(name, str) and "/" not in name and name not in (".", "..")]
    for item in sorted(staging.iterdir()):
        destination = target / item.name
        if destination.is_dir() and not destination.is_symlink():
            retired = Path(tempfile.mkdtemp(prefix=f".{item.name}.voicehub-old-", dir=target))
            os.replace(destination, retired / item.name)
            os.replace(item, destination)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(item, destination)
    for name in sorted(set(previous) - set(written)):
        stale = target / name
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


@contextlib.contextmanager
def _inference_context() -> Iterator[None]:
    """``torch.inference_mode()`` when torch is already imported; nothing otherwise."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    with torch.inference_mode():
        yield


class PreTrainedSpeechModel(OptimizationHost, Generic[ConfigT, OptionsT]):
    """Base class of every task wrapper; see the module docstring for the lifecycle.

    Class attributes a subclass sets:
        config_class: the closed :class:`~voicehub.registry.ModelConfig` subclass.
        options_class: the closed :class:`~voicehub.core.Config` subclass of inference options.
        task: set by the task base classes.
        output_type: the normalized output record the task method returns.

    Hooks a subclass implements:
        ``_load_runtime(checkpoint, *, device, dtype, training)``: build and return the runtime.
        ``_prepare_for_inference(runtime)`` / ``_prepare_for_training(runtime)``: optional; the
        defaults call ``eval()`` / ``train()`` when the runtime has them.
        ``_default_options()``: optional; default inference options (``options_class()``).

    Attributes:
        config: the model config.
        source: where the weights come from (``None`` for a model without weights).
    """

    task: ClassVar[SpeechTask]
    config_class: ClassVar[type[ModelConfig]]
    options_class: ClassVar[type[Config]]
    output_type: ClassVar[type]

    def __init__(
        self,
        config: ConfigT | None = None,
        *,
        source: SourceLike | None = None,
        device: str = "auto",
        dtype: Any = "auto",
        options: OptionsT | None = None,
    ) -> None:
        """Create the wrapper without loading anything.

        Args:
            config: the model config; ``None`` uses ``config_class()``.
            source: the checkpoint source (see :func:`voicehub.registry.parse_source`).
            device: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
            dtype: ``"auto"`` (float32), ``"float32"``, ``"bfloat16"``, ``"float16"`` or a torch dtype.
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
        self._requested_device = normalize_device(device)
        self._requested_dtype = normalize_dtype(dtype)
        self._device: str | None = None
        self._lock = threading.RLock()
        self._runtime: Any = None
        self._state = RuntimeState.CREATED
        self.default_options: OptionsT = self._check_options_instance(
            options if options is not None else self._default_options()
        )

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pretrained(
        cls,
        source: SourceLike | None = None,
        *,
        config: ConfigT | None = None,
        device: str = "auto",
        dtype: Any = "auto",
        lazy_load: bool = True,
    ) -> Self:
        """Create a wrapper for a checkpoint; load it now only when ``lazy_load`` is false.

        Args:
            source: a checkpoint source; ``None`` uses the registered default of this model
                type. A local directory written by :meth:`save_pretrained` also supplies the
                config and default options.
            config: the model config (overrides a saved one).
            device: see :meth:`__init__`.
            dtype: see :meth:`__init__`.
            lazy_load: defer loading to the first inference call (the default).

        Raises:
            ConfigError: for an unreadable or foreign saved config.
            CheckpointNotFoundError: when ``lazy_load`` is false and the source does not resolve.
        """
        parsed = parse_source(source) if source is not None else cls.registered_default_source()
        options = None
        if isinstance(parsed, LocalSource):
            directory = Path(parsed.path).expanduser()
            if directory.is_dir() and (directory / CONFIG_FILE_NAME).is_file():
                if config is None:
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

    # ------------------------------------------------------------------ state
    @property
    def state(self) -> RuntimeState:
        """``created``, ``inference`` or ``training``."""
        return self._state

    @property
    def is_loaded(self) -> bool:
        """Whether a runtime is in memory (for inference or training)."""
        return self._runtime is not None

    @property
    def runtime(self) -> Any:
        """The loaded runtime (usually a ``torch.nn.Module``), or ``None`` before loading."""
        return self._runtime

    @property
    def model_type(self) -> str:
        """The registered model type (the config's ``config_type``)."""
        return self.config.config_type

    @property
    def device(self) -> str:
        """The device the runtime lives on once loaded; the requested device before that."""
        return self._device if self._device is not None else self._requested_device

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

        Raises:
            LifecycleError: if a reversible optimization plan is active (restore it first).
        """
        with self._lock:
            for mode in OptimizationMode:
                if self.active_optimization(mode) is not None and not self.optimization_requires_reload(mode):
                    raise LifecycleError(
                        f"{type(self).__name__}: an optimization plan is active in {mode.value!r} mode; "
                        f"call restore_optimization_plan(mode={mode.value!r}) before unload()"
                    )
            self._runtime = None
            self._device = None
            self._state = RuntimeState.CREATED

    def apply_optimization_plan(
        self,
        plan: Plan,
        *,
        mode: OptimizationMode | str = OptimizationMode.INFERENCE,
        context: OptimizationContext | None = None,
        registry: OptimizationPassRegistry | None = None,
    ) -> OptimizationResult:
        """:meth:`OptimizationHost.apply_optimization_plan` under the wrapper's lock.

        Two threads cannot both find no active plan and apply one, and ``unload()`` cannot drop
        the runtime between the plan's application and its record.
        """
        with self._lock:
            return super().apply_optimization_plan(plan, mode=mode, context=context, registry=registry)

    def restore_optimization_plan(self, mode: OptimizationMode | str = OptimizationMode.INFERENCE) -> None:
        """:meth:`OptimizationHost.restore_optimization_plan` under the wrapper's lock."""
        with self._lock:
            super().restore_optimization_plan(mode)

    def _optimization_recovery(self) -> str:
        name = type(self).__name__
        return f"call unload() then load(), or build a new wrapper with {name}.from_pretrained(...)"

    def _enter(self, target: RuntimeState) -> Any:
        runtime = self._runtime
        if runtime is not None and self._state is target:  # fast path, no lock
            return runtime
        with self._lock:
            if self._runtime is not None and self._state is target:
                return self._runtime
            self.check_optimization_mode_change(OptimizationMode(target.value))
            training = target is RuntimeState.TRAINING
            fresh = self._runtime is None
            runtime = self._build_runtime(training=training) if fresh else self._runtime
            try:
                runtime = self._prepare_for_training(runtime) if training else self._prepare_for_inference(runtime)
            except BaseException:
                if fresh:
                    self._device = None
                else:  # undo a half-done switch so the runtime matches the state still reported
                    with contextlib.suppress(Exception):
                        self._prepare_for_inference(runtime) if training else self._prepare_for_training(runtime)
                raise
            self._runtime = runtime
            self._state = target
            return runtime

    def _build_runtime(self, *, training: bool) -> Any:
        device = self._select_device()
        dtype = resolve_dtype(self._requested_dtype, device.split(":")[0])
        architecture = self.architecture_spec()
        if architecture is not None and self._requested_dtype != "auto":
            architecture.require(dtype=self._requested_dtype)
        checkpoint = self.source.resolve() if self.source is not None else None
        runtime = self._load_runtime(checkpoint, device=device, dtype=dtype, training=training)
        if runtime is None:
            raise LifecycleError(f"{type(self).__name__}._load_runtime returned None; it must return the runtime")
        runtime = self._move_runtime(runtime, device=device, dtype=dtype)
        self._device = device
        return runtime

    def _select_device(self) -> str:
        """Resolve the requested device against the hardware and the architecture's verified devices.

        ``"auto"`` picks the best available device the architecture has verified (falling back
        to the CPU); an explicit device must be verified.
        """
        architecture = self.architecture_spec()
        if self._requested_device == "auto":
            device = resolve_device("auto")
            if architecture is not None and not architecture.supports(device=device):
                device = "cpu"
            return device
        device = resolve_device(self._requested_device)
        if architecture is not None:
            architecture.require(device=device)
        return device

    def _move_runtime(self, runtime: Any, *, device: str, dtype: Any) -> Any:
        """Move a ``torch.nn.Module`` runtime to ``device`` and floating ``dtype``; others unchanged."""
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(runtime, torch.nn.Module):
            return runtime.to(device=device, dtype=dtype)
        return runtime

    def _load_runtime(self, checkpoint: Path | None, *, device: str, dtype: Any, training: bool) -> Any:
        """Build the runtime from a resolved checkpoint.

        Args:
            checkpoint: the resolved file or directory (an upstream checkpoint, or a directory
                written by :meth:`save_pretrained`: see :meth:`load_saved_state_dict`), or
                ``None`` when the wrapper has no source.
            device: the concrete torch device string.
            dtype: the ``torch.dtype`` to compute in.
            training: whether the load is for training (skip inference-only fusing).

        Returns:
            The runtime. The base class moves a ``torch.nn.Module`` to ``device``/``dtype``.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement _load_runtime()")

    def _prepare_for_inference(self, runtime: Any) -> Any:
        """Put the runtime in inference mode (default: ``eval()`` and no gradients)."""
        if callable(getattr(runtime, "eval", None)):
            runtime.eval()
        if callable(getattr(runtime, "requires_grad_", None)):
            runtime.requires_grad_(False)
        return runtime

    def _prepare_for_training(self, runtime: Any) -> Any:
        """Put the runtime in training mode (default: ``train()`` and gradients on)."""
        if callable(getattr(runtime, "train", None)):
            runtime.train()
        if callable(getattr(runtime, "requires_grad_", None)):
            runtime.requires_grad_(True)
        return runtime

    def _inference_runtime(self) -> Any:
        if self._state is RuntimeState.TRAINING:
            raise LifecycleError(
                f"{type(self).__name__} is loaded for training; call load() to switch back to inference first"
            )
        return self._enter(RuntimeState.INFERENCE)

    # ------------------------------------------------------------------ optimization hooks
    def _optimization_runtime(self, mode: OptimizationMode) -> object:
        return self._enter(RuntimeState(mode.value))

    def _set_optimization_runtime(self, mode: OptimizationMode, runtime: object) -> None:
        with self._lock:
            if self._state.value != mode.value:
                raise LifecycleError(
                    f"{type(self).__name__}: cannot install a {mode.value} runtime while in state {self._state.value!r}"
                )
            self._runtime = runtime

    def _optimization_architecture(self) -> ArchitectureSpec | None:
        return self.architecture_spec()

    # ------------------------------------------------------------------ options
    def resolve_options(self, options: OptionsT | None = None, **overrides: Any) -> OptionsT:
        """Merge ``overrides`` into ``options`` (or the defaults) and validate the result.

        Called by every inference method before any weights are loaded.

        Raises:
            UnknownInferenceOptionError: (a ``TypeError``) naming unknown options and the valid ones.
            InferenceOptionError: for a value of the wrong type or out of range.
        """
        return self.resolve_options_for(self._task_method, options, overrides)

    def resolve_options_for(self, method: str, options: OptionsT | None, overrides: dict[str, Any]) -> OptionsT:
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

    _task_method: ClassVar[str] = "inference"

    # ------------------------------------------------------------------ running
    def _run(
        self,
        hook: Callable[[Any, Any, OptionsT], Sequence[OutputT]],
        inputs: Sequence[Any],
        options: OptionsT,
        expected: type,
    ) -> list[OutputT]:
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
        loaded or written; files are written to a staging directory beside it and moved into
        place, so a failure leaves nothing new behind (no partial set, no empty directory, no
        created parents). Files get ``0o666 & ~umask`` and directories ``0o777 & ~umask``. A
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
            for mode in OptimizationMode:
                if self.active_optimization(mode) is not None:
                    raise LifecycleError(
                        f"{type(self).__name__}: cannot save while an optimization plan is active in "
                        f"{mode.value!r} mode; call restore_optimization_plan(mode={mode.value!r}) first"
                    )
            what = f"{type(self).__name__}.save_pretrained() directory"
            target = check_output_directory(directory, what=what)
            runtime = self._runtime if self._runtime is not None else self._enter(RuntimeState.INFERENCE)
            with created_parents(target.parent, what=what, destination=target):
                try:
                    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.voicehub-save-", dir=target.parent))
                except OSError as err:
                    raise OutputPathError(f"{what} {target}: {err.strerror or err}", path=target) from err
                try:
                    try:
                        self.config.save_pretrained(staging)
                        (staging / OPTIONS_FILE_NAME).write_text(
                            self.default_options.to_json() + "\n", encoding="utf-8"
                        )
                        if self.has_weights:
                            self._save_weights(runtime, staging)
                        normalize_modes(staging)
                        _move_into_place(staging, target)
                    except OSError as err:
                        if isinstance(err, OutputPathError):
                            raise
                        raise OutputPathError(
                            f"{what} {target}: cannot write ({err.strerror or err})", path=target
                        ) from err
                finally:
                    shutil.rmtree(staging, ignore_errors=True)
            return target

    has_weights: ClassVar[bool] = True
    """Whether the runtime carries weights to save; a model without tensors (a rule-based or C
    detector) sets ``False`` and ``save_pretrained`` writes its config and options only."""

    def _save_weights(self, runtime: Any, directory: Path) -> None:
        """Write the runtime's weights into ``directory`` (default: the state dict as ``model.safetensors``).

        Raises:
            CheckpointError: for a runtime without a ``state_dict`` (a wrapper author overrides
                this hook, or sets ``has_weights = False`` for a model without weights).
        """
        state_dict = getattr(runtime, "state_dict", None)
        if not callable(state_dict):
            raise CheckpointError(
                f"{type(self).__name__}: the runtime {type(runtime).__name__} has no state_dict(); "
                f"override _save_weights() to save it, or set has_weights = False if the model has no weights"
            )
        safetensors_torch = import_optional("safetensors.torch", purpose="saving weights")
        tensors = {name: tensor.detach().cpu().contiguous() for name, tensor in state_dict().items()}
        safetensors_torch.save_file(tensors, str(directory / WEIGHTS_FILE_NAME), metadata={"format": "pt"})

    @staticmethod
    def load_saved_state_dict(checkpoint: Path | None) -> dict[str, Any] | None:
        """Read the state dict of a directory written by :meth:`save_pretrained`.

        Returns:
            ``name -> tensor`` (on the CPU), or ``None`` when ``checkpoint`` is not such a directory.
        """
        if checkpoint is None or not checkpoint.is_dir() or not (checkpoint / WEIGHTS_FILE_NAME).is_file():
            return None
        safetensors_torch = import_optional("safetensors.torch", purpose="loading saved weights")
        loaded: dict[str, Any] = safetensors_torch.load_file(str(checkpoint / WEIGHTS_FILE_NAME))
        return loaded

    def __repr__(self) -> str:
        source = self.source.to_string() if self.source is not None else None
        return f"{type(self).__name__}(model_type={self.model_type!r}, state={self._state.value!r}, source={source!r})"


class PreTrainedAudioModel(PreTrainedSpeechModel[ConfigT, OptionsT]):
    """Base of wrappers whose input is audio (ASR, VAD, SV).

    Inputs: a path (wav, flac, ogg, mp3), a NumPy array or tensor with ``sample_rate=``, a
    ``(array, sample_rate)`` tuple, a :class:`~voicehub.core.Waveform`, or a ``list`` of these
    (a batch, answered with a list). Audio at a rate the model does not support is resampled to
    its first supported rate on purpose.
    """

    @property
    def supported_sample_rates(self) -> tuple[int, ...]:
        """Sample rates in Hz the runtime accepts, preferred first (default: ``config.sample_rate``).

        An empty tuple means any rate.
        """
        rate = getattr(self.config, "sample_rate", None)
        return (rate,) if isinstance(rate, int) else ()

    def prepare_audio(
        self, audio: AudioLike | Sequence[AudioLike], *, sample_rate: int | None = None
    ) -> tuple[list[Waveform], bool]:
        """Decode, downmix and (if needed) resample the inputs.

        Returns:
            ``(waveforms, is_batch)``.

        Raises:
            AudioError: for unusable audio (see :func:`voicehub.core.load_audio`).
            SampleRateError: for an array without ``sample_rate``.
        """
        waveforms, is_batch = load_audio_batch(audio, sample_rate=sample_rate)
        return self._to_supported_rate(waveforms), is_batch

    def _to_supported_rate(self, waveforms: list[Waveform]) -> list[Waveform]:
        """Resample each waveform at an unsupported rate to the first supported rate."""
        rates = self.supported_sample_rates
        if not rates:
            return waveforms
        return [w if w.sample_rate in rates else w.with_sample_rate(rates[0]) for w in waveforms]


class PreTrainedVADModel(PreTrainedAudioModel[ConfigT, OptionsT]):
    """Base of voice-activity-detection wrappers; implement ``_detect``.

    Inputs at a rate outside :attr:`supported_sample_rates` are resampled to the first supported
    rate, or, with ``resamples_in_detect = True``, left for the wrapper's ``_detect`` to resample
    (so each output can record the rate of its input). A config with ``resample = False`` makes
    such inputs an error instead.
    """

    task: ClassVar[SpeechTask] = SpeechTask.VOICE_ACTIVITY_DETECTION
    output_type: ClassVar[type] = VADOutput
    _task_method: ClassVar[str] = "detect"
    resamples_in_detect: ClassVar[bool] = False
    """Whether ``_detect`` resamples itself (``prepare_audio`` then only decodes and downmixes)."""

    def prepare_audio(
        self, audio: AudioLike | Sequence[AudioLike], *, sample_rate: int | None = None
    ) -> tuple[list[Waveform], bool]:
        """Decode, downmix, and resample unless ``resamples_in_detect``.

        Raises:
            SampleRateError: for audio at an unsupported rate when ``config.resample`` is false.
            AudioError: for unusable audio.
        """
        waveforms, is_batch = load_audio_batch(audio, sample_rate=sample_rate)
        if not getattr(self.config, "resample", True):
            for waveform in waveforms:
                self.check_input_rate(waveform.sample_rate, waveform.source)
        return (waveforms if self.resamples_in_detect else self._to_supported_rate(waveforms)), is_batch

    def check_input_rate(self, sample_rate: int, source: str) -> None:
        """Refuse a rate outside :attr:`supported_sample_rates` (used when resampling is off).

        Raises:
            SampleRateError: naming both the rate given and the supported ones.
        """
        rates = self.supported_sample_rates
        if rates and sample_rate not in rates:
            raise SampleRateError(
                f"{source}: {type(self).__name__} runs at {list(rates)} Hz, got {sample_rate} Hz and resampling is "
                f"off ({type(self.config).__name__}(resample=False)); resample the audio or enable resample",
                expected=rates,
                actual=sample_rate,
                source=source,
            )

    def check_stream_rate(self, sample_rate: object) -> int:
        """Validate the ``sample_rate`` given to ``stream()``.

        Returns:
            The rate in Hz.

        Raises:
            SampleRateError: for a non-positive or non-integer rate, or an unsupported one when
                resampling is off.
        """
        if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or sample_rate <= 0:
            raise SampleRateError(f"stream(): sample_rate must be a positive int in Hz, got {sample_rate!r}")
        if not getattr(self.config, "resample", True):
            self.check_input_rate(sample_rate, "stream")
        return sample_rate

    @overload
    def detect(
        self,
        audio: list[Any],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> list[VADOutput]: ...

    @overload
    def detect(
        self,
        audio: AudioLike | Sequence[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> VADOutput: ...

    def detect(
        self,
        audio: AudioLike | Sequence[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> VADOutput | list[VADOutput]:
        """Find the speech segments of one input or a batch.

        Args:
            audio: see :class:`PreTrainedAudioModel`.
            sample_rate: rate in Hz of array inputs.
            options: inference options replacing the defaults.
            **overrides: individual options (validated against ``options_class`` before loading).

        Returns:
            A :class:`~voicehub.core.VADOutput`, or a list of them for a list input.

        Raises:
            UnknownInferenceOptionError: for an unknown option (a ``TypeError``).
            InferenceOptionError, AudioError, SampleRateError: for invalid options or audio.
        """
        resolved = self.resolve_options(options, **overrides)
        waveforms, is_batch = self.prepare_audio(audio, sample_rate=sample_rate)
        outputs = self._run(self._detect, waveforms, resolved, VADOutput)
        return outputs if is_batch else outputs[0]

    def _detect(self, runtime: Any, waveforms: Sequence[Waveform], options: OptionsT) -> Sequence[VADOutput]:
        """Return one :class:`VADOutput` per waveform (run under ``torch.inference_mode``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _detect()")


class PreTrainedASRModel(PreTrainedAudioModel[ConfigT, OptionsT]):
    """Base of speech-recognition wrappers; implement ``_transcribe``."""

    task: ClassVar[SpeechTask] = SpeechTask.AUTOMATIC_SPEECH_RECOGNITION
    output_type: ClassVar[type] = ASROutput
    _task_method: ClassVar[str] = "transcribe"

    @overload
    def transcribe(
        self,
        audio: list[Any],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> list[ASROutput]: ...

    @overload
    def transcribe(
        self,
        audio: AudioLike | Sequence[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> ASROutput: ...

    def transcribe(
        self,
        audio: AudioLike | Sequence[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> ASROutput | list[ASROutput]:
        """Transcribe one input or a batch.

        Args:
            audio: see :class:`PreTrainedAudioModel`.
            sample_rate: rate in Hz of array inputs.
            options: inference options replacing the defaults.
            **overrides: individual options (validated before loading).

        Returns:
            An :class:`~voicehub.core.ASROutput`, or a list of them for a list input.

        Raises:
            UnknownInferenceOptionError: for an unknown option (a ``TypeError``).
            InferenceOptionError, AudioError, SampleRateError: for invalid options or audio.
        """
        resolved = self.resolve_options(options, **overrides)
        waveforms, is_batch = self.prepare_audio(audio, sample_rate=sample_rate)
        outputs = self._run(self._transcribe, waveforms, resolved, ASROutput)
        return outputs if is_batch else outputs[0]

    def _transcribe(self, runtime: Any, waveforms: Sequence[Waveform], options: OptionsT) -> Sequence[ASROutput]:
        """Return one :class:`ASROutput` per waveform."""
        raise NotImplementedError(f"{type(self).__name__} must implement _transcribe()")


class PreTrainedSVModel(PreTrainedAudioModel[ConfigT, OptionsT]):
    """Base of speaker-verification wrappers; implement ``_embed`` (and optionally ``_score``).

    The default ``_score`` is the cosine similarity of the two embeddings, compared with the
    ``threshold`` field of the options.
    """

    task: ClassVar[SpeechTask] = SpeechTask.SPEAKER_VERIFICATION
    output_type: ClassVar[type] = SpeakerOutput
    _task_method: ClassVar[str] = "embed"

    @overload
    def embed(
        self,
        audio: list[Any],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> list[SpeakerOutput]: ...

    @overload
    def embed(
        self,
        audio: AudioLike | Sequence[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> SpeakerOutput: ...

    def embed(
        self,
        audio: AudioLike | Sequence[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> SpeakerOutput | list[SpeakerOutput]:
        """Compute the speaker embedding of one input or a batch.

        Returns:
            A :class:`~voicehub.core.SpeakerOutput`, or a list of them for a list input.

        Raises:
            UnknownInferenceOptionError: for an unknown option (a ``TypeError``).
            InferenceOptionError, AudioError, SampleRateError: for invalid options or audio.
        """
        resolved = self.resolve_options(options, **overrides)
        waveforms, is_batch = self.prepare_audio(audio, sample_rate=sample_rate)
        outputs = self._run(self._embed, waveforms, resolved, SpeakerOutput)
        return outputs if is_batch else outputs[0]

    @overload
    def verify(
        self,
        enrollment: list[Any],
        test: list[Any],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> list[VerificationOutput]: ...

    @overload
    def verify(
        self,
        enrollment: AudioLike | list[Any],
        test: AudioLike,
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> VerificationOutput: ...

    def verify(
        self,
        enrollment: AudioLike | Sequence[AudioLike],
        test: AudioLike | Sequence[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> VerificationOutput | list[VerificationOutput]:
        """Decide whether ``enrollment`` and ``test`` come from the same speaker.

        Three forms:

        * ``verify(a, b)``: one pair.
        * ``verify([a1, a2, ...], b)``: multi-clip enrolment, one speaker enrolled with several
          clips against one test input (scored by :meth:`_score_enrolled`; by default the
          cosine similarity with the mean enrolment embedding).
        * ``verify([a1, a2], [b1, b2])``: pairs scored item by item (lists of equal length).

        Args:
            enrollment: one input, or a list (see above).
            test: one input, or a list of the enrolment list's length.
            sample_rate: rate in Hz of array inputs.
            options: inference options replacing the defaults.
            **overrides: individual options (validated before loading).

        Returns:
            A :class:`~voicehub.core.VerificationOutput`, or a list of them for two lists.

        Raises:
            InferenceOptionError: for an empty enrolment list, a single enrolment with a test
                list, or two lists of different lengths.
        """
        resolved = self.resolve_options_for("verify", options, overrides)
        if isinstance(enrollment, list) and not isinstance(test, list):
            if not enrollment:
                raise InferenceOptionError(
                    "verify(): the enrollment list is empty; pass one or more clips of the enrolled speaker"
                )
            enrolled, _ = self.prepare_audio(list(enrollment), sample_rate=sample_rate)
            probe, _ = self.prepare_audio(test, sample_rate=sample_rate)
            embeddings = self._run(self._embed, [*enrolled, *probe], resolved, SpeakerOutput)
            result = self._score_enrolled(embeddings[:-1], embeddings[-1], resolved)
            check_outputs([result], VerificationOutput, producer=f"{type(self).__name__}.verify")
            return result
        enrol_waves, enrol_batch = self.prepare_audio(enrollment, sample_rate=sample_rate)
        test_waves, test_batch = self.prepare_audio(test, sample_rate=sample_rate)
        if enrol_batch != test_batch or len(enrol_waves) != len(test_waves):
            raise InferenceOptionError(
                f"verify() pairs enrollment and test item by item: got {len(enrol_waves)} enrollment and "
                f"{len(test_waves)} test input(s) ({'list' if enrol_batch else 'single'} vs "
                f"{'list' if test_batch else 'single'}); pass two single inputs, two lists of equal length, "
                f"or a list of enrolment clips with one test input"
            )
        embeddings = self._run(self._embed, [*enrol_waves, *test_waves], resolved, SpeakerOutput)
        count = len(enrol_waves)
        results = [self._score(embeddings[i], embeddings[count + i], resolved) for i in range(count)]
        check_outputs(results, VerificationOutput, producer=f"{type(self).__name__}.verify")
        return results if enrol_batch else results[0]

    def score_embeddings(
        self,
        enrollment: SpeakerOutput | Sequence[SpeakerOutput],
        test: SpeakerOutput,
        *,
        options: OptionsT | None = None,
        **overrides: Any,
    ) -> VerificationOutput:
        """Score embeddings already computed by :meth:`embed` (one enrolment clip or several).

        Args:
            enrollment: the enrolled speaker's embedding, or a non-empty list of them.
            test: the test embedding.
            options: inference options replacing the defaults.
            **overrides: individual options, as for :meth:`verify`.

        Returns:
            The decision.

        Raises:
            InferenceOptionError: for an empty enrolment list or invalid options.
        """
        resolved = self.resolve_options_for("score_embeddings", options, overrides)
        enrolled = [enrollment] if isinstance(enrollment, SpeakerOutput) else list(enrollment)
        if not enrolled:
            raise InferenceOptionError("score_embeddings(): the enrollment list is empty")
        result = self._score_enrolled(enrolled, test, resolved)
        check_outputs([result], VerificationOutput, producer=f"{type(self).__name__}.score_embeddings")
        return result

    def _embed(self, runtime: Any, waveforms: Sequence[Waveform], options: OptionsT) -> Sequence[SpeakerOutput]:
        """Return one :class:`SpeakerOutput` per waveform."""
        raise NotImplementedError(f"{type(self).__name__} must implement _embed()")

    def _score(self, enrollment: SpeakerOutput, test: SpeakerOutput, options: OptionsT) -> VerificationOutput:
        """Score a pair: cosine similarity against ``options.threshold`` (override for PLDA etc.)."""
        threshold = getattr(options, "threshold", None)
        if not isinstance(threshold, (int, float)) or isinstance(threshold, bool):
            raise NotImplementedError(
                f"{type(self).__name__}: the default _score() needs a float 'threshold' inference option; "
                f"add one to {self.options_class.__name__} or override _score()"
            )
        score = cosine_similarity(enrollment, test)
        return VerificationOutput(
            score=score, threshold=float(threshold), is_same_speaker=score >= threshold, scoring="cosine"
        )

    def _score_enrolled(
        self, enrollment: Sequence[SpeakerOutput], test: SpeakerOutput, options: OptionsT
    ) -> VerificationOutput:
        """Score a speaker enrolled with several clips: :meth:`_score` of the mean embedding.

        Override for back-ends with a better N-vs-1 rule (PLDA averages in its own space).
        """
        if len(enrollment) == 1:
            return self._score(enrollment[0], test, options)
        mean = SpeakerOutput(
            embedding=np.mean([e.embedding.astype(np.float64) for e in enrollment], axis=0).astype(np.float32),
            duration_s=float(sum(e.duration_s for e in enrollment)),
            source="mean of the enrollment clips",
        )
        return self._score(mean, test, options)


def cosine_similarity(first: SpeakerOutput, second: SpeakerOutput) -> float:
    """Cosine similarity of two embeddings, in [-1, 1].

    Raises:
        OutputValidationError: for embeddings of different sizes or a zero embedding.
    """
    a, b = first.embedding.astype("float64"), second.embedding.astype("float64")
    if a.shape != b.shape:
        raise OutputValidationError(f"cannot compare embeddings of sizes {a.shape[0]} and {b.shape[0]}")
    norm = math.sqrt(float(a @ a) * float(b @ b))
    if norm == 0.0:
        raise OutputValidationError("cannot score a zero embedding (silent input?)")
    return max(-1.0, min(1.0, float(a @ b) / norm))


class PreTrainedTTSModel(PreTrainedSpeechModel[ConfigT, OptionsT]):
    """Base of text-to-speech wrappers; implement ``_generate``."""

    task: ClassVar[SpeechTask] = SpeechTask.TEXT_TO_SPEECH
    output_type: ClassVar[type] = TTSOutput
    _task_method: ClassVar[str] = "generate"

    @overload
    def generate(self, text: list[str], *, options: OptionsT | None = None, **overrides: Any) -> list[TTSOutput]: ...

    @overload
    def generate(self, text: str, *, options: OptionsT | None = None, **overrides: Any) -> TTSOutput: ...

    def generate(
        self, text: str | Sequence[str], *, options: OptionsT | None = None, **overrides: Any
    ) -> TTSOutput | list[TTSOutput]:
        """Synthesize speech for one text or a list of texts.

        Args:
            text: a non-empty string, or a ``list`` of them (a batch).
            options: inference options replacing the defaults.
            **overrides: individual options (validated before loading).

        Returns:
            A :class:`~voicehub.core.TTSOutput`, or a list of them for a list input.

        Raises:
            UnknownInferenceOptionError: for an unknown option (a ``TypeError``).
            InferenceOptionError: for invalid options or empty text.
        """
        resolved = self.resolve_options(options, **overrides)
        is_batch = isinstance(text, list)
        texts = list(text) if isinstance(text, list) else [text]
        if not texts:
            raise InferenceOptionError("generate() got an empty list; pass at least one text")
        for index, item in enumerate(texts):
            if not isinstance(item, str) or not item.strip():
                where = f"item {index}" if is_batch else "text"
                raise InferenceOptionError(f"generate(): {where} must be a non-empty string, got {item!r}")
        outputs = self._run(self._generate, texts, resolved, TTSOutput)
        return outputs if is_batch else outputs[0]

    def _generate(self, runtime: Any, texts: Sequence[str], options: OptionsT) -> Sequence[TTSOutput]:
        """Return one :class:`TTSOutput` per text."""
        raise NotImplementedError(f"{type(self).__name__} must implement _generate()")


__all__ = [
    "OPTIONS_FILE_NAME",
    "WEIGHTS_FILE_NAME",
    "PreTrainedASRModel",
    "PreTrainedAudioModel",
    "PreTrainedSVModel",
    "PreTrainedSpeechModel",
    "PreTrainedTTSModel",
    "PreTrainedVADModel",
    "cosine_similarity",
]
