"""Closed, typed, versioned configuration records with a strict-JSON round trip.

A config is a frozen dataclass deriving from :class:`Config`. Its serialized form is a
JSON object holding every field plus two tags: ``type`` (the class's ``config_type``) and
``schema_version``. Loading dispatches on those tags alone, rejects unknown keys (listing
the known ones), type-checks every field, and upgrades older documents through the class's
explicit ``migrations`` table, one version step at a time.

Example::

    @dataclass(frozen=True, kw_only=True)
    class FrontEndConfig(Config):
        config_type: ClassVar[str] = "front-end"
        schema_version: ClassVar[int] = 2
        migrations: ClassVar[Mapping[int, Migration]] = {1: _rename_nmels}

        sample_rate: int = 16000
        num_mel_bins: int = 80
"""

from __future__ import annotations

import dataclasses
import enum
import os
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, TypeVar, get_args, get_origin

import numpy as np

from voicehub.core import strict_json
from voicehub.core.errors import ConfigError, UnknownConfigKeyError
from voicehub.core.files import CONFIG_FILE_NAME, write_text_atomic

Migration = Callable[[dict[str, Any]], dict[str, Any]]
"""Upgrades a serialized config from schema version ``v`` to ``v + 1`` (tags excluded)."""

_RESERVED_KEYS = frozenset({"type", "schema_version"})

C = TypeVar("C", bound="Config")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config:
    """Base class of every VoiceHub configuration record.

    Subclasses are ``@dataclass(frozen=True, kw_only=True)`` (without ``slots=True``: a slotted
    dataclass is a new class object, which breaks zero-argument ``super()`` in an overridden
    :meth:`validate` on Python < 3.14) and set the class
    variables ``config_type`` (the ``type`` tag), ``schema_version`` and, once a version
    has been bumped, ``migrations``. Field values are validated against their annotations
    when the object is created; override :meth:`validate` for range checks (call
    ``super().validate()`` first).

    Supported field types: ``bool``, ``int``, ``float``, ``str``, ``None`` unions,
    ``Literal[...]``, string ``enum.Enum`` subclasses, ``tuple[T, ...]``,
    ``dict[str, T]`` and nested ``Config`` subclasses.
    """

    config_type: ClassVar[str] = "config"
    schema_version: ClassVar[int] = 1
    migrations: ClassVar[Mapping[int, Migration]] = {}

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, np.generic):  # np.float32(0.5) from a sweep is a plain 0.5
                object.__setattr__(self, field.name, value.item())
        self.validate()

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Check every field against its annotation.

        Raises:
            ConfigError: naming the field, the expected type and the value given.
        """
        hints = _field_hints(type(self))
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            problem = _type_problem(value, hints[field.name])
            if problem is not None:
                raise ConfigError(
                    f"{self.config_type}.{field.name}: expected {problem}, got {value!r}",
                    config_type=self.config_type,
                    key=field.name,
                )

    # --------------------------------------------------------------- serialization
    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form: every field plus ``type`` and ``schema_version``."""
        out: dict[str, Any] = {"type": self.config_type, "schema_version": self.schema_version}
        for field in dataclasses.fields(self):
            out[field.name] = _to_json_value(getattr(self, field.name))
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        """Return the config as canonical strict JSON text."""
        return strict_json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def known_keys(cls) -> tuple[str, ...]:
        """The field names ``from_dict`` accepts, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Build a config from its serialized form.

        ``type`` must equal ``config_type`` when present; an older ``schema_version`` is
        migrated step by step; a newer one is refused.

        Args:
            data: a mapping as produced by :meth:`to_dict` (tags optional).

        Raises:
            UnknownConfigKeyError: for keys that are not fields, listing the known keys.
            ConfigError: for a wrong ``type`` tag, an unsupported ``schema_version`` or a
                field of the wrong type.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(
                f"{cls.config_type}: expected a JSON object, got {type(data).__name__}",
                config_type=cls.config_type,
            )
        payload = dict(data)
        tag = payload.pop("type", cls.config_type)
        if tag != cls.config_type:
            raise ConfigError(
                f"config type {tag!r} cannot be loaded as {cls.__name__} (which reads type {cls.config_type!r})",
                config_type=cls.config_type,
                key="type",
            )
        version = payload.pop("schema_version", cls.schema_version)
        payload = cls._migrate(payload, version)
        known = set(cls.known_keys())
        unknown = set(payload) - known
        if unknown:
            raise UnknownConfigKeyError(cls.config_type, unknown, known)
        hints = _field_hints(cls)
        kwargs = {
            key: _from_json_value(value, hints[key], f"{cls.config_type}.{key}") for key, value in payload.items()
        }
        try:
            return cls(**kwargs)
        except ConfigError:
            raise
        except (TypeError, ValueError) as err:
            raise ConfigError(f"{cls.config_type}: {err}", config_type=cls.config_type) from err

    @classmethod
    def _migrate(cls, payload: dict[str, Any], version: Any) -> dict[str, Any]:
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ConfigError(
                f"{cls.config_type}: schema_version must be a positive integer, got {version!r}",
                config_type=cls.config_type,
                key="schema_version",
            )
        if version > cls.schema_version:
            raise ConfigError(
                f"{cls.config_type}: schema_version {version} is newer than this VoiceHub "
                f"understands ({cls.schema_version}); upgrade VoiceHub to read it",
                config_type=cls.config_type,
                key="schema_version",
            )
        while version < cls.schema_version:
            step = cls.migrations.get(version)
            if step is None:
                raise ConfigError(
                    f"{cls.config_type}: no migration from schema_version {version} to "
                    f"{version + 1}; this file cannot be upgraded",
                    config_type=cls.config_type,
                    key="schema_version",
                )
            payload = step(dict(payload))
            version += 1
        return payload

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """Parse strict JSON text and build the config (see :meth:`from_dict`)."""
        return cls.from_dict(strict_json.loads(text))

    def replace(self, **changes: Any) -> Self:
        """Return a validated copy with ``changes`` applied.

        Raises:
            UnknownConfigKeyError: for a name that is not a field.
            ConfigError: when a new value has the wrong type.
        """
        unknown = set(changes) - set(self.known_keys())
        if unknown:
            raise UnknownConfigKeyError(self.config_type, unknown, self.known_keys())
        return dataclasses.replace(self, **changes)

    # ---------------------------------------------------------------------- files
    def save_pretrained(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``config.json`` into ``directory`` (created if needed), atomically.

        Returns:
            The path of the written file.

        Raises:
            OutputPathError: if the directory cannot be created or written.
        """
        return write_text_atomic(Path(directory) / CONFIG_FILE_NAME, self.to_json() + "\n", create_parents=True)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str]) -> Self:
        """Read a config from a ``config.json`` file or a directory holding one.

        Raises:
            ConfigError: if the file is missing or not strict JSON, naming the path.
        """
        file = Path(path)
        if file.is_dir():
            file = file / CONFIG_FILE_NAME
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"cannot read config file {file}: {err.strerror or err}") from err
        try:
            return cls.from_json(text)
        except ConfigError as err:
            raise ConfigError(f"{file}: {err}", config_type=err.config_type, key=err.key) from err
        except ValueError as err:
            raise ConfigError(f"{file}: {err}", config_type=cls.config_type) from err


