"""Each key's admitted requests of the current UTC day and month (daily and monthly limits).

A key's counts are read from the usage log the first time one of its period limits is
needed, so a restart does not reset them, and then move in memory: the limiter adds one
to both at every admission of the key, limited or not (a limit removed and set again
within the month finds an exact count). Day and month share one record and one load (one
SQL statement), so the month's count always includes the day's.

A key's record lasts until its month is over rather than its day: reading the month back
from the usage log mid-month would miss the requests still in flight, whose records are
written when they end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

import attrs
import trio

from gateway.upstream.limits.policy import LIMITED_ENDPOINTS
from gateway.upstream.limits.windows import (
    PeriodCount,
    day_start,
    month_start,
    utc_day,
    utc_month_of,
)
from store.db import Database
from store.usage import RequestCounts, request_counts

Clock = Callable[[], float]
# (key id, start of the UTC day, start of its UTC month) -> the key's requests since each.
CountLoader = Callable[[str, datetime, datetime], Awaitable[RequestCounts]]


def store_count_loader(
    db: Database, flush: Callable[[], Awaitable[None]] | None = None
) -> CountLoader:
    """A key's requests of today and of this month from the usage log, counting only the
    endpoints the limiter admits (what it would have counted itself).

    `flush` (the usage writer's) runs first, so that the requests already finished are
    in the log when it is read; only those still in flight are missed.
    """

    async def load(key_id: str, day: datetime, month: datetime) -> RequestCounts:
        if flush is not None:
            await flush()
        return await db.run(
            lambda d: request_counts(
                d, key_id, day_start=day, month_start=month, endpoints=LIMITED_ENDPOINTS
            )
        )

    return load


@attrs.define(eq=False)
class PeriodBook:
    """The day and month counts of the keys that have a daily or monthly limit.

    With no `loader`, a key's counts start at zero.
    """

    loader: CountLoader | None
    wall: Clock
    _counts: dict[str, PeriodCount] = attrs.field(factory=dict, init=False)
    _loading: dict[str, trio.Event] = attrs.field(factory=dict, init=False)

    async def load(self, key_id: str) -> None:
        """Make sure the key's counts are in memory (read once per key and month;
        concurrent callers share one read).

        Cancellation: a cancelled read leaves nothing loaded, and the next caller reads
        again.
        """
        while self.loader is not None and key_id not in self._counts:
            pending = self._loading.get(key_id)
            if pending is not None:
                await pending.wait()
                continue
            await self._read(key_id, self.loader)

    async def _read(self, key_id: str, loader: CountLoader) -> None:
        today = utc_day(self.wall())
        done = self._loading[key_id] = trio.Event()
        try:
            counts = await loader(key_id, day_start(today), month_start(utc_month_of(today)))
            self._counts.setdefault(key_id, PeriodCount(today, counts.daily, counts.monthly))
        finally:
            del self._loading[key_id]
            done.set()

    def current(self, key_id: str, *, limited: bool) -> PeriodCount | None:
        """The key's counts, moved on to today (the caller adds its admission to them);
        None for a key without period limits (`limited` False) whose counts are not kept.

        With a `loader`, `load` must have run first for a limited key: admitting on a
        count that was never read would let a restarted gateway forget the month.
        """
        count = self._counts.get(key_id)
        if count is None and not limited:  # most keys: no date worked out per request
            return None
        today = utc_day(self.wall())
        if count is None:
            if self.loader is not None:
                raise RuntimeError(f"load_counts must run before admitting key {key_id}")
            count = self._counts[key_id] = PeriodCount(today)
        count.roll(today)
        return count

    def figures(self, key_id: str) -> tuple[int, int] | None:
        """The key's (daily, monthly) counts as of now, None when they are not kept."""
        count = self._counts.get(key_id)
        return None if count is None else count.counts_on(utc_day(self.wall()))

    def sweep(self) -> None:
        """Forget the counts of past months."""
        month = utc_month_of(utc_day(self.wall()))
        for key_id in [k for k, c in self._counts.items() if utc_month_of(c.day) < month]:
            del self._counts[key_id]

    def __len__(self) -> int:
        return len(self._counts)
