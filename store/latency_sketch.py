"""The latency sketch: a DDSketch stored as one compact BLOB per (workspace, day, provider).

A DDSketch with relative accuracy `RELATIVE_ACCURACY` counts latencies in log buckets:
bucket `i` holds (gamma^(i-1), gamma^i] with gamma = (1+a)/(1-a), so a quantile read from
it is within a factor (1 +- a) of the exact nearest-rank value, and sketches merge by adding
bucket counts.

The buckets live on a fixed range of slots (`SLOTS`): slot 0 holds latencies of 0 ms (read
back as 0), slots 1.. the buckets from `MIN_BUCKET` (0.0099 ms) to `MAX_BUCKET` (2.8 hours);
a latency outside that range counts in the nearest end slot. A stored sketch is the slots
from its first to its last non-empty one: a little-endian int32 (that first slot) then a
uint32 count per slot. A period's percentiles then cost one row per day and provider and a
few numpy additions (no per-bucket Python objects), however many requests the days held.

The blob is built in Python both by the usage writer (`add`) and inside SQLite by the
`latency_sketch(latency_ms)` aggregate (`register`, used by the migration's backfill and by
`store.usage_rollups.rebuild`): one encoder, so the two paths store identical bytes.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from store.sketch_blob import (
    GAMMA,
    MAX_BUCKET,
    MIN_BUCKET,
    RELATIVE_ACCURACY,
    SLOTS,
    slot_of,
)

__all__ = ["GAMMA", "RELATIVE_ACCURACY", "SLOTS", "slot_of"]

Counts = npt.NDArray[np.uint64]
_HEADER = np.dtype("<i4")
_COUNT = np.dtype("<u4")


_SLOT_VALUES = np.concatenate(
    [[0.0], 2 * GAMMA ** np.arange(MIN_BUCKET, MAX_BUCKET + 1, dtype=np.float64) / (GAMMA + 1)]
)
"""The value each slot stands for: within `RELATIVE_ACCURACY` of every latency it holds."""


def empty() -> Counts:
    return np.zeros(SLOTS, dtype=np.uint64)


def encode(counts: Counts) -> bytes | None:
    """The stored form of dense counts; None when they are all zero."""
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        return None
    first, last = int(filled[0]), int(filled[-1])
    header = np.array([first], dtype=_HEADER).tobytes()
    return header + counts[first : last + 1].astype(_COUNT).tobytes()


def add_blob(total: Counts, blob: bytes) -> None:
    """Add a stored sketch to dense counts, in place."""
    first = int(np.frombuffer(blob, dtype=_HEADER, count=1)[0])
    counts = np.frombuffer(blob, dtype=_COUNT, offset=_HEADER.itemsize)
    total[first : first + counts.size] += counts


def merge(blobs: Iterable[bytes]) -> Counts:
    """Several stored sketches as one dense sketch."""
    total = empty()
    for blob in blobs:
        add_blob(total, blob)
    return total


def quantile(counts: Counts, fraction: float) -> float | None:
    """The nearest-rank quantile of dense counts; None for an empty sketch."""
    cumulative = np.cumsum(counts)
    total = int(cumulative[-1])
    if total == 0:
        return None
    rank = max(1, math.ceil(fraction * total))
    return float(_SLOT_VALUES[int(np.searchsorted(cumulative, rank))])


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
