"""``HyperNPModel``: the base class of every serializable NumPy model (Hyperion format).

File format (compatible with the upstream Hyperion toolkit, ``hyperion/np/hyper_np_model.py``):

* an HDF5 file with a dataset ``/config`` holding the model configuration as a JSON bytes
  scalar (UTF-8; upstream wrote ASCII, which is a subset), whose object has at least
  ``class_name`` and ``name``;
* one dataset per fitted array at ``/<name>/<param>`` (``/<param>`` when ``name`` is empty,
  as in files written with ``name=None`` by old upstream versions).

What VoiceHub adds, all backwards compatible: the config carries ``schema_version`` (files
without it are upstream files and go through each class's explicit ``migrate_legacy_config``);
parameters keep their own dtype by default (upstream cast to float32, so its round trip was not
bit-exact); files are written to a temporary file and renamed into place; pickles are read and
written only with ``allow_pickle=True``; every malformed file raises an error naming the file.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import inspect
import pickle
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

import h5py
import numpy as np

from voicehub.core import strict_json
from voicehub.core.errors import ConfigError, StrictJSONError, UnknownConfigKeyError, VoiceHubError
from voicehub.hyperion.errors import (
    HyperionError,
    HyperionFileError,
    NotFittedError,
    UnknownHyperionClassError,
)
from voicehub.hyperion.np import _registry
from voicehub.hyperion.np.files import (
    CONFIG_DATASET,
    H5_READ_ERRORS,
    HDF5_SIGNATURE,
    PICKLE_MAGIC,
    PathLike,
    atomic_write,
    check_output_path,
    corrupt,
    is_pickle_path,
    open_hdf5,
    parse_config_text,
    read_config_dataset,
    reading,
    refuse_pickle,
)

DTypeSpec = str | Mapping[str, str] | None
"""A dtype for every parameter (``"float32"``), one per parameter name, or ``None`` (keep own dtype)."""


def config_to_json_value(value: Any, where: str = "$") -> Any:
    """Convert a config value to plain JSON types: NumPy scalars via ``.item()``, 1-D string arrays to lists.

    Raises:
        StrictJSONError: for any other NumPy array (fitted arrays belong in ``save_params``),
            naming where in the config it is.
    """
    if isinstance(value, np.generic):
        return config_to_json_value(value.item(), where)
    if isinstance(value, np.ndarray):
        if value.ndim == 1 and value.dtype.kind in "US":
            return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value.tolist()]
        raise StrictJSONError(
            f"config value at {where} is a NumPy array of shape {value.shape} and dtype {value.dtype}; configs take "
            "scalars and 1-D string arrays only: store fitted arrays with save_params/_save_params_from_dict, "
            "or convert the value to a list"
        )
    if isinstance(value, Mapping):
        return {k: config_to_json_value(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [config_to_json_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


_LOAD_READS: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("hyperion_np_load_reads", default=None)
"""Datasets read by ``_load_params_to_dict`` while :meth:`HyperNPModel._load_open` runs."""

_LOAD_EXTRA: contextvars.ContextVar[Mapping[str, type[Any]] | None] = contextvars.ContextVar(
    "hyperion_np_load_extra", default=None
)
"""The caller's ``extra_objs`` during :meth:`HyperNPModel.auto_load` (used for nested children)."""


@contextlib.contextmanager
def _tracking_reads() -> Iterator[set[str]]:
    reads: set[str] = set()
    token = _LOAD_READS.set(reads)
    try:
        yield reads
    finally:
        _LOAD_READS.reset(token)


def resolve_class(class_name: str) -> type[Any] | None:
    """The class for ``class_name``: the caller's ``extra_objs`` (during ``auto_load``) first, then the registry."""
    return (_LOAD_EXTRA.get() or {}).get(class_name) or _registry.resolve(class_name)


def _datasets(f: h5py.File) -> list[str]:
    names: list[str] = []

    def visit(name: str, node: Any) -> None:
        if isinstance(node, h5py.Dataset):
            names.append(name)

    f.visititems(visit)
    return names


_BASE_KEYS = frozenset({"class_name", "name", "save_dtype"})


