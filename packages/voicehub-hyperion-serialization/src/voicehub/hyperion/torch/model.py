"""``HyperTorchModel``: the serializable base class of trainable PyTorch task models.

The contract follows Hyperion's ``HyperTorchModel`` (``hyperion/torch/hyper_torch_model.py``,
Apache-2.0; see ``docs/speaker.md``): a model is rebuilt from ``get_config()`` (which carries
``class_name``) plus a standard ``state_dict``; ``save`` writes ``model_cfg`` +
``model_state_dict`` (``.pth``) or ``config.json`` + ``model.safetensors`` (any other path);
``auto_load`` reads ``class_name`` and builds the registered class.

What VoiceHub does differently, fixing upstream defects (listed here; ``docs/hyperion.md``, "Upstream
defects fixed", lists those of the NumPy back-ends):

* the configuration is a closed, typed, versioned :class:`voicehub.core.Config`
  (:attr:`HyperTorchModel.config_class`); unknown keys are refused with the list of known ones
  and old ``schema_version`` values are upgraded by the config's explicit ``migrations``, while
  the matching tensor changes (renamed tensors, parameters that became computed buffers) are
  the model's :attr:`~HyperTorchModel.state_migrations`; a Hyperion file without a
  ``schema_version`` is version 1;
* every load path takes ``map_location`` (CPU by default) and never downloads;
* pickled files are read with ``weights_only=True`` only (see :mod:`.checkpoint`);
* a state dict with missing, unexpected or mis-shaped tensors is reported, naming the file and
  the tensors, before any weight is copied into the model;
* class names collide loudly; ``extra_objs`` may override a registered class; a missing
  ``class_name`` is an error (upstream assumed ``"DAC"``);
* an unknown ``train_mode`` is refused when set (upstream failed later, inside ``train``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from torch import nn

from voicehub.core import (
    CheckpointError,
    ConfigError,
    DeviceError,
    UnknownConfigKeyError,
    VoiceHubError,
    resolve_reference,
)
from voicehub.core.checkpoint import check_tensor_values
from voicehub.hyperion.errors import HyperionFileError, HyperionRegistryError, UnknownHyperionClassError
from voicehub.hyperion.torch.checkpoint import (
    SINGLE_FILE_SUFFIXES,
    RawCheckpoint,
    read_checkpoint,
    save_directory,
    save_single_file,
)
from voicehub.hyperion.torch.config import HyperTorchConfig

TRAIN_MODES = ("full", "frozen")
"""Training modes every model supports: all parameters train, or none (and BatchNorm stays in eval)."""

ENTRY_POINT_GROUP = "voicehub.hyperion_torch_models"
"""Entry-point group through which other distributions announce ``class_name = "module:Class"``."""

StateMigration = Callable[[Any, dict[str, torch.Tensor], str], dict[str, torch.Tensor]]
"""Upgrades a state dict from schema version ``v`` to ``v + 1``.

