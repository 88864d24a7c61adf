"""Length-bucketed batching with padding and masks.

:class:`LengthBucketBatchSampler` deals record indices into batches of similar duration (so
little of each batch is padding) in an order fixed by ``(seed, epoch)`` alone, so a resumed run
sees exactly the batches an uninterrupted one would. Under data parallelism each global batch
(``batch_size * num_replicas`` items) is cut into one slice per rank (the distributed-sampler
contract: disjoint, same number of batches on every rank, reshuffled by :meth:`set_epoch`).
Every record is in exactly one batch per epoch (unless ``drop_last``): a last global batch too
small to give every rank a record joins the one before it, so slices may differ in size by one
and the Trainer weights each rank's loss by its record count.

:func:`collate_audio` loads and pads a batch of records into an :class:`AudioBatch`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from voicehub.core.audio import load_audio
from voicehub.core.audio_stream import audio_file_info, iter_audio_blocks
from voicehub.core.errors import SampleRateError
from voicehub.training.errors import TrainingError
from voicehub.training.manifest import ManifestRecord


class LengthBucketBatchSampler:
    """Batches of record indices with similar durations, reproducible per epoch.

    Per epoch: shuffle all indices (a generator seeded with ``seed + epoch``), cut them into
    pools of ``bucket_batches`` global batches, sort each pool by duration, cut the pools into
    global batches and shuffle the batch order.

    Args:
        durations_s: duration of every record in seconds.
        batch_size: items per batch on one rank.
        seed: base seed of the order.
        shuffle: ``False`` keeps manifest order within sorted pools (evaluation).
        bucket_batches: global batches per sorting pool (1: no bucketing).
        drop_last: drop a final global batch with fewer than ``batch_size * num_replicas`` items.
        num_replicas: data-parallel ranks (1 in a single process).
        rank: this process's rank in ``[0, num_replicas)``.

    Raises:
        TrainingError: for non-positive sizes or a rank outside the replicas.
    """

    def __init__(
        self,
        durations_s: Sequence[float],
        *,
        batch_size: int,
        seed: int = 0,
        shuffle: bool = True,
        bucket_batches: int = 8,
        drop_last: bool = False,
        num_replicas: int = 1,
        rank: int = 0,
    ) -> None:
        if batch_size < 1 or bucket_batches < 1 or num_replicas < 1 or not 0 <= rank < num_replicas:
            raise TrainingError(
                f"sampler: expected batch_size >= 1, bucket_batches >= 1, 0 <= rank < num_replicas, got "
                f"{batch_size}, {bucket_batches}, rank {rank} of {num_replicas}"
            )
        if not durations_s:
            raise TrainingError("sampler: no records to batch")
        self.durations_s = tuple(float(d) for d in durations_s)
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.bucket_batches = bucket_batches
        self.drop_last = drop_last
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Select the order of ``epoch`` (call before iterating each epoch)."""
        self.epoch = epoch

    def global_batches(self, epoch: int) -> list[list[int]]:
        """The epoch's global batches (all ranks' items of one step together)."""
        count = len(self.durations_s)
        generator = torch.Generator().manual_seed(self.seed + epoch)
        order = torch.randperm(count, generator=generator).tolist() if self.shuffle else list(range(count))
        size = self.batch_size * self.num_replicas
        pool = size * self.bucket_batches
        batches: list[list[int]] = []
        for first in range(0, count, pool):
            sorted_pool = sorted(order[first : first + pool], key=lambda i: (self.durations_s[i], i))
            batches.extend(sorted_pool[i : i + size] for i in range(0, len(sorted_pool), size))
        if self.drop_last:
            batches = [batch for batch in batches if len(batch) == size]
        if len(batches) > 1 and len(batches[-1]) < self.num_replicas:
            # every rank needs an item of every step: the few records left join the batch before
            # (its ranks then take one more record each; the Trainer weights losses by count)
            batches[-2:] = [batches[-2] + batches[-1]]
        if self.shuffle:
            batch_order = torch.randperm(len(batches), generator=generator).tolist()
            batches = [batches[i] for i in batch_order]
        if not batches or len(batches[0]) < self.num_replicas:
            raise TrainingError(
                f"sampler: {count} records make no complete batch of {size} (batch_size {self.batch_size} x "
                f"{self.num_replicas} ranks); lower batch_size or add records"
            )
        return batches

    def batches(self, epoch: int | None = None) -> list[list[int]]:
        """This rank's batches of ``epoch`` (default: the epoch set by :meth:`set_epoch`)."""
        chosen = self.epoch if epoch is None else epoch
        return [batch[self.rank :: self.num_replicas] for batch in self.global_batches(chosen)]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches())

    def __len__(self) -> int:
        return len(self.global_batches(self.epoch))


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioBatch:
    """Padded audio of a batch of records.

    Attributes:
        waveform: float32 (batch, num_samples), mono, at ``sample_rate`` Hz, zero-padded on the right.
        lengths: int64 (batch,) valid samples per row.
        mask: bool (batch, num_samples), true on valid samples.
        sample_rate: Hz.
        records: the records, in row order.
    """

    waveform: torch.Tensor
    lengths: torch.Tensor
    mask: torch.Tensor
    sample_rate: int
    records: tuple[ManifestRecord, ...]

    def to(self, device: torch.device | str) -> AudioBatch:
        """A copy with the tensors on ``device``."""
        return AudioBatch(
            waveform=self.waveform.to(device),
            lengths=self.lengths.to(device),
            mask=self.mask.to(device),
            sample_rate=self.sample_rate,
            records=self.records,
        )


