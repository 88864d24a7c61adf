"""Errors of the training layer.

Each subclasses :class:`~voicehub.core.errors.VoiceHubError` and the builtin a caller would catch,
carries structured fields, and says what was wrong, what was expected and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from voicehub.core.errors import CheckpointError, ConfigError, VoiceHubError


class TrainingError(VoiceHubError, RuntimeError):
    """Training cannot start or continue."""


class NonFiniteLossError(TrainingError):
    """A step's loss (or, in float32, its gradient norm) is NaN or infinite; the step was not applied.

    Attributes:
        step: the 1-based optimizer step that failed.
        loss: the loss (mean over ranks and micro-batches), or the gradient norm when the loss was finite.
        batches: ``(record index, audio path)`` of each of this rank's records in the micro-batches
            whose loss was not finite (every record of the step when none was, e.g. inf gradients).
    """

    def __init__(self, message: str, *, step: int, loss: float, batches: tuple[tuple[int, str], ...]):
        super().__init__(message)
        self.step = step
        self.loss = loss
        self.batches = batches


class DistributedTimeoutError(TrainingError, TimeoutError):
    """A DDP rank waited longer than the process-group timeout for the others (a stalled or lost rank).

    Attributes:
        rank: the rank that gave up waiting.
        timeout_s: the timeout, in seconds (``TrainerConfig.distributed_timeout_s``).
        where: what the run was doing (``"step 3"``).
        reason: torch's message.
    """

    def __init__(self, *, rank: int, timeout_s: float, where: str, reason: str):
        self.rank = rank
        self.timeout_s = timeout_s
        self.where = where
        self.reason = reason
        super().__init__(
            f"rank {rank}, {where}: another rank did not answer within trainer.distributed_timeout_s = "
            f"{timeout_s:g} s ({reason}); look for a stalled or crashed rank in its log (a hung data read, "
            f"out of memory), or raise distributed_timeout_s if a step really takes that long"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_timeout_error, (self.rank, self.timeout_s, self.where, self.reason))


def _rebuild_timeout_error(rank: int, timeout_s: float, where: str, reason: str) -> DistributedTimeoutError:
    return DistributedTimeoutError(rank=rank, timeout_s=timeout_s, where=where, reason=reason)


class TrainingSpecError(ConfigError):
    """A training declaration is missing, malformed, or refuses training.

    Attributes:
        model_type: the model whose declaration is at fault.
    """

    def __init__(self, message: str, *, model_type: str | None = None):
        super().__init__(message, config_type="training_spec", key=model_type)
        self.model_type = model_type


class TrainingNotSupportedError(TrainingSpecError):
    """The model declares support level ``none`` (its reason is in the message)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestProblem:
    """One bad row of a manifest.

    Attributes:
        line: 1-based line number in the manifest file.
        field: the field at fault (``"json"`` for a line that is not a JSON object).
        message: what is wrong, what was expected.
    """

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


MAX_SHOWN_PROBLEMS = 50
"""At most this many problems are written into a :class:`ManifestError`'s message (all are in ``problems``)."""


class ManifestError(VoiceHubError, ValueError):
    """A manifest holds bad rows; every one of them is listed (validation does not stop at the first).

    The message shows the first :data:`MAX_SHOWN_PROBLEMS` and says how many more there are.

    Attributes:
        path: the manifest file.
        problems: every problem found, in line order.
    """

    def __init__(self, path: str | Path, problems: tuple[ManifestProblem, ...]):
        self.path = str(path)
        self.problems = problems
        shown = "\n  ".join(str(problem) for problem in problems[:MAX_SHOWN_PROBLEMS])
        more = len(problems) - MAX_SHOWN_PROBLEMS
        if more > 0:
            shown += f"\n  ... and {more} more problem(s) (ManifestError.problems lists them all)"
        rows = len({problem.line for problem in problems})  # line 0: the file itself, counted as one
        super().__init__(
            f"{self.path}: {len(problems)} problem(s) in {rows} row(s); fix them and run again (nothing was "
            f"trained):\n  {shown}"
        )


class SplitError(VoiceHubError, ValueError):
    """A leakage-safe split cannot be made (too few speakers or recordings for the fractions asked)."""


class TrainingCheckpointError(CheckpointError):
    """A training checkpoint is missing, incomplete, altered, or does not fit the run resuming from it."""


class ResumeMismatchError(TrainingCheckpointError):
    """A checkpoint was written by a run with another plan (model, optimizer, data, hyper-parameters).

    Attributes:
        differences: ``(key, saved, current)`` for every setting that differs.
    """

    def __init__(self, path: str | Path, differences: tuple[tuple[str, object, object], ...]):
        self.differences = differences
        shown = "; ".join(f"{key}: saved {saved!r}, now {current!r}" for key, saved, current in differences)
        super().__init__(
            f"{path}: written by a run with another training plan ({shown}); resume with the same settings "
            f"or start a new run in another output directory",
            path=path,
        )


__all__ = [
    "MAX_SHOWN_PROBLEMS",
    "DistributedTimeoutError",
    "ManifestError",
    "ManifestProblem",
    "NonFiniteLossError",
    "ResumeMismatchError",
    "SplitError",
    "TrainingCheckpointError",
    "TrainingError",
    "TrainingNotSupportedError",
    "TrainingSpecError",
]