Called as ``migration(config, state_dict, source)`` with the already upgraded config, a state
dict it may modify in place and return, and the file name for messages.
"""


def _package_version() -> str:
    try:
        return importlib.metadata.version("voicehub-hyperion-serialization")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class HyperTorchModel(nn.Module):
    """Base class of serializable PyTorch task models (Hyperion's ``HyperTorchModel`` contract).

    A concrete subclass sets :attr:`config_class` to its :class:`HyperTorchConfig` subclass,
    builds its submodules in ``__init__(config)`` after calling ``super().__init__(config)``,
    and is registered under its class name when the class statement runs. The class name is
    part of the artifact format: keep it stable.

    Attributes:
        config: the model's immutable configuration.
    """

    config_class: ClassVar[type[HyperTorchConfig]] = HyperTorchConfig
    state_migrations: ClassVar[Mapping[int, StateMigration]] = {}
    _registry: ClassVar[dict[str, type[HyperTorchModel]]] = {}

    config: HyperTorchConfig

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__name__
        existing = HyperTorchModel._registry.get(name)
        if existing is not None and (existing.__module__, existing.__qualname__) != (cls.__module__, cls.__qualname__):
            raise HyperionRegistryError(
                f"HyperTorchModel class name {name!r} is already registered by {existing.__module__}; "
                f"class names are part of the checkpoint format and must be unique"
            )
        HyperTorchModel._registry[name] = cls

    def __init__(self, config: HyperTorchConfig | None = None) -> None:
        super().__init__()
        expected = type(self).config_class
        if config is None:
            config = expected()
        if not isinstance(config, expected):
            raise ConfigError(
                f"{type(self).__name__} expects a {expected.__name__}, got {type(config).__name__}",
                config_type=expected.config_type,
            )
        self.config = config
        self._train_mode = "full"

    # ------------------------------------------------------------------ configuration
    def get_config(self) -> dict[str, Any]:
        """Return the strict-JSON configuration that rebuilds this model.

        Returns:
            ``{"class_name": <class name>, "type": ..., "schema_version": ..., <fields>}``;
            nested component configs appear as nested dicts.
        """
        return {"class_name": type(self).__name__, **self.config.to_dict()}

    @classmethod
    def from_config(cls, model_cfg: Mapping[str, Any]) -> Self:
        """Build an untrained model from a :meth:`get_config` dict.

        A dict without ``schema_version`` (a Hyperion-era file) is read as version 1 and
        upgraded through the config's migrations.

        Raises:
            ConfigError: for another ``class_name``, unknown keys (listing the known ones) or
                values of the wrong type.
        """
        cfg = dict(model_cfg)
        class_name = cfg.pop("class_name", cls.__name__)
        if class_name != cls.__name__:
            raise ConfigError(
                f"model_cfg is for class {class_name!r}, not {cls.__name__}; use HyperTorchModel.auto_load",
                config_type=cls.config_class.config_type,
                key="class_name",
            )
        cfg.setdefault("schema_version", 1)
        constructor_keys = cls._constructor_keys(cfg)
        if constructor_keys:
            return cls._from_constructor_config(cfg, constructor_keys)
        return cls(cls.config_class.from_dict(cfg))

    @classmethod
    def _constructor_keys(cls, cfg: Mapping[str, Any]) -> tuple[str, ...]:
        """The keys of ``cfg`` that go to the constructor of a keyword-style subclass (seed 004).

        A subclass that declares no typed :attr:`config_class` of its own and takes its settings
        as constructor keywords (``__init__(self, encoder_cfg, embedding_dim, dropout_rate)``) extends
        :meth:`get_config` with those keywords; everything outside the base config's keys is one.
        A subclass with its own ``config_class`` has none: its config is closed and refuses them.
        """
        if cls.config_class is not HyperTorchConfig:
            return ()
        base = {"type", "schema_version", *HyperTorchConfig.known_keys()}
        return tuple(key for key in cfg if key not in base)

    @classmethod
    def _from_constructor_config(cls, cfg: Mapping[str, Any], keys: tuple[str, ...]) -> Self:
        """Build a keyword-style subclass: ``cls(**settings)``, then the base fields onto ``config``.

        Raises:
            UnknownConfigKeyError: (a ``ConfigError``) for keys the constructor does not accept,
                listing the ones it does.
        """
        parameters = inspect.signature(cls.__init__).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        accepted = [
            name
            for name, p in parameters.items()
            if name != "self" and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        ]
        unknown = [key for key in keys if key not in accepted]
        if unknown and not takes_any:
            error = UnknownConfigKeyError(f"{cls.__name__}.__init__", unknown, accepted)
            error.args = (
                f"{error.args[0]}: a keyword-style model's get_config() must add exactly its constructor's arguments "
                f"to the base config (seed 004); rename the key or accept it in __init__",
            )
            raise error
        base = HyperTorchConfig.from_dict({k: v for k, v in cfg.items() if k not in keys})
        model = cls(**{key: cfg[key] for key in keys})
        if model.config != base:  # bias_weight_decay and the base tags are the base class's, not the constructor's
            model.config = base
        return model

    # --------------------------------------------------------------------- saving
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the configuration and parameters.

        Args:
            path: a ``.pth`` / ``.pt`` file for the legacy Hyperion single-file format
                (``{"model_cfg", "model_state_dict"}``), anything else is a directory that
                receives ``config.json`` and ``model.safetensors``.

        Both forms also record :attr:`train_mode` (beside ``class_path``, where Hyperion ignores
        it); every load path restores it.

        Returns:
            The written path.
        """
        target = Path(path)
        cls = type(self)
        class_path = f"{cls.__module__}:{cls.__qualname__}"
        writer = save_single_file if target.suffix.lower() in SINGLE_FILE_SUFFIXES else save_directory
        return writer(
            target,
            self.get_config(),
            self.state_dict(),
            class_path=class_path,
            package_version=_package_version(),
            train_mode=self.train_mode,
        )

    # -------------------------------------------------------------------- loading
    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        map_location: str | torch.device = "cpu",
        safe_globals: Iterable[Any] = (),
    ) -> Self:
        """Load a checkpoint that holds this class (or one without ``class_name``).

        Args:
            path: a ``.pth`` file or a directory checkpoint.
            map_location: device for the tensors and the returned model; CPU by default.
            safe_globals: classes a trusted legacy ``.pth`` may reference (``weights_only`` stays on).

        Returns:
            The model, in eval mode, on ``map_location``.

        Raises:
            HyperionFileError: naming the file: unreadable, for another class, an invalid config,
                or tensors that do not match the model (missing, unexpected, wrong shape).
        """
        raw = read_checkpoint(path, map_location=map_location, safe_globals=safe_globals)
        class_name = raw.model_cfg.get("class_name", cls.__name__)
        if class_name != cls.__name__:
            raise HyperionFileError(
                f"{raw.source}: holds a {class_name!r} model, not {cls.__name__}; "
                f"use HyperTorchModel.auto_load to build whatever class a file holds",
                path=raw.source,
            )
        return cls._from_raw(raw, map_location)

    @classmethod
    def auto_load(
        cls,
        path: str | os.PathLike[str],
        *,
        map_location: str | torch.device = "cpu",
        extra_objs: Mapping[str, type[HyperTorchModel]] | None = None,
        safe_globals: Iterable[Any] = (),
    ) -> HyperTorchModel:
        """Load a checkpoint, building the class named by its ``model_cfg.class_name``.

        The class is found, in order: in ``extra_objs`` (caller-supplied plug-ins, which may
        override), among classes already defined, through the ``class_path`` VoiceHub recorded
        in the file (imported only when it is a ``voicehub.*`` module), and through the
        ``voicehub.hyperion_torch_models`` entry points of installed distributions (the
        maintained models, ``XVector`` and ``GE2ESpeakerEncoder``, are announced there by
        ``voicehub-architectures``, so a Hyperion file without a class path loads in a fresh
        process). A class that overrides :meth:`load` (seed 004's ``AE.load`` pattern: rebuild
        nested components first, then load the state dict) is loaded by its own ``load``; the
        saved ``train_mode`` is restored either way.

        Args:
            path: a ``.pth`` file or a directory checkpoint.
            map_location: device for the tensors and the returned model; CPU by default.
            extra_objs: class name -> class, for plug-in classes.
            safe_globals: classes a trusted legacy ``.pth`` may reference (``weights_only`` stays on).

        Returns:
            The model, in eval mode, on ``map_location``.

        Raises:
            HyperionFileError: the file is unreadable, lacks ``class_name``, holds a class that is
                not a ``cls`` subclass, or its tensors do not match the class.
            UnknownHyperionClassError: no class of that name can be found (lists the known names).
        """
        raw = read_checkpoint(path, map_location=map_location, safe_globals=safe_globals)
        class_name = raw.model_cfg.get("class_name")
        if not isinstance(class_name, str) or not class_name:
            raise HyperionFileError(
                f"{raw.source}: model_cfg has no 'class_name', so the model class is unknown; "
                f"load it with <ModelClass>.load(path) instead",
                path=raw.source,
            )
        model_class = _resolve_class(class_name, raw, extra_objs or {})
        if not issubclass(model_class, cls):
            raise HyperionFileError(
                f"{raw.source}: holds a {class_name!r} model, which is not a {cls.__name__}", path=raw.source
            )
        if not _overrides_load(model_class):
            return model_class._from_raw(raw, map_location)
        model = model_class.load(path, map_location=map_location, safe_globals=safe_globals)
        if not isinstance(model, model_class):
            raise HyperionFileError(
                f"{raw.source}: {model_class.__name__}.load returned a {type(model).__name__}, expected a "
                f"{model_class.__name__}; an overridden load() must return the model it rebuilt",
                path=raw.source,
            )
        model._restore_train_mode(raw)
        return model

    @classmethod
    def _from_raw(cls, raw: RawCheckpoint, map_location: str | torch.device) -> Self:
        cfg = dict(raw.model_cfg)
        cfg.pop("class_name", None)
        version = cfg.setdefault("schema_version", 1)
        constructor_keys = cls._constructor_keys(cfg)
        if constructor_keys:
            try:
                model = cls._from_constructor_config(cfg, constructor_keys)
            except ConfigError as err:
                raise HyperionFileError(f"{raw.source}: model_cfg: {err}", path=raw.source) from err
            except VoiceHubError:
                raise
            except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as err:
                raise _damaged(raw.source, f"cannot build {cls.__name__} from the stored config", err) from err
            return model._finish_loading(raw, dict(raw.state_dict), map_location)
        try:
            config = cls.config_class.from_dict(cfg)
        except ConfigError as err:
            raise HyperionFileError(f"{raw.source}: model_cfg: {err}", path=raw.source) from err
        except (KeyError, TypeError, ValueError, AttributeError) as err:  # a config migration met a damaged config
            raise _damaged(raw.source, "model_cfg cannot be read or migrated", err) from err
        state = dict(raw.state_dict)
        try:
            if isinstance(version, int):
                for step in range(version, cls.config_class.schema_version):
                    migration = cls.state_migrations.get(step)
                    if migration is not None:
                        state = migration(config, state, raw.source)
            model = cls(config)
        except VoiceHubError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as err:
            raise _damaged(raw.source, f"cannot build {cls.__name__} from the stored config and tensors", err) from err
        return model._finish_loading(raw, state, map_location)

    def _finish_loading(
        self, raw: RawCheckpoint, state: Mapping[str, torch.Tensor], map_location: str | torch.device
    ) -> Self:
        """Load the checked tensors, restore the saved ``train_mode``, switch to eval, move to ``map_location``."""
        self.load_checked_state_dict(state, source=raw.source)
        self._restore_train_mode(raw)
        self.eval()
        if torch.device(map_location).type != "cpu":
            self.to(map_location)
        return self

    def _restore_train_mode(self, raw: RawCheckpoint) -> None:
        """Put the model in the ``train_mode`` the file records (files without one were saved in ``"full"``).

        Raises:
            HyperionFileError: for a recorded mode this class does not support, naming the valid ones.
        """
        if raw.train_mode is None or raw.train_mode == self.train_mode:
            return
        try:
            self.set_train_mode(raw.train_mode)
        except ConfigError as err:
            raise HyperionFileError(f"{raw.source}: saved train_mode: {err}", path=raw.source) from err

    def load_checked_state_dict(self, state_dict: Mapping[str, torch.Tensor], *, source: str) -> None:
        """Strictly load ``state_dict`` after checking every key and shape.

        Args:
            state_dict: tensor name -> tensor.
            source: file name for messages.

        Raises:
            HyperionFileError: naming ``source`` and listing missing, unexpected and mis-shaped
                tensors (expected and found shapes), or tensors with NaN or infinite values or an
                integer dtype where the model holds floats
                (:func:`voicehub.core.checkpoint.check_tensor_values`); the model is untouched in that case.
        """
        expected = self.state_dict()
        missing = sorted(set(expected) - set(state_dict))
        unexpected = sorted(set(state_dict) - set(expected))
        wrong = [
            f"{key}: expected {tuple(expected[key].shape)}, found {tuple(state_dict[key].shape)}"
            for key in sorted(set(expected) & set(state_dict))
            if tuple(expected[key].shape) != tuple(state_dict[key].shape)
        ]
        problems = []
        if wrong:
            problems.append(f"wrong shape: {'; '.join(wrong[:8])}{' ...' if len(wrong) > 8 else ''}")
        if missing:
            problems.append(f"missing: {missing[:8]}{' ...' if len(missing) > 8 else ''}")
        if unexpected:
            problems.append(f"unexpected: {unexpected[:8]}{' ...' if len(unexpected) > 8 else ''}")
        if problems:
            raise HyperionFileError(
                f"{source}: state dict does not match {type(self).__name__}: {' | '.join(problems)}", path=source
            )
        try:
            check_tensor_values(state_dict, source=source, expected=expected)
        except CheckpointError as err:
            raise HyperionFileError(str(err), path=source) from err
        self.load_state_dict(state_dict, strict=True)

    # ------------------------------------------------------------------- training
    @classmethod
    def valid_train_modes(cls) -> tuple[str, ...]:
        """Training modes this class supports (subclasses may add their own)."""
        return TRAIN_MODES

    @property
    def train_mode(self) -> str:
        """The current training mode (``"full"`` or ``"frozen"`` unless a subclass adds more)."""
        return self._train_mode

    def set_train_mode(self, mode: str) -> None:
        """Select which parameters train.

        ``"full"``: every parameter trains. ``"frozen"``: none does and ``train(True)`` keeps the
        module in eval mode, so BatchNorm statistics and dropout stay fixed.

        Raises:
            ConfigError: for a mode not in :meth:`valid_train_modes`.
        """
        valid = self.valid_train_modes()
        if mode not in valid:
            raise ConfigError(f"{type(self).__name__}: unknown train_mode {mode!r}; expected one of {list(valid)}")
        self._apply_train_mode(mode)
        self._train_mode = mode
        self.train(self.training)

    def _apply_train_mode(self, mode: str) -> None:
        """Set ``requires_grad`` for ``mode``; subclasses with extra modes override and call super."""
        if mode == "frozen":
            self.freeze()
        else:
            self.unfreeze()

    def train(self, mode: bool = True) -> Self:
        """Switch train/eval mode; a ``"frozen"`` model stays in eval mode."""
        return super().train(mode and self._train_mode != "frozen")

    def freeze(self) -> None:
        """Stop gradients for every parameter (buffers are untouched)."""
        for param in self.parameters():
            param.requires_grad_(False)

    def unfreeze(self) -> None:
        """Let every parameter receive gradients."""
        for param in self.parameters():
            param.requires_grad_(True)

    def trainable_param_groups(self) -> list[dict[str, Any]]:
        """Optimizer parameter groups for the parameters that require gradients.

        Returns:
            One group ``{"params": [...]}`` when ``config.bias_weight_decay`` is ``None``;
            otherwise two: matrices and other >= 2-D weights (the optimizer's own weight decay)
            and biases / 1-D parameters with ``"weight_decay": bias_weight_decay``.
        """
        trainable = [p for p in self.parameters() if p.requires_grad]
        decay = self.config.bias_weight_decay
        if decay is None:
            return [{"params": trainable}]
        return [
            {"params": [p for p in trainable if p.ndim > 1]},
            {"params": [p for p in trainable if p.ndim <= 1], "weight_decay": decay},
        ]

    def parameter_summary(self) -> dict[str, int]:
        """Counts of elements: ``total``, ``trainable``, ``non_trainable`` parameters and ``buffers``."""
        params = list(self.parameters())
        trainable = sum(p.numel() for p in params if p.requires_grad)
        total = sum(p.numel() for p in params)
        return {
            "total": total,
            "trainable": trainable,
            "non_trainable": total - trainable,
            "buffers": sum(b.numel() for b in self.buffers()),
        }

    @property
    def device(self) -> torch.device:
        """The one device holding every parameter and buffer.

        Raises:
            DeviceError: if the model has no tensors or they sit on several devices.
        """
        devices = {t.device for t in self._tensors()}
        if len(devices) != 1:
            found = sorted(str(d) for d in devices) or "no tensors"
            raise DeviceError(f"{type(self).__name__} has no single device (found {found}); call .to(device) first")
        return next(iter(devices))

    def _tensors(self) -> Iterator[torch.Tensor]:
        yield from self.parameters()
        yield from self.buffers()

    # ------------------------------------------------------------------- registry
    @classmethod
    def registered_classes(cls) -> dict[str, type[HyperTorchModel]]:
        """Class name -> class for every subclass defined so far in this process."""
        return dict(HyperTorchModel._registry)


