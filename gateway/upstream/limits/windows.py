"""Pure counters for rate limits: an exact sliding-window log and UTC day and month counts.

Nothing here awaits or reads a clock: every method takes `now` (seconds on a monotonic
clock for the windows, Unix seconds or day ordinals for days and months), so the
arithmetic is tested with plain numbers and the limiter decides where time comes from.

Why a log rather than fixed or approximated windows: the limit must be exact (the 61st
request in any 60 s is refused, never "about" the 61st), and the log's size is bounded by
the limit itself, because a refused take is never written. Each entry expires exactly
`period` seconds after it was taken, which also gives exact `retry_after` answers.
"""

from __future__ import annotations

import math
from collections import deque
from datetime import UTC, date, datetime, timedelta

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
class PeriodCount:
    """Requests admitted for one key on one UTC day (`day`, a proleptic ordinal) and in
    that day's UTC month.

    The two counts move together: every admission adds one to both and a refusal adds
    to neither, so the month's count always includes the day's.
    """

    day: int
    daily: int = 0
    monthly: int = 0

    def roll(self, day: int) -> None:
        """Move on to `day`: the day's count restarts, the month's too in a new month.

        A day earlier than the one counted (the wall clock stepped back) changes nothing:
        the counts stay where they are rather than hand out requests a second time.
        """
        if day <= self.day:
            return
        if utc_month_of(day) != utc_month_of(self.day):
            self.monthly = 0
        self.day, self.daily = day, 0

    def counts_on(self, day: int) -> tuple[int, int]:
        """The (daily, monthly) counts as they would read on `day`, changing nothing."""
        if day <= self.day:
            return self.daily, self.monthly
        same_month = utc_month_of(day) == utc_month_of(self.day)
        return 0, (self.monthly if same_month else 0)


def utc_day(unix: float) -> int:
    return datetime.fromtimestamp(unix, UTC).date().toordinal()


def utc_month_of(day: int) -> int:
    """The month of a day ordinal, as months since year 0 (so months compare and add)."""
    moment = date.fromordinal(day)
    return moment.year * 12 + moment.month - 1


def day_start(day: int) -> datetime:
    """Midnight UTC at the start of the day with this ordinal."""
    start = datetime.fromordinal(day)
    return start.replace(tzinfo=UTC)


def month_start(month: int) -> datetime:
    """Midnight UTC on the first day of a month numbered as `utc_month_of` numbers them."""
    year, index = divmod(month, 12)
    return datetime(year, index + 1, 1, tzinfo=UTC)


def next_midnight(unix: float) -> float:
    """Unix time of the next UTC midnight after `unix`."""
    return (day_start(utc_day(unix)) + timedelta(days=1)).timestamp()


def next_month_start(unix: float) -> float:
    """Unix time of the start of the next UTC month after `unix`."""
    return month_start(utc_month_of(utc_day(unix)) + 1).timestamp()


def ceil_seconds(seconds: float) -> int:
    """Whole seconds to wait, at least 1 (HTTP `Retry-After` takes an integer)."""
    return max(1, math.ceil(seconds - 1e-9))
