"""The engine-neutral worker of a corpus job: a batch of paths in, one Arrow table of columns out.

Every engine (the local process pool, Ray actors) holds one :class:`BatchWorker` per worker
process and calls it on batches of paths; the worker is built from the job's steps, whose
wrappers travel as pickled recipes (:mod:`voicehub._recipe`) and load once, on first use.

A step is a *task*, not a model: ``vad`` (any voice-activity model), ``embed`` (any
speaker-verification model), ``transcribe`` (any speech-recognition model). Each file is run
through every step on its own (no cross-file padding, so a result never depends on its batch),
and a file that fails becomes a row with its ``error`` set and null results, never a lost batch.

Columns (one row per input path, in the batch's order):

* ``path`` (string): the input as given; ``duration_s`` (float64, null when unreadable): from the
  file header (else the first step's output), kept when a later step fails;
* ``vad_segments``: list of ``{start_s, end_s, score}`` (seconds, float64);
* ``embedding``: list of float32;
* ``text`` (string) and ``transcript_segments``: list of ``{start_s, end_s, text}``;
* ``error`` (string, null when the file succeeded): ``"<step>: <ErrorType>: <message>"`` (step
  ``read`` for a file that cannot be read); a failed file's results are all null.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from voicehub.core.tasks import SpeechTask
from voicehub.errors import BatchInputError, BatchItemError

if TYPE_CHECKING:
    import pyarrow as pa

    from voicehub.modeling import AnySpeechModel

OnError = Literal["record", "raise"]
"""What a failing file does: ``record`` an error row and go on, or ``raise``
:class:`~voicehub.errors.BatchItemError`."""

STEP_TASKS: Mapping[str, SpeechTask] = {
    "vad": SpeechTask.VOICE_ACTIVITY_DETECTION,
    "embed": SpeechTask.SPEAKER_VERIFICATION,
    "transcribe": SpeechTask.AUTOMATIC_SPEECH_RECOGNITION,
}
"""Step name -> the task whose wrappers run it."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One step of a corpus job: a task and the wrapper that runs it.

    Attributes:
        name: ``"vad"``, ``"embed"`` or ``"transcribe"`` (see :data:`STEP_TASKS`).
        model: the wrapper (any model of the step's task; pickled to the workers as a recipe).
    """

    name: str
    model: AnySpeechModel

    def __post_init__(self) -> None:
        task = STEP_TASKS.get(self.name)
        if task is None:
            raise BatchInputError(f"batch step {self.name!r}: expected one of {sorted(STEP_TASKS)}")
        if self.model.task is not task:
            raise BatchInputError(
                f"batch step {self.name!r} needs a {task.value} model, got {type(self.model).__name__} "
                f"({self.model.task.value}); pass a model of that task, or leave it out for the task's default"
            )


def _vad(model: Any, path: str) -> tuple[dict[str, object], float | None]:
    out = model.detect(path)
    segments = [{"start_s": s.start_s, "end_s": s.end_s, "score": s.score} for s in out.segments]
    return {"vad_segments": segments}, out.duration_s


def _embed(model: Any, path: str) -> tuple[dict[str, object], float | None]:
    out = model.embed(path)
    return {"embedding": out.embedding.astype("float32").tolist()}, out.duration_s


def _transcribe(model: Any, path: str) -> tuple[dict[str, object], float | None]:
    out = model.transcribe(path)
    segments = [{"start_s": s.start_s, "end_s": s.end_s, "text": s.text} for s in out.segments]
    return {"text": out.text, "transcript_segments": segments}, out.duration_s


_RUNNERS: Mapping[str, Callable[[Any, str], tuple[dict[str, object], float | None]]] = {
    "vad": _vad,
    "embed": _embed,
    "transcribe": _transcribe,
}
_COLUMNS: Mapping[str, tuple[str, ...]] = {
    "vad": ("vad_segments",),
    "embed": ("embedding",),
    "transcribe": ("text", "transcript_segments"),
}


def output_schema(step_names: Sequence[str]) -> pa.Schema:
    """The Arrow schema of a job with these steps (the columns in the module docstring)."""
    import pyarrow as pa

    fields = [pa.field("path", pa.string(), nullable=False), pa.field("duration_s", pa.float64())]
    segment = pa.struct([("start_s", pa.float64()), ("end_s", pa.float64())])
    types: dict[str, pa.DataType] = {
        "vad_segments": pa.list_(pa.struct([*segment, ("score", pa.float64())])),
        "embedding": pa.list_(pa.float32()),
        "text": pa.string(),
        "transcript_segments": pa.list_(pa.struct([*segment, ("text", pa.string())])),
    }
    for name in step_names:
        fields.extend(pa.field(column, types[column]) for column in _COLUMNS[name])
    fields.append(pa.field("error", pa.string()))
    return pa.schema(fields)


def describe_steps(steps: Sequence[Step]) -> list[dict[str, object]]:
    """What makes each step's results, as JSON values: recorded with the output, compared on resume.

    Per step: its name, the model type, the wrapper class, the checkpoint source (its string
    form, ``None`` for a model without one), the dtype, the model config and the default
    inference options (their JSON documents) and the active inference optimization plan. The
    device is left out: the same job may resume on another machine.

    Raises:
        UnpicklableModelError: for a wrapper that cannot travel as a recipe (see :mod:`voicehub._recipe`).
    """
    import json

    from voicehub._recipe import recipe_of

    described: list[dict[str, object]] = []
    for step in steps:
        recipe = recipe_of(step.model)
        described.append(
            {
                "step": step.name,
                "model_type": step.model.config.model_type,
                "wrapper": f"{recipe.wrapper_class.__module__}.{recipe.wrapper_class.__qualname__}",
                "source": recipe.source.to_string() if recipe.source is not None else None,
                "dtype": recipe.dtype.value,
                "config": json.loads(recipe.config_json),
                "options": json.loads(recipe.options_json),
                "plan": [repr(optimization_pass) for optimization_pass in recipe.plan],
            }
        )
    return described


def _header_duration_s(path: str) -> float | None:
    from voicehub.core.audio_stream import audio_file_info

    info = audio_file_info(path)
    return info.num_frames / info.sample_rate if info.num_frames > 0 else None


def pin_torch_threads(num_threads: int) -> None:
    """Limit this process's torch (and OpenMP/BLAS) threads to the worker's CPUs.

    Sets ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` for libraries not loaded yet, then
    ``torch.set_num_threads`` (intra-op) and one inter-op thread.
    """
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(num_threads)
    import torch

    torch.set_num_threads(num_threads)
    with contextlib.suppress(RuntimeError):  # already set, or inter-op work already started in this process
        torch.set_num_interop_threads(1)


class BatchWorker:
    """Runs a job's steps on batches of paths; one per worker process (or Ray actor).

    Args:
        steps: the job's steps, in order.
        on_error: ``"record"`` or ``"raise"`` (see :data:`OnError`).
    """

    def __init__(self, steps: Sequence[Step], *, on_error: OnError = "record") -> None:
        self.steps = tuple(steps)
        self.on_error = on_error
        self.schema = output_schema([step.name for step in self.steps])

    def run_file(self, path: str) -> dict[str, object]:
        """One row for ``path`` (see the module docstring); errors are recorded or raised per ``on_error``.

        Raises:
            BatchItemError: with ``on_error="raise"``, naming the file, the step and the error.
        """
        row: dict[str, object] = {name: None for name in self.schema.names}
        row["path"] = path
        stage = "read"
        duration_s: float | None = None
        try:
            duration_s = _header_duration_s(path)
            for step in self.steps:
                stage = step.name
                columns, step_duration_s = _RUNNERS[step.name](step.model, path)
                row.update(columns)
                duration_s = step_duration_s if duration_s is None else duration_s
        except Exception as err:
            message = f"{stage}: {type(err).__name__}: {err}"
            if self.on_error == "raise":
                raise BatchItemError(f"{path}: {message}") from err
            row.update({name: None for name in self.schema.names if name not in ("path", "duration_s")})
            row["error"] = message
        row["duration_s"] = duration_s  # kept for a readable file whose step failed (its hours still count)
        return row

    def __call__(self, paths: Sequence[str]) -> pa.Table:
        """The table of ``paths`` (one row each, in order), with :func:`output_schema`.

        Raises:
            BatchItemError: with ``on_error="raise"``, for the first file that fails.
        """
        import pyarrow as pa

        return pa.Table.from_pylist([self.run_file(path) for path in paths], schema=self.schema)


__all__ = ["STEP_TASKS", "BatchWorker", "OnError", "Step", "describe_steps", "output_schema", "pin_torch_threads"]
