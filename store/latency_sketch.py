"""The latency sketch: a DDSketch stored as one compact BLOB per (workspace, day, provider).

A DDSketch with relative accuracy `RELATIVE_ACCURACY` counts latencies in log buckets:
bucket `i` holds (gamma^(i-1), gamma^i] with gamma = (1+a)/(1-a), so a quantile read from
it is within a factor (1 +- a) of the exact nearest-rank value, and sketches merge by adding
bucket counts.

The buckets live on a fixed range of slots (`SLOTS`): slot 0 holds latencies of 0 ms (read
back as 0), slots 1.. the buckets from `MIN_BUCKET` (0.0099 ms) to `MAX_BUCKET` (2.8 hours);
a latency outside that range counts in the nearest end slot. A stored sketch is the slots
from its first to its last non-empty one: a little-endian int32 (that first slot) then a
uint32 count per slot (`store.sketch_blob`). A period's percentiles then cost one row per
day and provider, each added to dense counts (`Counts`, a list of `SLOTS` ints) as one
slice, however many requests the days held.

Plain Python, without numpy: the analytics pages are in the core install, which has no
numpy (docs/operations.md, "Install size and memory"). Adding a stored sketch is one
`map(operator.add, ...)` over its stored slots (a few hundred for a day's latencies), so
a 90-day period of ten providers adds in a few milliseconds.

The blob is built in Python both by the usage writer (`store.sketch_blob.add_slots`) and
inside SQLite by the `latency_sketch(latency_ms)` aggregate (`register`, used by the
migration's backfill and by `store.usage_rollups.rebuild`): one encoder, so the two paths
store identical bytes.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import sqlite3
from collections.abc import Iterable

from store.sketch_blob import (
    GAMMA,
    MAX_BUCKET,
    MIN_BUCKET,
    RELATIVE_ACCURACY,
    SLOTS,
    decode,
    encode_slots,
    slot_of,
)

__all__ = ["GAMMA", "RELATIVE_ACCURACY", "SLOTS", "slot_of"]

Counts = list[int]
"""Dense counts: one int per slot."""

_SLOT_VALUES: tuple[float, ...] = (
    0.0,
    *(2 * GAMMA**bucket / (GAMMA + 1) for bucket in range(MIN_BUCKET, MAX_BUCKET + 1)),
)
"""The value each slot stands for: within `RELATIVE_ACCURACY` of every latency it holds."""


def empty() -> Counts:
    return [0] * SLOTS


def encode(counts: Counts) -> bytes | None:
    """The stored form of dense counts; None when they are all zero."""
    filled = [slot for slot, count in enumerate(counts) if count]
    if not filled:
        return None
    first, last = filled[0], filled[-1]
    return encode_slots(first, (count & 0xFFFFFFFF for count in counts[first : last + 1]))


def add_blob(total: Counts, blob: bytes) -> None:
    """Add a stored sketch to dense counts, in place."""
    first, stored = decode(blob)
    end = first + len(stored)
    total[first:end] = map(operator.add, total[first:end], stored)


def add(total: Counts, other: Counts) -> None:
    """Add dense counts to `total`, in place."""
    total[:] = map(operator.add, total, other)


def merge(blobs: Iterable[bytes]) -> Counts:
    """Several stored sketches as one dense sketch."""
    total = empty()
    for blob in blobs:
        add_blob(total, blob)
    return total


def quantile(counts: Counts, fraction: float) -> float | None:
    """The nearest-rank quantile of dense counts; None for an empty sketch."""
    cumulative = list(itertools.accumulate(counts))
    total = cumulative[-1]
    if total == 0:
        return None
    rank = max(1, math.ceil(fraction * total))
    return _SLOT_VALUES[bisect.bisect_left(cumulative, rank)]


class _Aggregate:
    """SQLite aggregate `latency_sketch(latency_ms)`: the stored sketch of a group's rows."""

    def __init__(self) -> None:
        self._counts = empty()

    def step(self, latency_ms: float | None) -> None:
        if latency_ms is not None:
            self._counts[slot_of(float(latency_ms))] += 1

    def finalize(self) -> bytes | None:
        return encode(self._counts)


def register(conn: sqlite3.Connection) -> None:
    """Define `latency_sketch` on a connection (migrations and rebuilds use it)."""
    # typeshed types an aggregate's step and result as int; SQLite passes REAL and takes a BLOB
    conn.create_aggregate("latency_sketch", 1, _Aggregate)  # type: ignore[arg-type]
