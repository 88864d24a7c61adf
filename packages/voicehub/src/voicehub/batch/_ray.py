"""The ``ray`` engine: Ray Data ``map_batches`` over an actor pool, on one machine or a cluster.

The only VoiceHub module that imports ``ray`` (an import contract enforces it; install with
``pip install "voicehub[ray]"``). The job's paths become a Ray dataset; ``map_batches`` runs a
pool of ``workers`` actors (:class:`_RayWorker`), each holding one
:class:`~voicehub.batch._worker.BatchWorker` (models load once per actor, from the pickled
recipes), with ``cpus_per_worker`` CPUs (torch threads pinned to them) and ``gpus_per_worker``
GPUs (fractions allowed) reserved per actor. Ray streams the batches with back-pressure and
restarts lost actors; the driver receives each output block and writes it as one part, so
resuming and exactly-once writing work as with the local engine.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from voicehub.batch._worker import BatchWorker, OnError, Step, pin_torch_threads
from voicehub.core.errors import OptionalDependencyError

if TYPE_CHECKING:
    import pyarrow as pa

RAY_INSTALL_HINT = 'pip install "voicehub[ray]"'


class _RayWorker:
    """A Ray Data actor: one :class:`BatchWorker`, called on ``{"path": ...}`` tables."""

    def __init__(self, steps: Sequence[Step], on_error: OnError, num_threads: int) -> None:
        pin_torch_threads(num_threads)
        self._worker = BatchWorker(steps, on_error=on_error)

    def __call__(self, batch: pa.Table) -> pa.Table:
        return self._worker([str(path) for path in batch.column("path").to_pylist()])


def run_ray(
    paths: Sequence[str],
    steps: Sequence[Step],
    *,
    workers: int,
    cpus_per_worker: int,
    gpus_per_worker: float,
    batch_size: int,
    on_error: OnError,
    address: str | None,
) -> Iterator[pa.Table]:
    """Run ``paths`` through ``steps`` on Ray; yield output blocks as they arrive.

    Args:
        address: a running cluster (``"auto"``, ``"ray://host:10001"``); ``None`` uses the Ray
            already initialised in this process, else starts a local one (``ray.init()``).

    Raises:
        ImportError: naming ``pip install "voicehub[ray]"`` when Ray is not installed.
        BatchItemError: with ``on_error="raise"``, from the first failing file (Ray wraps it in
            its task error; the message names the file).
    """
    try:
        import ray
        import ray.data
    except ModuleNotFoundError as err:
        if err.name is None or err.name.split(".")[0] != "ray":
            raise
        raise OptionalDependencyError("ray", purpose="the ray batch engine", install_hint=RAY_INSTALL_HINT) from err
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    data: Any = ray.data
    context = data.DataContext.get_current()
    context.enable_progress_bars = False
    dataset = data.from_items([{"path": path} for path in paths], override_num_blocks=max(1, len(paths) // batch_size))
    mapped = dataset.map_batches(
        _RayWorker,
        fn_constructor_args=(tuple(steps), on_error, cpus_per_worker),
        batch_size=batch_size,
        batch_format="pyarrow",
        compute=data.ActorPoolStrategy(size=workers),
        num_cpus=cpus_per_worker,
        num_gpus=gpus_per_worker or None,
    )
    yield from mapped.iter_batches(batch_size=None, batch_format="pyarrow")


__all__ = ["RAY_INSTALL_HINT", "run_ray"]