def _damaged(source: str, what: str, err: BaseException) -> HyperionFileError:
    return HyperionFileError(
        f"{source}: {what} ({type(err).__name__}: {err}); the file is corrupt, edited, or from an incompatible "
        "version: re-save it from the trained model",
        path=source,
    )


def _overrides_load(model_class: type[HyperTorchModel]) -> bool:
    """Whether a class between ``model_class`` and :class:`HyperTorchModel` defines its own ``load``."""
    mro = model_class.__mro__
    return any("load" in vars(klass) for klass in mro[: mro.index(HyperTorchModel)])


def _resolve_class(
    class_name: str, raw: RawCheckpoint, extra_objs: Mapping[str, type[HyperTorchModel]]
) -> type[HyperTorchModel]:
    if class_name in extra_objs:
        return extra_objs[class_name]
    registry = HyperTorchModel._registry
    if class_name in registry:
        return registry[class_name]
    import_problem = ""
    if raw.class_path and raw.class_path.split(":", 1)[0].split(".", 1)[0] == "voicehub":
        module_name = raw.class_path.split(":", 1)[0]
        try:
            importlib.import_module(module_name)
        except ImportError as err:
            import_problem = f" (importing {module_name}, recorded in the file, failed: {err})"
        if class_name in registry:
            return registry[class_name]
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == class_name:
            found = resolve_reference(entry.value)
            if isinstance(found, type) and issubclass(found, HyperTorchModel):
                return found
    error = UnknownHyperionClassError(class_name, registry, path=raw.source)
    error.args = (f"{error.args[0]}{import_problem}; pass extra_objs={{{class_name!r}: <class>}} for a plug-in class",)
    raise error


__all__ = ["ENTRY_POINT_GROUP", "TRAIN_MODES", "HyperTorchConfig", "HyperTorchModel", "StateMigration"]
