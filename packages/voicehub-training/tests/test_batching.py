"""Length-bucketed batching: reproducible order, similar lengths, disjoint rank slices, padding and masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from voicehub.core.audio import load_audio
from voicehub.training import TrainingError
from voicehub.training.batching import LengthBucketBatchSampler, collate_audio, pad_waveforms
from voicehub.training.manifest import ManifestRecord
from voicehub_training_test_data import LIBRIVOX_DIR

DURATIONS = [float(d) for d in np.random.default_rng(0).uniform(1.0, 10.0, size=40)]


def test_sampler_order_depends_only_on_seed_and_epoch() -> None:
    sampler = LengthBucketBatchSampler(DURATIONS, batch_size=4, seed=7)
    first = sampler.batches(0)
    assert first == LengthBucketBatchSampler(DURATIONS, batch_size=4, seed=7).batches(0)
    assert first != sampler.batches(1)
    assert sorted(i for batch in first for i in batch) == list(range(40))


def test_sampler_buckets_lengths() -> None:
    bucketed = LengthBucketBatchSampler(DURATIONS, batch_size=4, seed=0, bucket_batches=10).batches(0)
    plain = LengthBucketBatchSampler(DURATIONS, batch_size=4, seed=0, bucket_batches=1).batches(0)

    def padding(batches: list[list[int]]) -> float:
        return sum(max(DURATIONS[i] for i in b) * len(b) - sum(DURATIONS[i] for i in b) for b in batches)

    assert padding(bucketed) < 0.2 * padding(plain)


def test_rank_slices_are_disjoint_and_make_the_global_batch() -> None:
    ranks = [LengthBucketBatchSampler(DURATIONS, batch_size=3, seed=1, num_replicas=2, rank=r) for r in (0, 1)]
    single = LengthBucketBatchSampler(DURATIONS, batch_size=6, seed=1)
    for epoch in (0, 1):
        for r in ranks:
            r.set_epoch(epoch)
        zero, one = (list(r) for r in ranks)
        assert len(zero) == len(one)
        for a, b, whole in zip(zero, one, single.global_batches(epoch), strict=True):
            assert not set(a) & set(b)
            assert sorted(a + b) == sorted(whole)


@pytest.mark.parametrize(("count", "num_replicas", "batch_size"), [(11, 2, 3), (13, 2, 3), (13, 3, 2), (7, 3, 2)])
def test_every_record_is_in_one_batch_per_epoch_whatever_the_ranks(
    count: int, num_replicas: int, batch_size: int
) -> None:
    durations = DURATIONS[:count]
    ranks = [
        LengthBucketBatchSampler(durations, batch_size=batch_size, seed=3, num_replicas=num_replicas, rank=r)
        for r in range(num_replicas)
    ]
    for epoch in (0, 1):
        slices = [sampler.batches(epoch) for sampler in ranks]
        assert len({len(steps) for steps in slices}) == 1  # every rank takes part in every step
        assert sorted(i for steps in slices for batch in steps for i in batch) == list(range(count))  # none dropped
        for step in zip(*slices, strict=True):
            sizes = [len(batch) for batch in step]
            assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
    # 13 records in global batches of 6: the last record joins the batch before (7 = 4 + 3), not dropped
    assert (
        sorted(len(batch) for batch in ranks[0].global_batches(0))
        == {(11, 2, 3): [5, 6], (13, 2, 3): [6, 7], (13, 3, 2): [6, 7], (7, 3, 2): [7]}[
            (count, num_replicas, batch_size)
        ]
    )


def test_sampler_refuses_bad_sizes() -> None:
    with pytest.raises(TrainingError, match="0 <= rank < num_replicas"):
        LengthBucketBatchSampler(DURATIONS, batch_size=2, num_replicas=2, rank=2)
    with pytest.raises(TrainingError, match="make no complete batch"):
        LengthBucketBatchSampler([1.0, 2.0], batch_size=4, drop_last=True).batches(0)
    with pytest.raises(TrainingError, match=r"2 records make no complete batch of 3 \(batch_size 1 x 3 ranks\)"):
        LengthBucketBatchSampler([1.0, 2.0], batch_size=1, num_replicas=3, rank=0).batches(0)


def test_pad_waveforms_masks_the_padding() -> None:
    batch, lengths, mask = pad_waveforms([np.ones(3, np.float32), np.full(5, 0.5, np.float32)])
    assert batch.tolist() == [[1, 1, 1, 0, 0], [0.5] * 5]
    assert lengths.tolist() == [3, 5] and mask.sum(1).tolist() == [3, 5]


def test_collate_audio_loads_real_clips_at_their_rate() -> None:
    paths = sorted(LIBRIVOX_DIR.glob("*0880.wav")) + sorted(LIBRIVOX_DIR.glob("*0930.wav"))
    records = [ManifestRecord(audio_path=p, duration_s=load_audio(p).duration_s) for p in paths]
    batch = collate_audio(records, sample_rate=16000)
    assert batch.lengths.tolist() == [47840, 52640]  # 2.99 s and 3.29 s at 16 kHz
    assert batch.waveform.shape == (2, 52640) and batch.waveform.dtype == torch.float32
    assert torch.equal(batch.waveform[0, 47840:], torch.zeros(52640 - 47840))
    assert torch.equal(batch.waveform[1], torch.from_numpy(load_audio(paths[1]).samples))
