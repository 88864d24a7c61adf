"""The process group the Trainer runs in: one process, or DistributedDataParallel ranks under ``torchrun``.

``torchrun --nproc-per-node N train.py`` (or ``python -m torch.distributed.run``) sets
``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` in each process;
:func:`DistributedContext.from_environment` reads them and joins the group (gloo on the CPU,
NCCL when the model lives on a CUDA device). Several machines: the same command on each with
``--nnodes M --node-rank R --rdzv-endpoint HOST:PORT`` (see docs/training.md).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist

from voicehub.training.errors import DistributedTimeoutError, TrainingError

_PEER_LOST = re.compile(r"timed out|timeout|connection (closed|reset)|broken pipe|peer", re.IGNORECASE)
"""torch's messages for a collective that a stalled or lost rank never completed (gloo and NCCL)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DistributedContext:
    """Rank facts of this process.

    Attributes:
        rank: global rank (0 in a single process).
        world_size: number of ranks (1 in a single process).
        owns_group: whether this context created the process group (and so destroys it).
    """

    rank: int = 0
    world_size: int = 1
    owns_group: bool = False

    @property
    def enabled(self) -> bool:
        """Whether more than one rank takes part."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Whether this is rank 0 (the only rank that writes files)."""
        return self.rank == 0

    @classmethod
    def from_environment(cls, *, device: torch.device, timeout_s: float = 300.0) -> DistributedContext:
        """Use the process group already initialised, else join the one torchrun's environment describes, if any.

        Args:
            device: where the model lives; CUDA selects the NCCL backend, anything else gloo.
            timeout_s: seconds a collective operation waits for the other ranks (the group's
                ``timeout``); a group a launcher made keeps its own.

        Raises:
            TrainingError: when ``WORLD_SIZE`` > 1 but the rendezvous variables are incomplete.
        """
        if dist.is_available() and dist.is_initialized():  # a launcher (Ray Train...) made the group: use it
            return cls(rank=dist.get_rank(), world_size=dist.get_world_size(), owns_group=False)
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if world_size <= 1:
            return cls()
        missing = [name for name in ("RANK", "MASTER_ADDR", "MASTER_PORT") if name not in os.environ]
        if missing:
            raise TrainingError(
                f"WORLD_SIZE={world_size} but {missing} are not set; start the ranks with torchrun "
                f"(python -m torch.distributed.run --nproc-per-node {world_size} ...)"
            )
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=timeout_s))
        return cls(rank=dist.get_rank(), world_size=dist.get_world_size(), owns_group=True)

    @contextlib.contextmanager
    def stall_guard(self, timeout_s: float, *, where: Callable[[], str]) -> Iterator[None]:
        """Turn torch's error for a collective that timed out (or lost its peer) into :class:`DistributedTimeoutError`.

        Args:
            timeout_s: the group's timeout, for the message.
            where: called when it happens, says what the run was doing (``"step 3"``).
        """
        try:
            yield
        except RuntimeError as err:
            if not self.enabled or isinstance(err, TrainingError) or not _PEER_LOST.search(str(err)):
                raise
            reason = str(err).strip().splitlines()[0][:300]
            raise DistributedTimeoutError(rank=self.rank, timeout_s=timeout_s, where=where(), reason=reason) from err

    def barrier(self) -> None:
        """Wait for every rank (no-op in a single process)."""
        if self.enabled:
            dist.barrier()

    def mean(self, value: float) -> float:
        """The mean of ``value`` over the ranks."""
        if not self.enabled:
            return value
        tensor = torch.tensor([value], dtype=torch.float64)
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return float(tensor.item()) / self.world_size

    def sum(self, values: list[float]) -> list[float]:
        """Element-wise sums of ``values`` over the ranks."""
        if not self.enabled:
            return values
        tensor = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return [float(v) for v in tensor.tolist()]

    def gather(self, value: object) -> list[object]:
        """Every rank's ``value``, in rank order (picklable objects)."""
        if not self.enabled:
            return [value]
        gathered: list[object] = [None] * self.world_size
        dist.all_gather_object(gathered, value)
        return gathered

    def broadcast(self, value: object) -> object:
        """Rank 0's ``value`` on every rank."""
        if not self.enabled:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def close(self) -> None:
        """Leave the process group if this context created it."""
        if self.owns_group and dist.is_initialized():
            dist.destroy_process_group()


__all__ = ["DistributedContext"]