# ---------------------------------------------------------------------- helpers
_HINT_CACHE: dict[type, dict[str, Any]] = {}


def _field_hints(cls: type) -> dict[str, Any]:
    hints = _HINT_CACHE.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _HINT_CACHE[cls] = hints
    return hints


def _describe(hint: Any) -> str:
    if hint is type(None):
        return "None"
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _type_problem(value: Any, hint: Any) -> str | None:
    """Return a description of the expected type when ``value`` does not match ``hint``."""
    if hint is Any:
        return None
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = get_args(hint)
        if all(_type_problem(value, option) is not None for option in options):
            return " or ".join(_describe(o) for o in options)
        return None
    if hint is type(None):
        return None if value is None else "None"
    if origin is Literal:
        return None if value in get_args(hint) else f"one of {list(get_args(hint))}"
    if origin is tuple:
        args = get_args(hint)
        if not isinstance(value, tuple):
            return _describe(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            bad = [item for item in value if _type_problem(item, args[0]) is not None]
            return f"tuple of {_describe(args[0])}" if bad else None
        if len(args) != len(value):
            return _describe(hint)
        return _describe(hint) if any(_type_problem(v, a) for v, a in zip(value, args, strict=True)) else None
    if origin in (dict, Mapping):
        key_hint, value_hint = get_args(hint)
        if not isinstance(value, Mapping):
            return _describe(hint)
        for key, item in value.items():
            if _type_problem(key, key_hint) or _type_problem(item, value_hint):
                return _describe(hint)
        return None
    if hint is bool:
        return None if isinstance(value, bool) else "bool"
    if hint is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else "int"
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else "float"
    if isinstance(hint, type):
        return None if isinstance(value, hint) else hint.__name__
    return None


def _to_json_value(value: Any) -> Any:
    if isinstance(value, Config):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return [_to_json_value(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _to_json_value(v) for k, v in value.items()}
    return value


def _from_json_value(value: Any, hint: Any, where: str) -> Any:
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in get_args(hint):
            return None
        for option in get_args(hint):
            if option is type(None):
                continue
            converted = _from_json_value(value, option, where)
            if _type_problem(converted, option) is None:
                return converted
        return value
    if origin is tuple and isinstance(value, list):
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_json_value(v, args[0], where) for v in value)
        return tuple(_from_json_value(v, a, where) for v, a in zip(value, args, strict=False))
    if origin in (dict, Mapping) and isinstance(value, Mapping):
        _, value_hint = get_args(hint)
        return {k: _from_json_value(v, value_hint, where) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, Config) and isinstance(value, Mapping):
        return hint.from_dict(value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum) and not isinstance(value, hint):
        try:
            return hint(value)
        except ValueError as err:
            options = [m.value for m in hint]
            raise ConfigError(f"{where}: expected one of {options}, got {value!r}") from err
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


__all__ = ["CONFIG_FILE_NAME", "Config", "Migration", "write_text_atomic"]