class HyperNPModel:
    """Base class of the serializable NumPy models (transforms, PLDA, classifiers, calibration...).

    Subclasses register under their Python class name when their definition runs (pass
    ``register=False`` in the class statement to opt out); that name is stored in every file,
    so it is part of the format. A subclass:

    * calls ``super().__init__(name=name, save_dtype=save_dtype)``;
    * extends :meth:`get_config` (``{**super().get_config(), "key": value}``) with every
      constructor setting, as strict-JSON values;
    * implements :meth:`save_params` / :meth:`load_params` with :meth:`_save_params_from_dict`
      and :meth:`_load_params_to_dict` when it has fitted arrays;
    * lists upstream config keys it understands in ``legacy_keys`` (see
      :meth:`migrate_legacy_config`).

    Args:
        name: HDF5 group prefix of the parameters; ``None`` means the class name. An empty
            string stores parameters at the file root (legacy upstream files).
        save_dtype: dtype for floating parameters on save (e.g. ``"float32"``); ``None`` keeps
            each array's own dtype, so a save/load round trip is bit-exact.

    Raises:
        ConfigError: for a ``name`` that is not a string or a ``save_dtype`` that is not a
            floating NumPy dtype.
    """

    schema_version: ClassVar[int] = 1
    """Version of this class's config schema; files without the field are upstream (version 0)."""

    legacy_keys: ClassVar[Mapping[str, str | None]] = {}
    """Upstream config keys: renamed to the mapped key, or dropped when mapped to ``None``."""

    def __init_subclass__(cls, *, register: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if register:
            _registry.register(cls)

    def __init__(self, *, name: str | None = None, save_dtype: str | None = None) -> None:
        owner = type(self).__name__
        if name is not None and not isinstance(name, str):
            raise ConfigError(f"{owner}.name: expected str or None, got {name!r}", config_type=owner, key="name")
        if name is not None and (name.startswith("/") or name.endswith("/") or "//" in name):
            raise ConfigError(
                f"{owner}.name: must not start or end with '/' or contain '//', got {name!r}", config_type=owner
            )
        if name is not None and name.split("/")[0] == CONFIG_DATASET:
            raise ConfigError(
                f"{owner}.name: {name!r} is reserved (the file's /{CONFIG_DATASET} dataset); choose another name",
                config_type=owner,
                key="name",
            )
        if save_dtype is not None:
            try:
                kind = np.dtype(save_dtype).kind
            except TypeError as err:
                raise ConfigError(f"{owner}.save_dtype: unknown dtype {save_dtype!r}", config_type=owner) from err
            if kind != "f" or not isinstance(save_dtype, str):
                raise ConfigError(
                    f"{owner}.save_dtype: expected a floating dtype name such as 'float32', got {save_dtype!r}",
                    config_type=owner,
                    key="save_dtype",
                )
        self.name: str = owner if name is None else name
        self.save_dtype = save_dtype

    # ----------------------------------------------------------------- config
    def get_config(self) -> dict[str, Any]:
        """Return the strict-JSON configuration that recreates the unfitted model.

        Subclasses extend this dict; ``class_name`` and ``name`` are always present.
        """
        return {"class_name": type(self).__name__, "name": self.name, "save_dtype": self.save_dtype}

    def to_json(self) -> str:
        """Return the config with ``schema_version`` as canonical strict JSON.

        NumPy scalars become Python scalars and 1-D string arrays lists.

        Raises:
            ConfigError: if ``get_config`` dropped ``class_name`` or ``name`` (a subclass that
                replaced instead of extending ``super().get_config()``).
            StrictJSONError: for a value that is not strict JSON (NaN, another array, an object).
        """
        owner = type(self).__name__
        config = self.get_config()
        if not isinstance(config, Mapping):
            raise ConfigError(f"{owner}.get_config() returned {type(config).__name__}, expected a dict")
        missing = [k for k in ("class_name", "name") if k not in config]
        if missing or config.get("class_name") != owner:
            raise ConfigError(
                f"{owner}.get_config() lacks {missing or ['the right class_name']} (class_name must be {owner!r}); "
                "extend super().get_config() instead of replacing it: "
                "return {**super().get_config(), 'my_key': value}",
                config_type=owner,
            )
        return strict_json.dumps(config_to_json_value({**config, "schema_version": self.schema_version}))

    @classmethod
    def config_keys(cls) -> frozenset[str]:
        """The keys :meth:`from_config` accepts, derived without creating an instance.

        They are the keyword parameters of ``__init__`` (following ``**kwargs`` up the class
        hierarchy) plus ``class_name``, ``name`` and ``save_dtype``, so a class whose
        constructor has required arguments loads too.
        """
        keys = set(_BASE_KEYS)
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            params = inspect.signature(init).parameters.values()
            keys.update(p.name for p in params if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
            if not any(p.kind is p.VAR_KEYWORD for p in params) or klass is HyperNPModel:
                break
        return frozenset(keys)

    def missing_params(self) -> list[str]:
        """Names of the fitted parameters a saved file needs but this model lacks (``[]`` = savable).

        Subclasses with fitted state override this; :meth:`save` refuses an unfitted model.
        """
        return []

    @classmethod
    def migrate_legacy_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        """Upgrade an upstream (schema version 0) config to schema version 1.

        The base step turns ``name: null`` into ``""`` (parameters at the file root) and applies
        ``legacy_keys``. Subclasses with structural changes extend it. Every key left over must
        be a known key, so an unexpected upstream field is reported, not silently dropped.
        """
        out = dict(config)
        if out.get("name", "") is None:
            out["name"] = ""
        for old, new in cls.legacy_keys.items():
            if old in out:
                value = out.pop(old)
                if new is not None and new not in out:
                    out[new] = value
        return out

    @classmethod
    def check_config(cls, config: Mapping[str, Any], *, saved_as: str | None = None) -> dict[str, Any]:
        """Validate a config's ``class_name``, migrate it, and reject unknown keys.

        Args:
            config: the config mapping.
            saved_as: a ``class_name`` the caller explicitly maps to this class (``extra_objs``
                of :meth:`auto_load`); a config with that class name is accepted.

        Returns:
            The config at the current schema version, without ``schema_version``.

        Raises:
            ConfigError: for another class's config or a schema version newer than this code.
            UnknownConfigKeyError: for keys this class does not define, listing the known ones.
        """
        owner = cls.__name__
        if not isinstance(config, Mapping):
            raise ConfigError(f"{owner}: expected a config mapping, got {type(config).__name__}", config_type=owner)
        payload = dict(config)
        class_name = payload.get("class_name", owner)
        if class_name != owner and class_name != saved_as:
            raise ConfigError(
                f"config of class {class_name!r} cannot be loaded as {owner}; use HyperNPModel.auto_load",
                config_type=owner,
                key="class_name",
            )
        version = payload.pop("schema_version", 0)
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise ConfigError(f"{owner}: invalid schema_version {version!r}", config_type=owner, key="schema_version")
        if version > cls.schema_version:
            raise ConfigError(
                f"{owner}: schema_version {version} is newer than this VoiceHub reads ({cls.schema_version}); "
                "upgrade VoiceHub",
                config_type=owner,
                key="schema_version",
            )
        if version == 0:
            payload = cls.migrate_legacy_config(payload)
        payload["class_name"] = owner
        known = cls.config_keys()
        unknown = set(payload) - known
        if unknown:
            raise UnknownConfigKeyError(owner, unknown, known)
        return payload

    @classmethod
    def from_config(cls, config: Mapping[str, Any], **params: Any) -> Self:
        """Build an (unfitted, unless ``params`` are given) model from its config.

        Args:
            config: as returned by :meth:`get_config` (``schema_version`` optional).
            **params: fitted arrays passed to the constructor next to the config values.

        Raises:
            ConfigError: see :meth:`check_config`; also for a value of the wrong type.
        """
        checked = cls.check_config(config)
        checked.pop("class_name")
        try:
            return cls(**checked, **params)
        except (ConfigError, HyperionError):
            raise
        except TypeError as err:
            required = [
                p.name
                for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self" and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ]
            hint = (
                f"; {cls.__name__}.__init__ requires {required}, so get_config() must include them" if required else ""
            )
            raise ConfigError(
                f"{cls.__name__}: cannot build from the config: {err}{hint}", config_type=cls.__name__
            ) from err

    # ------------------------------------------------------------- parameters
    def _param_prefix(self) -> str:
        return f"{self.name}/" if self.name else ""

    def save_params(self, f: h5py.File) -> None:
        """Write the fitted arrays into the open HDF5 file ``f`` (none for the base class)."""

    @classmethod
    def load_params(cls, f: h5py.File, config: dict[str, Any]) -> Self:
        """Build the model from a checked ``config`` and the arrays in the open file ``f``."""
        return cls.from_config(config)

    def _save_params_from_dict(self, f: h5py.File, params: Mapping[str, Any], dtypes: DTypeSpec = None) -> None:
        """Write each non-``None`` entry of ``params`` to the dataset ``<name>/<key>``.

        Args:
            f: an HDF5 file open for writing.
            params: parameter name -> array-like.
            dtypes: dtype(s) to store in; ``None`` uses ``save_dtype`` for floating arrays and
                the array's own dtype otherwise (lossless).
        """
        prefix = self._param_prefix()
        for key, value in params.items():
            if value is None:
                continue
            dataset = prefix + key
            parts = dataset.split("/")
            clash = [dataset] if dataset in f else []
            clash += [
                "/".join(parts[:i])
                for i in range(1, len(parts))
                if isinstance(f.get("/".join(parts[:i])), h5py.Dataset)
            ]
            if clash:
                raise HyperionFileError(
                    f"{type(self).__name__} {self.name!r}: dataset /{dataset} collides with /{clash[0]}, already "
                    "written by this file (the config or another model); give every model a distinct name that is "
                    "not another's name plus '/<parameter>'"
                )
            arr = np.asarray(value)
            dtype: str | None
            if isinstance(dtypes, Mapping):
                dtype = dtypes.get(key)
            elif dtypes is not None:
                dtype = dtypes
            else:
                dtype = self.save_dtype if arr.dtype.kind == "f" else None
            if dtype is not None:
                arr = arr.astype(dtype, copy=False)
            # Fletcher-32 checksums (an HDF5 filter every reader, upstream included, decodes) turn
            # a damaged parameter into a read error instead of silently different values.
            checksum = arr.ndim > 0 and arr.size > 0 and arr.dtype.kind in "biuf"
            f.create_dataset(prefix + key, data=arr, fletcher32=checksum)

    @staticmethod
    def _load_params_to_dict(
        f: h5py.File,
        name: str | None,
        params: Iterable[str],
        dtypes: DTypeSpec = None,
        *,
        optional: Iterable[str] = (),
    ) -> dict[str, Any]:
        """Read the datasets ``<name>/<key>`` for each key in ``params``.

        Args:
            f: an HDF5 file open for reading.
            name: the model's ``name`` (group prefix); ``None`` or ``""`` means the file root.
            params: parameter names to read.
            dtypes: dtype(s) to cast to; ``None`` keeps the stored dtype (lossless).
            optional: names that may be absent (returned as ``None``).

        Raises:
            HyperionFileError: naming the file and dataset when a required one is missing or
                unreadable.
        """
        prefix = f"{name}/" if name else ""
        allowed_missing = set(optional)
        out: dict[str, Any] = {}
        for key in params:
            dataset = prefix + key
            try:
                present = dataset in f
                node = f[dataset] if present else None
            except H5_READ_ERRORS as err:
                raise corrupt(f.filename, f"cannot look up /{dataset}", err) from err
            if node is None:
                if key in allowed_missing:
                    out[key] = None
                    continue
                raise HyperionFileError(f"{f.filename}: missing parameter dataset /{dataset}", path=f.filename)
            if not isinstance(node, h5py.Dataset):
                raise HyperionFileError(f"{f.filename}: /{dataset} is a group, expected a dataset", path=f.filename)
            try:
                arr = np.asarray(node[()])
            except H5_READ_ERRORS as err:
                raise corrupt(f.filename, f"cannot read /{dataset}", err) from err
            if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
                raise HyperionFileError(
                    f"{f.filename}: /{dataset} contains NaN or infinite values; the file is corrupt or was saved "
                    "from a failed fit: refit the model and save it again",
                    path=f.filename,
                )
            reads = _LOAD_READS.get()
            if reads is not None:
                reads.add(dataset)
            dtype = dtypes.get(key) if isinstance(dtypes, Mapping) else dtypes
            out[key] = arr.astype(dtype, copy=False) if dtype is not None else arr
        return out

    # ------------------------------------------------------------------ files
    def save(self, path: PathLike, *, allow_pickle: bool = False) -> Path:
        """Write the model to ``path`` atomically.

        ``.pkl``/``.pickle`` paths pickle the whole object (only with ``allow_pickle=True``);
        any other path gets the HDF5 format described in the module docstring.

        A symlink at ``path`` is written through (the file it points to is replaced); a new file
        gets the default mode (``0o666 & ~umask``), a replaced file keeps its mode.

        Returns:
            The written path (as given).

        Raises:
            NotFittedError: if the model lacks fitted parameters (the file could not be loaded).
            HyperionFileError: for a path that cannot be written (empty, a directory, a parent
                that is a file, no permission) or datasets whose names collide, naming the path.
            UnsafeFormatError: for a pickle path without ``allow_pickle=True``.
            ConfigError, StrictJSONError: if the config is not strict JSON or lacks ``class_name``/``name``.
        """
        target = Path(path)
        missing = self.missing_params()
        if missing:
            raise NotFittedError(
                f"{type(self).__name__} is not fitted (missing {', '.join(missing)}); fit or load it before save()"
            )
        check_output_path(path)
        if is_pickle_path(target):
            if not allow_pickle:
                raise refuse_pickle(target, "write")
            data = pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

            def write_pickle(tmp: Path) -> None:
                tmp.write_bytes(data)

            atomic_write(target, write_pickle)
            return target
        text = self.to_json()

        def write(tmp: Path) -> None:
            with h5py.File(tmp, "w") as f:
                f.create_dataset(CONFIG_DATASET, data=np.bytes_(text.encode("utf-8")))
                try:
                    self.save_params(f)
                except HyperionFileError as err:
                    raise HyperionFileError(f"{target}: {err}", path=target) from err

        atomic_write(target, write)
        return target

    @staticmethod
    def _load_pickle(path: Path, allow_pickle: bool) -> Any:
        if not allow_pickle:
            raise refuse_pickle(path, "load")
        try:
            with path.open("rb") as handle:
                return pickle.load(handle)
        except FileNotFoundError as err:
            raise HyperionFileError(f"{path}: no such file", path=path) from err
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError) as err:
            raise HyperionFileError(f"{path}: cannot unpickle: {err}", path=path) from err

    @classmethod
    def _load_open(cls, f: h5py.File, config: dict[str, Any], path: Path, *, saved_as: str | None = None) -> Self:
        try:
            with _tracking_reads() as reads:
                checked = cls.check_config(config, saved_as=saved_as)
                model = cls.load_params(f, checked)
            unused = sorted(set(_datasets(f)) - reads - {CONFIG_DATASET})
            if not reads:  # a model without parameters, or a plug-in reading its own way: check its prefix only
                prefix = f"{model.name}/" if model.name else None
                unused = [u for u in unused if prefix is not None and u.startswith(prefix)]
            if unused:
                raise HyperionFileError(
                    f"{path}: dataset(s) {['/' + u for u in unused[:5]]} are not parameters of the "
                    f"{config['class_name']!r} model the config names; the file's class_name or name was edited "
                    "or the file is corrupt: re-save it from the right model (a plug-in class must read its "
                    "parameters with _load_params_to_dict)",
                    path=path,
                )
            return model
        except HyperionFileError:
            raise
        except UnknownHyperionClassError as err:
            if err.path is not None:
                raise
            raise UnknownHyperionClassError(err.name, err.available, path=path) from err
        except UnknownConfigKeyError as err:
            owner = err.config_type if err.config_type and err.config_type != cls.__name__ else cls.__name__
            raise UnknownConfigKeyError(f"{path}: {owner}", err.unknown, err.known) from err
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}", config_type=err.config_type, key=err.key) from err
        except HyperionError as err:
            raise HyperionFileError(f"{path}: {err}", path=path) from err
        except VoiceHubError:
            raise
        except H5_READ_ERRORS as err:
            raise corrupt(path, f"cannot load {cls.__name__} parameters", err) from err

    @classmethod
    def load(cls, path: PathLike, *, allow_pickle: bool = False) -> Self:
        """Load a model of this class (or a subclass) from ``path``.

        Raises:
            HyperionFileError: for a missing, truncated, corrupt or malformed file.
            UnsafeFormatError: for a pickle without ``allow_pickle=True``.
            ConfigError: if the file holds another class or an invalid config.
        """
        file = Path(path)
        if is_pickle_path(file):
            obj = cls._load_pickle(file, allow_pickle)
            if not isinstance(obj, cls):
                raise HyperionFileError(f"{file}: holds a {type(obj).__name__}, expected {cls.__name__}", path=file)
            return obj
        with reading(file), open_hdf5(file) as f:
            config = read_config_dataset(f, file)
            target = cls
            if config["class_name"] != cls.__name__:
                found = _registry.resolve(config["class_name"])
                if found is None or not issubclass(found, cls):
                    raise ConfigError(
                        f"{file}: holds a {config['class_name']!r} model, expected {cls.__name__}; "
                        "use HyperNPModel.auto_load to load any class",
                        config_type=cls.__name__,
                        key="class_name",
                    )
                target = found
            return target._load_open(f, config, file)

    @classmethod
    def load_config(cls, path: PathLike, *, allow_pickle: bool = False) -> dict[str, Any]:
        """Read only the configuration of a saved model.

        Accepts a Hyperion HDF5 file, a plain JSON text file holding the config object, or (with
        ``allow_pickle=True``) a pickled model.

        Raises:
            HyperionFileError: if the file is missing or neither HDF5 nor a JSON config.
            UnsafeFormatError: for a pickle without ``allow_pickle=True``.
        """
        file = Path(path)
        if is_pickle_path(file):
            obj = cls._load_pickle(file, allow_pickle)
            if not isinstance(obj, HyperNPModel):
                raise HyperionFileError(f"{file}: holds a {type(obj).__name__}, not a HyperNPModel", path=file)
            return obj.get_config()
        if file.is_file() and not h5py.is_hdf5(file):
            with file.open("rb") as handle:
                head = handle.read(1)
            if head and head != PICKLE_MAGIC and head != HDF5_SIGNATURE[:1]:
                return parse_config_text(file.read_bytes(), file)
        with reading(file), open_hdf5(file) as f:
            return read_config_dataset(f, file)

    @staticmethod
    def auto_load(
        path: PathLike,
        extra_objs: Mapping[str, type[HyperNPModel]] | None = None,
        *,
        allow_pickle: bool = False,
    ) -> HyperNPModel:
        """Load a model of any registered class, chosen by the file's ``class_name``.

        Works in a fresh process: maintained classes are found through a lazy catalog, plug-ins
        through the ``voicehub.hyperion_np_models`` entry-point group.

        Args:
            path: the model file.
            extra_objs: explicit ``class_name -> class`` mapping for caller-supplied plug-in
                classes; it takes precedence over the registry, also for the children of a
                container, and the mapped class may have another name than ``class_name``
                (a subclass of the saved class, or a renamed class).
            allow_pickle: allow ``.pkl`` files (trusted files only).

        Raises:
            UnknownHyperionClassError: if ``class_name`` is not registered, naming the file.
            HyperionFileError, UnsafeFormatError, ConfigError: as for :meth:`load`.
        """
        file = Path(path)
        if is_pickle_path(file):
            obj = HyperNPModel._load_pickle(file, allow_pickle)
            if not isinstance(obj, HyperNPModel):
                raise HyperionFileError(f"{file}: holds a {type(obj).__name__}, not a HyperNPModel", path=file)
            return obj
        with reading(file), open_hdf5(file) as f:
            config = read_config_dataset(f, file)
            class_name = config["class_name"]
            extra = dict(extra_objs or {})
            target = extra.get(class_name) or _registry.resolve(class_name)
            if target is None:
                names = set(_registry.available()) | set(extra)
                raise UnknownHyperionClassError(class_name, names, path=file)
            if not (isinstance(target, type) and issubclass(target, HyperNPModel)):
                raise ConfigError(f"{file}: class {class_name!r} resolves to {target!r}, not a HyperNPModel")
            token = _LOAD_EXTRA.set(extra)
            try:
                return target._load_open(f, config, file, saved_as=class_name if class_name in extra else None)
            finally:
                _LOAD_EXTRA.reset(token)

    # ------------------------------------------------------------------ misc
    def copy(self) -> Self:
        """Return a deep copy of the model."""
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "class_name")
        return f"{type(self).__name__}({fields})"


__all__ = ["DTypeSpec", "HyperNPModel", "config_to_json_value", "resolve_class"]
