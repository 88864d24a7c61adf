"""The ``ray`` engine: Ray Data ``map_batches`` over an actor pool, on one machine or a cluster.

The only VoiceHub module that imports ``ray`` (an import contract enforces it; install with
``pip install "voicehub[ray]"``). The job's paths become a Ray dataset; ``map_batches`` runs a
pool of ``workers`` actors (:class:`_RayWorker`), each holding one
:class:`~voicehub.batch._worker.BatchWorker` (models load once per actor, from the pickled
recipes), with ``cpus_per_worker`` CPUs (torch threads pinned to them) and ``gpus_per_worker``
GPUs (fractions allowed) reserved per actor. Ray streams the batches with back-pressure and
restarts lost actors; the driver receives each output block and writes it as one part, so
resuming and exactly-once writing work as with the local engine.

Ray's own log follows the job's ``log_level`` (the command line's ``-v``/``-q``): the ``ray`` and
``ray.data`` Python loggers are set to it while the job runs (and restored after), and below
``-vv`` the driver's C++ core-worker log is limited to fatal errors (``RAY_BACKEND_LOG_LEVEL``,
read once when this process joins Ray; a value you set is kept): Ray 2.60 logs an error-level
line for every Ray Data actor on a successful run (ray-project/ray#53727), and real failures
reach the driver as exceptions anyway. Ray's C++ side then prints a notice that it read that
variable: the driver's standard error (file descriptor 2) is held in a temporary file while
``ray.init`` runs and written back without that one line. Ray Data's warning that progress bars
are off (this module turns them off on purpose) is not shown.

An ``address`` of the form ``HOST:PORT`` or ``ray://HOST:PORT`` is probed with a TCP connection
first: Ray retries an unreachable cluster for ever, this engine gives up after
:data:`RAY_CONNECT_TIMEOUT_S` with :class:`~voicehub.errors.BatchEngineUnreachableError`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from voicehub.batch._worker import BatchWorker, OnError, Step, pin_torch_threads
from voicehub.core.errors import OptionalDependencyError
from voicehub.errors import BatchEngineUnreachableError

if TYPE_CHECKING:
    import pyarrow as pa

RAY_INSTALL_HINT = 'pip install "voicehub[ray]"'

RAY_CONNECT_TIMEOUT_S = 5.0
"""How long the probe of a ``HOST:PORT`` cluster address waits for a TCP connection, in seconds."""

_RAY_LOGGERS = ("ray", "ray.data")
_BACKEND_LEVEL_NOTICE = b"Set ray log level from environment variable RAY_BACKEND_LOG_LEVEL"


def check_reachable(address: str, *, timeout_s: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Refuse a ``HOST:PORT`` (or ``ray://HOST:PORT``) ``address`` that takes no TCP connection.

    Other forms (``"auto"``, ``"local"``) are left to ``ray.init``, which fails at once when it
    finds no cluster.

    Raises:
        BatchEngineUnreachableError: naming the address and the connection error.
    """
    host, separator, port = address.removeprefix("ray://").rpartition(":")
    if not separator or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as err:
        reason = f"no answer within {timeout_s:g} s" if isinstance(err, TimeoutError) else err.strerror or str(err)
        raise BatchEngineUnreachableError(address, f"TCP connection: {reason}") from err


@contextlib.contextmanager
def _without_backend_level_notice() -> Iterator[None]:
    """Hold back file descriptor 2 inside the block; write it back without Ray's C++ log-level notice."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(ValueError, OSError):  # a replaced sys.stderr may be closed
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = b"".join(line for line in held if _BACKEND_LEVEL_NOTICE not in line)
            if kept:
                os.write(2, kept)


@contextlib.contextmanager
def _ray_logging(level: int) -> Iterator[None]:
    """Ray's own log at ``level`` (a :mod:`logging` level) inside the block; the old settings after."""
    loggers = {name: logging.getLogger(name) for name in _RAY_LOGGERS}
    levels = {name: logger.level for name, logger in loggers.items()}
    variables = {name: os.environ.get(name) for name in ("RAY_DATA_LOG_LEVEL", "RAY_BACKEND_LOG_LEVEL")}
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", logging.getLevelName(level))  # ray.data re-reads it
    if level > logging.DEBUG:
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    for logger in loggers.values():
        logger.setLevel(level)
    try:
        yield
    finally:
        for name, logger in loggers.items():
            logger.setLevel(levels[name])
        for name, value in variables.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


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
    log_level: int = logging.WARNING,
) -> Iterator[pa.Table]:
    """Run ``paths`` through ``steps`` on Ray; yield output blocks as they arrive.

    Args:
        address: a running cluster (``"auto"``, ``"HOST:6379"``, ``"ray://host:10001"``); ``None``
            uses the Ray already initialised in this process, else starts a local one (``ray.init()``).
        log_level: the :mod:`logging` level of Ray's own log while the job runs (module docstring).

    Raises:
        ImportError: naming ``pip install "voicehub[ray]"`` when Ray is not installed.
        BatchEngineUnreachableError: when ``address`` names a cluster that cannot be reached.
        BatchItemError: with ``on_error="raise"``, from the first failing file (Ray wraps it in
            its task error; the message names the file).
    """
    try:
        import ray
        import ray.data
        from ray.util.debug import log_once
    except ModuleNotFoundError as err:
        if err.name is None or err.name.split(".")[0] != "ray":
            raise
        raise OptionalDependencyError("ray", purpose="the ray batch engine", install_hint=RAY_INSTALL_HINT) from err

    with _ray_logging(log_level):
        if not ray.is_initialized():
            if address is not None:
                check_reachable(address)
            quiet = os.environ.get("RAY_BACKEND_LOG_LEVEL") == "fatal"  # set by _ray_logging (or by you)
            try:
                with _without_backend_level_notice() if quiet else contextlib.nullcontext():
                    ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=log_level)
            except ConnectionError as err:  # "auto" with no cluster running here, a refused handshake
                raise BatchEngineUnreachableError(str(address), str(err).splitlines()[0]) from err
        data: Any = ray.data
        context = data.DataContext.get_current()
        context.enable_progress_bars = False
        log_once("ray_data_progress_manager_disabled")  # marks Ray Data's warning about it as already shown
        blocks = max(1, len(paths) // batch_size)
        dataset = data.from_items([{"path": path} for path in paths], override_num_blocks=blocks)
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


__all__ = ["RAY_CONNECT_TIMEOUT_S", "RAY_INSTALL_HINT", "check_reachable", "run_ray"]
