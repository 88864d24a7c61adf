"""Errors of the meta-package (factories, task wrappers, pipelines)."""

from __future__ import annotations

import pickle
from collections.abc import Iterable

from voicehub.core.errors import ConfigError, InferenceOptionError, LifecycleError, UnknownModelError, VoiceHubError


class UnknownInferenceOptionError(InferenceOptionError, TypeError):
    """An inference call got an option its wrapper does not define.

    It is a ``TypeError`` like any unexpected keyword argument, and an ``InferenceOptionError``.

    Attributes:
        unknown: the unrecognised option names, sorted.
        known: every option the wrapper accepts, sorted.
    """

    def __init__(self, producer: str, unknown: Iterable[str], known: Iterable[str]):
        self.unknown = tuple(sorted(unknown))
        self.known = tuple(sorted(known))
        super().__init__(
            f"{producer}() got unknown option(s) {list(self.unknown)}; valid options are {list(self.known)}"
        )


class NoModelForTaskError(UnknownModelError):
    """A task was asked for its default model, but no model of that task is registered.

    Attributes:
        task: the task's name.
        tasks_with_models: the tasks that do have registered models, sorted.
    """

    def __init__(self, task: str, tasks_with_models: Iterable[str]):
        super().__init__(f"default of {task}", (), kind=f"{task} model")
        self.task = task
        self.tasks_with_models = tuple(sorted(tasks_with_models))
        self.args = (
            f"no {task} model is registered yet; tasks with models: "
            f"{', '.join(self.tasks_with_models) or '(none)'} (see `voicehub models`), or register one "
            f"(docs/models.md, 'Registering a model')",
        )


class UnpicklableModelError(LifecycleError, pickle.PicklingError):
    """A wrapper cannot be pickled as a recipe in its current state (see :mod:`voicehub._recipe`).

    It is a ``pickle.PicklingError`` (what ``pickle``, ``cloudpickle`` and Ray callers catch) and a
    ``LifecycleError``; the message names what blocks pickling and the fix.
    """


class BatchInputError(ConfigError):
    """A corpus job's inputs or settings are unusable (an unreadable manifest, no inputs, a bad option).

    The message names the argument, what was expected and what was given.
    """


class BatchResumeMismatchError(BatchInputError):
    """A resumed corpus job's steps differ from those that wrote the parts already in its output.

    Raised before any work: rows of two models in one output would be indistinguishable.

    Attributes:
        output: the output directory.
        differences: ``(key, saved, now)`` for each recorded setting that differs.
    """

    def __init__(self, output: object, differences: tuple[tuple[str, object, object], ...]) -> None:
        self.output = output
        self.differences = differences
        listed = "; ".join(f"{key}: saved {saved!r}, now {now!r}" for key, saved, now in differences)
        super().__init__(
            f"batch output directory {output} was written by other steps than this job's ({listed}); resume with "
            f"the same model, checkpoint and options, or write into another directory"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.output, self.differences))


class BatchEngineUnreachableError(VoiceHubError, ConnectionError):
    """The Ray cluster a corpus job was pointed at (``address``) cannot be reached.

    Raised before any work, within :data:`voicehub.batch._ray.RAY_CONNECT_TIMEOUT_S` seconds
    (Ray itself would retry for ever); the command line exits with status 3.

    Attributes:
        address: the address as given (``"auto"``, ``"HOST:PORT"``, ``"ray://HOST:PORT"``).
        reason: what failed (the connection error, or Ray's message).
    """

    def __init__(self, address: str, reason: str) -> None:
        self.address = address
        self.reason = reason
        super().__init__(
            f"ray cluster at {address!r} cannot be reached ({reason}); start it (ray start --head) or give the "
            f"address of a running one (HOST:6379, ray://HOST:10001, or auto for the one `ray start` runs here)"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.address, self.reason))


class BatchItemError(VoiceHubError, RuntimeError):
    """A file failed in a corpus job run with ``on_error="raise"``.

    Built from one message string (it crosses process boundaries: workers pickle it back to the
    driver), naming the file, the step and the original error.
    """


__all__ = [
    "BatchEngineUnreachableError",
    "BatchInputError",
    "BatchItemError",
    "BatchResumeMismatchError",
    "NoModelForTaskError",
    "UnknownInferenceOptionError",
    "UnpicklableModelError",
]
