"""Leakage-safe splits: no speaker and no recording appears in two splits.

Records that share a speaker or a recording are joined into one group (the connected
components of the "same speaker or same recording" relation, found with a union-find); whole
groups are then dealt to the splits, largest first, each to the split furthest below its share
of the total duration. The result depends only on the records and ``seed``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from voicehub.training.errors import SplitError
from voicehub.training.manifest import ManifestRecord


class _UnionFind:
    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, item: int) -> int:
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, first: int, second: int) -> None:
        a, b = self.find(first), self.find(second)
        if a != b:
            self.parent[max(a, b)] = min(a, b)


def leakage_groups(records: Sequence[ManifestRecord]) -> list[list[int]]:
    """Indices of ``records`` grouped so that no speaker or recording spans two groups.

    Returns:
        Groups of record indices, each sorted, ordered by their first index.
    """
    groups = _UnionFind(len(records))
    owners: dict[tuple[str, str], int] = {}
    for index, record in enumerate(records):
        keys = [("recording", record.recording)]
        if record.speaker is not None:
            keys.append(("speaker", record.speaker))
        for key in keys:
            if key in owners:
                groups.union(owners[key], index)
            else:
                owners[key] = index
    members: dict[int, list[int]] = {}
    for index in range(len(records)):
        members.setdefault(groups.find(index), []).append(index)
    return sorted(members.values(), key=lambda group: group[0])


def split_records(
    records: Sequence[ManifestRecord], fractions: Mapping[str, float], *, seed: int = 0
) -> dict[str, tuple[ManifestRecord, ...]]:
    """Split ``records`` by duration share without leaking a speaker or a recording across splits.

    Args:
        records: the manifest's records.
        fractions: split name -> share of the total duration (positive, summing to 1 within 1e-6),
            e.g. ``{"train": 0.8, "valid": 0.2}``.
        seed: breaks ties between groups of equal duration.

    Returns:
        Split name -> its records in manifest order (every split non-empty).

    Raises:
        SplitError: for bad fractions, or fewer independent groups than splits (a single-speaker
            corpus cannot be split by speaker: give each clip its own ``recording`` and no
            ``speaker`` if leakage across recordings of one speaker is acceptable).
    """
    if not fractions or any(not share > 0 for share in fractions.values()):
        raise SplitError(f"fractions must be positive shares, got {dict(fractions)}")
    if abs(sum(fractions.values()) - 1.0) > 1e-6:
        raise SplitError(f"fractions must sum to 1, got {sum(fractions.values())} from {dict(fractions)}")
    groups = leakage_groups(records)
    if len(groups) < len(fractions):
        raise SplitError(
            f"{len(records)} records form {len(groups)} group(s) of shared speakers/recordings, fewer than the "
            f"{len(fractions)} splits asked for ({sorted(fractions)}); add speakers or recordings, or ask for "
            f"fewer splits"
        )
    rng = random.Random(seed)
    rng.shuffle(groups)
    groups.sort(key=lambda group: -sum(records[i].duration_s for i in group))
    total = sum(record.duration_s for record in records)
    names = list(fractions)
    assigned: dict[str, list[int]] = {name: [] for name in names}
    filled = dict.fromkeys(names, 0.0)
    for position, group in enumerate(groups):
        empty = [name for name in names if not assigned[name]]
        remaining = len(groups) - position
        candidates = empty if len(empty) >= remaining else names
        name = max(candidates, key=lambda n: (fractions[n] * total - filled[n], -names.index(n)))
        assigned[name].extend(group)
        filled[name] += sum(records[i].duration_s for i in group)
    return {name: tuple(records[i] for i in sorted(assigned[name])) for name in names}


__all__ = ["leakage_groups", "split_records"]
