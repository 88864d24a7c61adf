"""The VoiceHub error hierarchy.

Every error VoiceHub raises derives from :class:`VoiceHubError` and from the builtin
exception a caller would naturally catch (``UnknownModelError`` is also a ``KeyError``,
``ConfigError`` a ``ValueError``), so code written against builtins keeps working.
Errors carry structured fields next to their message; causes are chained with
``raise ... from err``. Layers above ``core`` define their own errors as subclasses.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class VoiceHubError(Exception):
    """Root of every error raised by VoiceHub."""


class ConfigError(VoiceHubError, ValueError):
    """A configuration value, key or file is invalid.

    Attributes:
        config_type: the config's ``type`` tag (or class name) the problem belongs to.
        key: the offending key, when one key is at fault.
    """

    def __init__(self, message: str, *, config_type: str | None = None, key: str | None = None):
        super().__init__(message)
        self.config_type = config_type
        self.key = key


class UnknownConfigKeyError(ConfigError, KeyError):
    """``from_dict`` met keys the config does not define.

    Attributes:
        unknown: the keys that were not recognised, sorted.
        known: every key the config accepts, sorted.
    """

    def __init__(self, config_type: str, unknown: Iterable[str], known: Iterable[str]):
        self.unknown = tuple(sorted(unknown))
        self.known = tuple(sorted(known))
        super().__init__(
            f"{config_type}: unknown key(s) {list(self.unknown)}; known keys are {list(self.known)}",
            config_type=config_type,
            key=self.unknown[0] if self.unknown else None,
        )

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class StrictJSONError(VoiceHubError, ValueError):
    """A document is not strict JSON (NaN, Infinity, duplicate keys, non-string keys...)."""


class AudioError(VoiceHubError, ValueError):
    """Audio input is unusable.

    Attributes:
        source: the file path or a short description of the array that was at fault.
    """

    def __init__(self, message: str, *, source: str | None = None):
        super().__init__(message)
        self.source = source


class AudioDecodeError(AudioError):
    """A file could not be decoded as audio (missing, empty, truncated, not audio)."""


class SampleRateError(AudioError):
    """A sample rate is missing, invalid, conflicting, or not supported by a model.

    Attributes:
        expected: the sample rate(s) that would have been accepted, in Hz.
        actual: the sample rate that was given, in Hz (``None`` when it was missing).
    """

    def __init__(
        self,
        message: str,
        *,
        expected: tuple[int, ...] = (),
        actual: int | None = None,
        source: str | None = None,
    ):
        super().__init__(message, source=source)
        self.expected = expected
        self.actual = actual


class OutputValidationError(VoiceHubError, ValueError):
    """A normalized output record (segments, timestamps, scores...) violates its invariants."""


class UnknownNameError(VoiceHubError, KeyError):
    """A name looked up in a registry (model, architecture, pass, task...) is not registered.

    Catch this for any unknown name; the subclasses say which registry it was.

    Attributes:
        name: the key that was looked up.
        available: the keys that are registered, sorted.
        kind: what was looked up ("model", "architecture", "optimization pass", ...).
    """

    def __init__(self, name: str, available: Iterable[str], *, kind: str = "model"):
        self.name = name
        self.available = tuple(sorted(available))
        self.kind = kind
        super().__init__(f"unknown {kind} {name!r}; available: {', '.join(self.available) or '(none)'}")

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownModelError(UnknownNameError):
    """A model type, alias or architecture is not registered."""


class UnknownPassError(UnknownNameError):
    """An optimization pass name is not registered."""

    def __init__(self, name: str, available: Iterable[str]):
        super().__init__(name, available, kind="optimization pass")


class UnknownTaskError(UnknownNameError):
    """A speech task name or alias is not known."""

    def __init__(self, name: str, available: Iterable[str]):
        super().__init__(name, available, kind="speech task")


class RegistryError(VoiceHubError, ValueError):
    """A registration is refused (duplicate name, alias collision, second task default...)."""


class TaskMismatchError(VoiceHubError, ValueError):
    """A model registered for one speech task was asked for through another task's API."""


