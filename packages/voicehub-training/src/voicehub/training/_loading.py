"""What the Trainer's ``DataLoader`` runs: the records by index, this rank's batches of indices, and
``collate`` with its errors carried back from a data worker to the training thread."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterator, Sequence

import torch

from voicehub.training.adapters.base import TrainingAdapter, TrainingBatch
from voicehub.training.batching import LengthBucketBatchSampler
from voicehub.training.distributed import DistributedContext
from voicehub.training.errors import TrainingError
from voicehub.training.manifest import ManifestRecord


class _Records(torch.utils.data.Dataset[ManifestRecord]):
    """The training records by index (what a ``DataLoader`` worker hands to ``collate``)."""

    def __init__(self, records: Sequence[ManifestRecord]) -> None:
        self.records = records

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> ManifestRecord:
        return self.records[index]


class _RankBatches:
    """This rank's index lists from ``(epoch, batch_index)`` on, epoch after epoch, as the loop consumes them."""

    def __init__(
        self, sampler: LengthBucketBatchSampler, epoch: int, batch_index: int, dist: DistributedContext
    ) -> None:
        self.sampler = sampler
        self.epoch = epoch
        self.batch_index = batch_index
        self.rank = dist.rank
        self.world_size = dist.world_size

    def __iter__(self) -> Iterator[list[int]]:
        epoch, first = self.epoch, self.batch_index
        while True:
            for global_batch in self.sampler.global_batches(epoch)[first:]:
                yield global_batch[self.rank :: self.world_size]
            epoch, first = epoch + 1, 0


@dataclasses.dataclass(frozen=True, slots=True)
class _CollateFailure:
    """An error ``collate`` raised in a data worker, carried back to be raised on the training thread."""

    error: BaseException


def _collate(adapter: TrainingAdapter, records: list[ManifestRecord]) -> TrainingBatch | _CollateFailure:
    try:
        return adapter.collate(records)
    except Exception as err:  # raised again by the training loop, as itself when it pickles
        try:
            pickle.dumps(err)
        except Exception:
            return _CollateFailure(TrainingError(f"{type(err).__name__}: {err}"))
        return _CollateFailure(err)


__all__ = ["_CollateFailure", "_RankBatches", "_Records", "_collate"]
