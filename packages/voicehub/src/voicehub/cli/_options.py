"""Options every long-running ``voicehub`` command shares: device, threads, verbosity, progress.

Use :func:`common_options` under ``@click.command`` and take one ``common: CommonOptions``
argument instead of the five flags::

    @click.command("transcribe")
    @click.argument("inputs", nargs=-1, required=True)
    @common_options
    def transcribe_command(inputs: tuple[str, ...], common: CommonOptions) -> None:
        model = AutoModel.from_pretrained(..., device=common.device)
        for path in progress(files, common, desc="transcribe"):
            ...

:func:`common_options` has already configured logging (:func:`configure_logging`) and the torch
thread count when the command body runs. The library logs through :mod:`logging` (loggers
named ``voicehub.*``) and never prints; the command line is the only place that configures it.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass
from typing import Any, TextIO, TypeVar

import click

T = TypeVar("T")

LOGGER_NAME = "voicehub"
"""The root of every VoiceHub logger; :func:`configure_logging` gives it one handler on stderr."""

_LEVEL_PREFIX = {logging.DEBUG: "Debug: ", logging.INFO: "", logging.WARNING: "Warning: "}


MAX_THREADS = 1024
"""The most ``--threads`` accepted: torch's OpenMP runtime crashed (segmentation fault) at 100000."""


class _CLIFormatter(logging.Formatter):
    """``Warning: message`` / ``Error: message`` / plain info lines, as the commands always printed them."""

    def format(self, record: logging.LogRecord) -> str:
        prefix = _LEVEL_PREFIX.get(record.levelno, "Error: " if record.levelno >= logging.ERROR else "")
        return prefix + record.getMessage()


def verbosity_level(verbosity: int) -> int:
    """The :mod:`logging` level for ``-v``/``-q`` counts: 0 WARNING, 1 INFO, >= 2 DEBUG, -1 ERROR, <= -2 CRITICAL."""
    if verbosity >= 2:
        return logging.DEBUG
    return {1: logging.INFO, 0: logging.WARNING, -1: logging.ERROR}.get(verbosity, logging.CRITICAL)


def configure_logging(verbosity: int = 0, *, stream: TextIO | None = None) -> logging.Logger:
    """Send the ``voicehub`` loggers to ``stream`` (default: the current stderr) at the ``-v``/``-q`` level.

    Idempotent: a second call replaces the handler this function installed (the CLI runs several
    commands in one process in tests). Third-party loggers are left alone.

    Args:
        verbosity: number of ``-v`` minus number of ``-q``.
        stream: where log lines go; ``None`` resolves ``sys.stderr`` at each write (click's test
            runner swaps it).

    Returns:
        The ``voicehub`` logger.
    """
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        if getattr(handler, "_voicehub_cli", False):
            logger.removeHandler(handler)
    handler = _StderrHandler(stream)
    handler.setFormatter(_CLIFormatter())
    handler._voicehub_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(verbosity_level(verbosity))
    logger.propagate = False
    return logger


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that looks ``sys.stderr`` up at each record unless given a fixed stream."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__(stream or sys.stderr)
        self._fixed = stream

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = self._fixed or sys.stderr
        super().emit(record)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonOptions:
    """The shared flags of a long-running command, as parsed.

    Attributes:
        device: ``--device`` (``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``), for ``from_pretrained(device=...)``.
        threads: ``--threads``, the torch intra-op thread count; ``None`` keeps torch's default.
        verbosity: number of ``-v`` minus number of ``-q``.
        progress: ``--progress`` (True), ``--no-progress`` (False), or neither (None: only on a terminal).
    """

    device: str = "auto"
    threads: int | None = None
    verbosity: int = 0
    progress: bool | None = None

    def show_progress(self, stream: TextIO | None = None) -> bool:
        """Whether to draw a progress bar on ``stream`` (default stderr): as asked, else only on a terminal."""
        if self.progress is not None:
            return self.progress
        target = stream or sys.stderr
        return self.verbosity >= 0 and bool(getattr(target, "isatty", lambda: False)())

    def apply(self) -> None:
        """Configure logging and the torch thread count.

        Raises:
            click.BadParameter: for a ``--threads`` below 1 or above :data:`MAX_THREADS`.
        """
        configure_logging(self.verbosity)
        if self.threads is not None:
            if not 1 <= self.threads <= MAX_THREADS:
                raise click.BadParameter(
                    f"expected 1 to {MAX_THREADS} threads, got {self.threads} (this machine has {os.cpu_count()} CPUs)",
                    param_hint="'--threads'",
                )
            import torch

            torch.set_num_threads(self.threads)
            logging.getLogger(LOGGER_NAME + ".cli").debug("torch intra-op threads: %d", self.threads)


def progress(items: Iterable[T], common: CommonOptions, *, desc: str, unit: str = "file") -> Iterator[T]:
    """``items`` with a tqdm bar on stderr when :meth:`CommonOptions.show_progress` says so."""
    from tqdm import tqdm

    enabled = common.show_progress()
    total = len(items) if isinstance(items, Sized) else None
    yield from tqdm(items, desc=desc, unit=unit, total=total, disable=not enabled, file=sys.stderr)


_OPTIONS: tuple[Callable[[Callable[..., Any]], Callable[..., Any]], ...] = (
    click.option(
        "--device",
        default="auto",
        show_default=True,
        metavar="DEVICE",
        help="Where the model runs: auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N or mps.",
    ),
    click.option(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="CPU threads for torch's intra-op parallelism (default: torch's own choice).",
    ),
    click.option("-v", "--verbose", count=True, help="More log output on stderr (-v info, -vv debug)."),
    click.option("-q", "--quiet", count=True, help="Less log output on stderr (-q errors only, -qq nothing)."),
    click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress bar on stderr (default: only when stderr is a terminal).",
    ),
)


def common_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--device``, ``--threads``, ``-v/--verbose``, ``-q/--quiet`` and ``--progress/--no-progress``.

    The decorated function receives ``common=CommonOptions(...)`` instead of the five values, and
    logging and threads are configured (:meth:`CommonOptions.apply`) before it runs. Put it
    directly under ``@click.command`` and the command's own options.
    """

    @functools.wraps(command)
    def wrapper(
        *args: Any, device: str, threads: int | None, verbose: int, quiet: int, progress: bool | None, **kwargs: Any
    ) -> Any:
        common = CommonOptions(device=device, threads=threads, verbosity=verbose - quiet, progress=progress)
        common.apply()
        return command(*args, common=common, **kwargs)

    decorated: Callable[..., Any] = wrapper
    for option in reversed(_OPTIONS):
        decorated = option(decorated)
    return decorated


__all__ = ["LOGGER_NAME", "CommonOptions", "common_options", "configure_logging", "progress", "verbosity_level"]
