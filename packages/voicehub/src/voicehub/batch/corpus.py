""":func:`map_corpus`: run task steps over a corpus of audio files, on this machine or on Ray.

The driver (this function) expands the inputs, skips those an earlier run already wrote
(``resume=True``), orders the rest longest first and cuts it into batches of at most
``batch_size`` paths that shrink toward the end (:func:`plan_batches`, so the workers finish
together), hands them to an engine and writes each finished batch as one Parquet part
(:mod:`voicehub.batch._output`). The engines only move batches: the work is the engine-neutral
:class:`~voicehub.batch.BatchWorker`, so the local and the Ray engine give the same rows as a
plain loop.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal, TypeAlias

from voicehub.batch._inputs import expand_inputs, input_key
from voicehub.batch._output import BatchSummary, PartWriter
from voicehub.batch._worker import STEP_TASKS, OnError, Step, describe_steps, output_schema
from voicehub.core.device import DeviceLike
from voicehub.errors import BatchInputError

if TYPE_CHECKING:
    import pyarrow as pa

    from voicehub.modeling import AnySpeechModel

Engine = Literal["local", "ray"]
"""``local``: a process pool on this machine; ``ray``: Ray Data actors (``voicehub[ray]``)."""

StepLike: TypeAlias = "str | Step | AnySpeechModel"
"""A step: its name (the task's default model), a :class:`Step`, or a wrapper (its task names the step)."""

ProgressCallback = Callable[[int, float], None]
"""Called after each written part with the files and the audio seconds it held."""

StartCallback = Callable[[int, int, float], None]
"""Called once, before any batch runs, with the corpus's files, those of them an earlier run
already wrote (skipped with ``resume=True``) and their audio seconds: a progress display starts
at ``done / total`` instead of ``0 / total``."""


def _step(item: StepLike, device: DeviceLike) -> Step:
    from voicehub.modeling import PreTrainedSpeechModel

    if isinstance(item, Step):
        return item
    if isinstance(item, PreTrainedSpeechModel):
        names = [name for name, task in STEP_TASKS.items() if task is item.task]
        if not names:
            raise BatchInputError(
                f"batch steps: {type(item).__name__} serves {item.task.value}, which no batch step runs; "
                f"steps run {', '.join(f'{n} ({t.value})' for n, t in STEP_TASKS.items())}"
            )
        return Step(name=names[0], model=item)
    if isinstance(item, str):
        if item not in STEP_TASKS:
            raise BatchInputError(f"batch step {item!r}: expected one of {sorted(STEP_TASKS)}")
        from voicehub.auto import AutoModel, get_default_model_spec

        spec = get_default_model_spec(STEP_TASKS[item])
        return Step(name=item, model=AutoModel.from_pretrained(model_type=spec.model_type, device=device))
    raise BatchInputError(
        f"batch steps: expected step names {sorted(STEP_TASKS)}, Step objects or wrappers, got {type(item).__name__}"
    )


def _positive(value: object, name: str, *, real: bool = False) -> None:
    kinds = (int, float) if real else (int,)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < (0 if real else 1):
        raise BatchInputError(
            f"map_corpus {name}: expected {'a number >= 0' if real else 'an integer >= 1'}, got {value!r}"
        )


def _file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:  # missing or unreadable: an error row, done at once
        return 0


def longest_first(paths: Sequence[str]) -> list[str]:
    """``paths`` by file size, largest first (ties in input order): long files are dispatched first.

    The size stands in for the duration (exact within one format, close across formats); a
    header read per file would cost the driver seconds before the first batch on a large corpus.
    """
    sizes = {path: _file_size(path) for path in paths}
    return sorted(paths, key=lambda path: -sizes[path])


def plan_batches(paths: Sequence[str], batch_size: int, workers: int) -> list[list[str]]:
    """Cut ``paths`` into batches, longest files first, that let the workers finish together.

    Each batch holds at most ``batch_size`` files and, with more than one worker and once it
    holds one file, no more than a ``2 * workers``-th of the work (file bytes) not yet cut: the
    batches shrink toward the end of the corpus, so no worker starts a long batch while the
    others run out of work (the idle tail a fixed batch size leaves on one core).
    """
    sized = sorted(((_file_size(path), index, path) for index, path in enumerate(paths)), key=lambda t: (-t[0], t[1]))
    remaining = sum(size for size, _, _ in sized)
    batches: list[list[str]] = []
    batch: list[str] = []
    batch_bytes = 0
    for size, _, path in sized:
        if batch and (len(batch) >= batch_size or (workers > 1 and batch_bytes + size > remaining / (2 * workers))):
            batches.append(batch)
            remaining -= batch_bytes
            batch, batch_bytes = [], 0
        batch.append(path)
        batch_bytes += size
    if batch:
        batches.append(batch)
    return batches


def map_corpus(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    steps: Sequence[StepLike] = ("vad",),
    *,
    output: str | os.PathLike[str],
    engine: Engine = "local",
    workers: int | None = None,
    cpus_per_worker: int = 1,
    gpus_per_worker: float = 0.0,
    batch_size: int = 16,
    on_error: OnError = "record",
    resume: bool = True,
    retry_failed: bool = True,
    address: str | None = None,
    ray_log_level: int = logging.WARNING,
    device: DeviceLike = "cpu",
    progress: ProgressCallback | None = None,
    on_start: StartCallback | None = None,
) -> BatchSummary:
    """Run ``steps`` over every input file; write Parquet parts and ``_summary.json`` into ``output``.

    Args:
        inputs: a list of paths, a directory, a text file of paths or a JSONL manifest (see
            :func:`voicehub.batch.expand_inputs`).
        steps: in order; each a step name (``"vad"``, ``"embed"``, ``"transcribe"``: the task's
            default model on ``device``), a :class:`Step`, or a wrapper (any model of a task a
            step runs; it is pickled to the workers as a recipe, so its options and active
            optimization plan go with it).
        output: the output directory (see :mod:`voicehub.batch._output` for its layout).
        engine: ``"local"`` (a process pool) or ``"ray"`` (Ray Data actors; ``voicehub[ray]``).
        workers: worker processes or actors; default: CPUs (``os.cpu_count()``) divided by
            ``cpus_per_worker``, at least 1, at most one per batch (the local engine's batches
            shrink, so even a few files spread over the workers).
        cpus_per_worker: CPUs per worker; its torch threads are pinned to this many.
        gpus_per_worker: GPUs reserved per Ray actor (fractions share a GPU); ``ray`` only.
        batch_size: at most this many paths per batch, which is also the unit of a written part
            (and of the work lost when a job is killed); the local engine's last batches are
            smaller (:func:`plan_batches`).
        on_error: ``"record"``: a failing file (missing, empty, corrupt...) becomes a row with
            ``error`` set and the job goes on; ``"raise"``: the job stops with
            :class:`~voicehub.errors.BatchItemError` (parts already written stay, for ``resume``).
        resume: skip the inputs the parts in ``output`` already hold; with ``False`` an
            ``output`` that holds parts is refused. An input is the same when its resolved path
            (absolute, links resolved) and its fingerprint (size, modification time, a hash of
            its first and last 64 KiB) are: a file changed since is run again, another file under
            the same name is run, and two paths naming one file run it once. The parts record
            what made them (model type, checkpoint source, config, options, plan per step);
            resuming with other ones is refused.
        retry_failed: with ``resume``, run again the inputs whose row in ``output`` holds an
            error (a file fixed since, a transient failure); the new row supersedes the error
            row (:func:`~voicehub.batch.read_output` gives the last row of each input). ``False``
            skips them like the inputs that succeeded.
        address: the Ray cluster to join (``"auto"`` for ``ray start``'s, ``"HOST:6379"``,
            ``"ray://HOST:10001"``); ``ray`` only. A ``HOST:PORT`` that takes no connection within
            5 s is refused before any work.
        ray_log_level: the :mod:`logging` level of Ray's own log while the job runs (its Python
            loggers; below ``DEBUG`` the driver's C++ log shows fatal errors only); ``ray`` only.
        device: where the step-name steps' default models run.
        progress: called after each written part with its file count and audio seconds.
        on_start: called once before any batch runs with the corpus's file count, the files
            skipped because an earlier run wrote them, and their audio seconds.

    Returns:
        The summary, also written as ``output/_summary.json``.

    Raises:
        BatchInputError: for bad inputs, steps or settings (before anything runs).
        OutputPathError: when ``output`` cannot be written, or holds parts and ``resume`` is false.
        BatchResumeMismatchError: when the parts in ``output`` were written by other models,
            checkpoints or options than ``steps`` (before anything runs).
        BatchItemError: with ``on_error="raise"``, for the first failing file.
        OptionalDependencyError: for ``engine="ray"`` without Ray installed.
        BatchEngineUnreachableError: for an ``address`` whose cluster cannot be reached.
        UnpicklableModelError: for a wrapper that cannot travel to a worker as a recipe (loaded
            for training, a tainted plan; see :mod:`voicehub._recipe`), before anything runs.
    """
    started = time.perf_counter()
    if engine not in ("local", "ray"):
        raise BatchInputError(f"map_corpus engine: expected 'local' or 'ray', got {engine!r}")
    if on_error not in ("record", "raise"):
        raise BatchInputError(f"map_corpus on_error: expected 'record' or 'raise', got {on_error!r}")
    _positive(cpus_per_worker, "cpus_per_worker")
    _positive(batch_size, "batch_size")
    _positive(gpus_per_worker, "gpus_per_worker", real=True)
    if workers is not None:
        _positive(workers, "workers")
    if gpus_per_worker and engine != "ray":
        raise BatchInputError("map_corpus gpus_per_worker: only the 'ray' engine reserves GPUs; pass engine='ray'")
    if isinstance(steps, (str, Step)) or not steps:
        raise BatchInputError(f"map_corpus steps: expected a non-empty list of steps, got {steps!r}")
    resolved = [_step(item, device) for item in steps]
    names = [step.name for step in resolved]
    if len(set(names)) != len(names):
        raise BatchInputError(f"map_corpus steps: each step may appear once, got {names}")
    for step in resolved:  # what a worker rebuilds it from: refused here, whichever way it reaches the workers
        pickle.dumps(step.model)
    models = describe_steps(resolved)
    if engine == "ray" and address is not None:  # before any work: Ray would retry an unreachable cluster for ever
        from voicehub.batch._ray import check_reachable

        check_reachable(address)
    keys = {path: input_key(path) for path in expand_inputs(inputs)}
    first: dict[str, str] = {}  # one path per file: the first of the paths that name it (relative, absolute, a link)
    for path, key in keys.items():
        first.setdefault(key.resolved_path, path)
    paths = list(first.values())
    writer = PartWriter(output, output_schema(names), steps=models, resume=resume)
    todo = [path for path in paths if not writer.written(keys[path]) or (retry_failed and writer.failed(keys[path]))]
    retried = [path for path in todo if writer.failed(keys[path])]  # an error row, fixed since or not
    changed = [path for path in todo if writer.changed(keys[path]) and not writer.failed(keys[path])]
    if on_start is not None:
        pending = set(todo)
        skipped = [keys[path] for path in paths if path not in pending]
        on_start(len(paths), len(skipped), writer.done_seconds(skipped))
    if workers is None:
        workers = max(1, (os.cpu_count() or 1) // cpus_per_worker)
    if engine == "local":  # the batches shrink toward the end: a few long files still spread over the workers
        workers = max(1, min(workers, len(todo)))
        batches = plan_batches(todo, batch_size, workers)
        workers = max(1, min(workers, len(batches)))
    else:  # Ray cuts blocks of batch_size
        workers = max(1, min(workers, -(-len(todo) // batch_size)))
    processed_files = 0
    processed_s = 0.0
    startup_s: float | None = None
    tables: Iterator[pa.Table]
    if not todo:
        tables = iter(())
    elif engine == "local":
        from voicehub.batch._local import run_local

        tables = run_local(
            batches,
            resolved,
            workers=workers,
            cpus_per_worker=cpus_per_worker,
            on_error=on_error,
        )
    else:
        from voicehub.batch._ray import run_ray

        tables = run_ray(
            longest_first(todo),
            resolved,
            workers=workers,
            cpus_per_worker=cpus_per_worker,
            gpus_per_worker=gpus_per_worker,
            batch_size=batch_size,
            on_error=on_error,
            address=address,
            log_level=ray_log_level,
        )
    for table in tables:
        if startup_s is None:
            startup_s = time.perf_counter() - started
        writer.write(table, keys)
        seconds = sum(value for value in table.column("duration_s").to_pylist() if value is not None)
        processed_files += table.num_rows
        processed_s += seconds
        if progress is not None:
            progress(table.num_rows, seconds)
    writer.drop_superseded()
    wall_s = time.perf_counter() - started
    files, failures, audio_hours = writer.totals()
    summary = BatchSummary(
        output=writer.output,
        files=files,
        failures=failures,
        audio_hours=audio_hours,
        processed_files=processed_files,
        processed_audio_hours=processed_s / 3600.0,
        skipped_files=len(paths) - len(todo),
        retried_files=len(retried),
        changed_files=len(changed),
        wall_s=wall_s,
        startup_s=startup_s,
        files_per_s=processed_files / wall_s if wall_s > 0 else 0.0,
        audio_hours_per_s=processed_s / 3600.0 / wall_s if wall_s > 0 else 0.0,
        engine=engine,
        workers=workers,
        steps=tuple(names),
        models=tuple(models),
    )
    writer.write_summary(summary)
    return summary


__all__ = ["Engine", "ProgressCallback", "StartCallback", "StepLike", "longest_first", "map_corpus", "plan_batches"]
