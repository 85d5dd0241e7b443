"""The latency sketch's stored form: what the usage writer needs to update it.

`store.latency_sketch` reads sketches for the analytics pages (dense counts, cumulative
sums). The usage writer only adds a batch's latencies to a day's BLOB, in its own small
process (`gateway.workers.usage_child`), which imports no more than it needs. So the slot
arithmetic and the blob layout live here, and `store.latency_sketch` builds on them: one
definition of both, so the two paths store identical bytes.

Layout: a little-endian int32 (the first stored slot) then a little-endian uint32 count
per slot up to the last non-empty one.
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from collections.abc import Iterable

RELATIVE_ACCURACY = 0.01
GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY)
LOG_GAMMA = math.log(GAMMA)
MIN_BUCKET = -231
MAX_BUCKET = 806
SLOTS = MAX_BUCKET - MIN_BUCKET + 2
"""Slot 0 for 0 ms, then one per bucket from MIN_BUCKET to MAX_BUCKET."""

_HEADER = struct.Struct("<i")


def slot_of(latency_ms: float) -> int:
    """The slot counting one latency."""
    if latency_ms <= 0:
        return 0
    bucket = math.ceil(math.log(latency_ms) / LOG_GAMMA)
    return min(max(bucket, MIN_BUCKET), MAX_BUCKET) - MIN_BUCKET + 1


def add_slots(blob: bytes | None, slots: Iterable[int]) -> bytes | None:
    """`blob` (None: an empty sketch) with one more count in each of `slots`, re-encoded.

    Counts wrap at 2**32 as the stored uint32 does (a day of one provider would need
    four billion requests)."""
    added = list(slots)
    if not added:
        return blob
    first, stored = decode(blob) if blob else (min(added), _counts(b""))
    low, high = min(first, *added), max(first + len(stored) - 1, *added)
    counts = _counts(bytes(4 * (high - low + 1)))
    counts[first - low : first - low + len(stored)] = stored
    for slot in added:
        counts[slot - low] = (counts[slot - low] + 1) & 0xFFFFFFFF
    return encode_slots(low, counts)


def encode_slots(first: int, counts: Iterable[int]) -> bytes:
    """The stored form of the counts of the slots from `first` on (uint32 each)."""
    return _HEADER.pack(first) + _little_endian(array("I", counts))


def decode(blob: bytes) -> tuple[int, array[int]]:
    """(first slot, its counts and the next slots') of a stored sketch."""
    (first,) = _HEADER.unpack_from(blob)
    return first, _counts(blob[_HEADER.size :])


def _counts(data: bytes) -> array[int]:
    """uint32 counts from little-endian bytes, in the machine's order."""
    counts = array("I")
    assert counts.itemsize == 4, "array('I') is 4 bytes on every supported platform"
    counts.frombytes(data)
    if sys.byteorder == "big":
        counts.byteswap()
    return counts


def _little_endian(counts: array[int]) -> bytes:
    if sys.byteorder == "big":
        counts = array("I", counts)
        counts.byteswap()
    return counts.tobytes()