class OptionalDependencyError(VoiceHubError, ImportError):
    """An optional third-party package is needed but not installed.

    Attributes:
        package: the import name that failed.
        install_hint: the command that installs it.
    """

    def __init__(self, package: str, *, purpose: str, install_hint: str):
        self.package = package
        self.install_hint = install_hint
        super().__init__(f"{purpose} needs the {package!r} package; install it with: {install_hint}")


class DeviceError(VoiceHubError, ValueError):
    """A device or dtype request cannot be satisfied on this machine."""


class LifecycleError(VoiceHubError, RuntimeError):
    """An operation is not allowed in the runtime's current lifecycle state."""


class CheckpointError(VoiceHubError, ValueError):
    """A checkpoint is missing, corrupt, or does not match the model it is loaded into.

    Attributes:
        path: the file or source at fault, when known.
    """

    def __init__(self, message: str, *, path: str | Path | None = None):
        super().__init__(message)
        self.path = str(path) if path is not None else None


class CheckpointMismatchError(CheckpointError):
    """A checkpoint's tensors do not fit the native graph; nothing was loaded.

    Raised by the strict checkpoint adapters (through
    :func:`voicehub.core.checkpoint.check_state_dict`) *before* the model is touched, with every
    problem listed at once. ``voicehub.architectures.errors`` re-exports it.

    Attributes:
        missing: tensor names the graph needs and the checkpoint lacks, sorted.
        unexpected: checkpoint tensor names nothing consumes, sorted.
        mismatched: ``(name, expected shape, checkpoint shape)`` triples, sorted by name.
        not_floating: ``(name, dtype)`` of tensors that must be floating point and are not, sorted.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        missing: Iterable[str] = (),
        unexpected: Iterable[str] = (),
        mismatched: Iterable[tuple[str, tuple[int, ...], tuple[int, ...]]] = (),
        not_floating: Iterable[tuple[str, str]] = (),
    ):
        super().__init__(message, path=path)
        self.missing = tuple(sorted(missing))
        self.unexpected = tuple(sorted(unexpected))
        self.mismatched = tuple(sorted(mismatched))
        self.not_floating = tuple(sorted(not_floating))


class OutputPathError(VoiceHubError, OSError):
    """A destination file cannot be written (missing or unwritable directory, a directory...).

    Attributes:
        path: the destination at fault.
    """

    def __init__(self, message: str, *, path: str | Path):
        super().__init__(message)
        self.path = str(path)

    def __str__(self) -> str:  # OSError would otherwise format errno/strerror
        return str(self.args[0])


class InferenceOptionError(VoiceHubError, ValueError):
    """An inference option (threshold, duration, language...) has an invalid value."""


class ArgumentTypeError(VoiceHubError, TypeError):
    """A keyword argument of a public call has the wrong type (``lazy_load="no"``)."""


def check_flag(value: object, *, name: str) -> bool:
    """Return ``value`` when it is a ``bool``; refuse anything else, truthy strings included.

    ``lazy_load="no"`` would otherwise count as true; NumPy booleans are accepted.

    Raises:
        ArgumentTypeError: naming the argument, the value and the fix.
    """
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_" and type(value).__module__ == "numpy":
        return bool(value)
    raise ArgumentTypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")


__all__ = [
    "ArgumentTypeError",
    "AudioDecodeError",
    "AudioError",
    "CheckpointError",
    "CheckpointMismatchError",
    "ConfigError",
    "DeviceError",
    "InferenceOptionError",
    "LifecycleError",
    "OptionalDependencyError",
    "OutputPathError",
    "OutputValidationError",
    "RegistryError",
    "SampleRateError",
    "StrictJSONError",
    "TaskMismatchError",
    "UnknownConfigKeyError",
    "UnknownModelError",
    "UnknownNameError",
    "UnknownPassError",
    "UnknownTaskError",
    "VoiceHubError",
    "check_flag",
]
