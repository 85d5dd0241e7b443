"""Pure counters for rate limits: an exact sliding-window log and a UTC-day count.

Nothing here awaits or reads a clock: every method takes `now` (seconds on a monotonic
clock for the windows, Unix seconds for days), so the arithmetic is tested with plain
numbers and the limiter decides where time comes from.

Why a log rather than fixed or approximated windows: the limit must be exact (the 61st
request in any 60 s is refused, never "about" the 61st), and the log's size is bounded by
the limit itself, because a refused take is never written. Each entry expires exactly
`period` seconds after it was taken, which also gives exact `retry_after` answers.
"""

from __future__ import annotations

import math
from collections import deque
from datetime import UTC, datetime, timedelta

import attrs

WINDOW_S = 60.0
DAY_S = 86_400.0


@attrs.define(eq=False)
class Entry:
    """One take: when, and how much (changed in place when a reservation is settled)."""

    at: float
    amount: int
    live: bool = True  # False once the entry has left its window


@attrs.define
class SlidingLog:
    """The amounts taken in the last `period` seconds, one entry per take.

    An entry taken at `t` counts while `now < t + period`.
    """

    period: float = WINDOW_S
    _entries: deque[Entry] = attrs.field(factory=deque, init=False)
    _total: int = attrs.field(default=0, init=False)

    def prune(self, now: float) -> None:
        """Forget the entries whose window has passed."""
        entries = self._entries
        while entries and entries[0].at + self.period <= now:
            gone = entries.popleft()
            gone.live = False
            self._total -= gone.amount

    def used(self, now: float) -> int:
        self.prune(now)
        return self._total

    def is_empty(self, now: float) -> bool:
        self.prune(now)
        return not self._entries

    def take(self, amount: int, now: float) -> Entry:
        """Record a take (the caller has checked the limit)."""
        self.prune(now)
        entry = Entry(now, amount)
        self._entries.append(entry)
        self._total += amount
        return entry

    def adjust(self, entry: Entry, amount: int, now: float) -> bool:
        """Change a live entry's amount in place; False when it has already expired."""
        self.prune(now)
        if not entry.live:
            return False
        self._total += amount - entry.amount
        entry.amount = amount
        return True

    def free_at(self, need: int, limit: int, now: float) -> float | None:
        """The earliest time at which `need` more fits under `limit` if nothing else is
        taken: `now` when it fits already, None when it can never fit (`need > limit`)."""
        if need > limit:
            return None
        excess = self.used(now) + need - limit
        if excess <= 0:
            return now
        freed = 0
        for entry in self._entries:
            freed += entry.amount
            if freed >= excess:
                return entry.at + self.period
        return now  # unreachable: all entries freed covers any excess when need <= limit

    def reset_at(self, now: float) -> float:
        """When the window is empty again (the newest entry expires); `now` if it is."""
        self.prune(now)
        return self._entries[-1].at + self.period if self._entries else now


@attrs.define
class DayCount:
    """Requests counted in one UTC day (`day` is the date's proleptic ordinal)."""

    day: int
    count: int = 0


def utc_day(unix: float) -> int:
    return datetime.fromtimestamp(unix, UTC).date().toordinal()


def day_start(day: int) -> datetime:
    """Midnight UTC at the start of the day with this ordinal."""
    start = datetime.fromordinal(day)
    return start.replace(tzinfo=UTC)


def next_midnight(unix: float) -> float:
    """Unix time of the next UTC midnight after `unix`."""
    return (day_start(utc_day(unix)) + timedelta(days=1)).timestamp()


def ceil_seconds(seconds: float) -> int:
    """Whole seconds to wait, at least 1 (HTTP `Retry-After` takes an integer)."""
    return max(1, math.ceil(seconds - 1e-9))