def pad_waveforms(waveforms: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-pad 1-D float waveforms into one batch.

    Args:
        waveforms: float32 (num_samples,) arrays, at least one.

    Returns:
        ``(waveform (batch, longest), lengths (batch,) int64, mask (batch, longest) bool)``.
    """
    lengths = torch.tensor([len(w) for w in waveforms], dtype=torch.int64)
    longest = int(lengths.max())
    batch = torch.zeros(len(waveforms), longest, dtype=torch.float32)
    for row, samples in enumerate(waveforms):
        batch[row, : len(samples)] = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))
    mask = torch.arange(longest)[None, :] < lengths[:, None]
    return batch, lengths, mask


PART_BLOCK_SAMPLES = 1 << 16
"""Frames decoded at once when a record is a part of a longer file."""


def _file_part(record: ManifestRecord, offset_s: float, sample_rate: int) -> npt.NDArray[np.float32]:
    """Samples ``[offset_s, offset_s + duration_s]`` of the record's file, decoding no further than their end.

    Memory is bounded by the part and one block, not by the file (a lhotse cut of a long recording).
    """
    start = round(offset_s * sample_rate)
    stop = start + round(record.duration_s * sample_rate)
    parts, decoded = [], 0
    for block in iter_audio_blocks(record.audio_path, block_samples=PART_BLOCK_SAMPLES):
        first, end = decoded, decoded + len(block)
        decoded = end
        if end > start:
            parts.append(block[max(start - first, 0) : stop - first])
        if end >= stop:
            break
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def collate_audio(records: Sequence[ManifestRecord], *, sample_rate: int) -> AudioBatch:
    """Load and pad the audio of ``records`` (each must be at ``sample_rate``; nothing is resampled).

    A record with ``offset_s`` contributes ``[offset_s, offset_s + duration_s]`` of its file
    (decoded block by block up to the part's end), one without it the whole file.

    Raises:
        SampleRateError: for a file at another rate (the manifest check prevents it).
        AudioDecodeError: for an unreadable file.
    """
    waveforms: list[npt.NDArray[np.float32]] = []
    for record in records:
        samples: npt.NDArray[np.float32] | None = None
        if record.offset_s is None:
            loaded = load_audio(record.audio_path)
            rate, samples = loaded.sample_rate, loaded.samples
        else:  # a part of a longer file (its bounds were checked with the manifest)
            rate = audio_file_info(record.audio_path).sample_rate
        if rate != sample_rate:
            raise SampleRateError(
                f"{record.audio_path}: {rate} Hz, the model trains at {sample_rate} Hz",
                expected=(sample_rate,),
                actual=rate,
                source=str(record.audio_path),
            )
        if samples is None:
            samples = _file_part(record, float(record.offset_s or 0.0), sample_rate)
        waveforms.append(samples)
    waveform, lengths, mask = pad_waveforms(waveforms)
    return AudioBatch(waveform=waveform, lengths=lengths, mask=mask, sample_rate=sample_rate, records=tuple(records))


__all__ = ["AudioBatch", "LengthBucketBatchSampler", "collate_audio", "pad_waveforms"]
