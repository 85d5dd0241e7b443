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
from array import array
from datetime import UTC, date, datetime, timedelta

import attrs

WINDOW_S = 60.0
DAY_S = 86_400.0


@attrs.define(eq=False)
class Entry:
    """A handle on one take, for changing its amount later (a reservation settled):
    its position in the log and the amount it holds."""

    log: SlidingLog
    seq: int  # the take's position, counted from the log's first take
    amount: int

    @property
    def live(self) -> bool:
        """False once the entry has left its window."""
        return self.seq >= self.log.first_seq


# A log keeps its takes in two flat arrays (8 bytes each per take), not one object per take:
# with a limit far above the traffic a log holds every take of the last minute, and an
# object with its float was ~100 bytes, which at 800 requests a second over a key's two
# logs and the provider's two came to ~12 MiB of the gateway's memory (issue 37).
_COMPACT_AT = 1024  # expired takes at the arrays' front dropped once this many, and half


@attrs.define
class SlidingLog:
    """The amounts taken in the last `period` seconds, one entry per take.

    An entry taken at `t` counts while `now < t + period`.
    """

    period: float = WINDOW_S
    _at: array[float] = attrs.field(factory=lambda: array("d"), init=False)
    _amounts: array[int] = attrs.field(factory=lambda: array("q"), init=False)
    _head: int = attrs.field(default=0, init=False)  # first live index in the arrays
    _dropped: int = attrs.field(default=0, init=False)  # takes cut from the arrays' front
    _total: int = attrs.field(default=0, init=False)

    @property
    def first_seq(self) -> int:
        """The position of the oldest take still in the window."""
        return self._dropped + self._head

    def prune(self, now: float) -> None:
        """Forget the entries whose window has passed."""
        at, head, end = self._at, self._head, len(self._at)
        if head == end or at[head] + self.period > now:
            return
        gone = 0
        while head < end and at[head] + self.period <= now:
            gone += self._amounts[head]
            head += 1
        self._total -= gone
        self._head = head
        if head >= _COMPACT_AT and head * 2 >= end:
            del at[:head], self._amounts[:head]
            self._dropped += head
            self._head = 0

    def used(self, now: float) -> int:
        self.prune(now)
        return self._total

    def is_empty(self, now: float) -> bool:
        self.prune(now)
        return self._head == len(self._at)

    def take(self, amount: int, now: float) -> Entry:
        """Record a take (the caller has checked the limit)."""
        self.prune(now)
        seq = self._dropped + len(self._at)
        self._at.append(now)
        self._amounts.append(amount)
        self._total += amount
        return Entry(self, seq, amount)

    def adjust(self, entry: Entry, amount: int, now: float) -> bool:
        """Change a live entry's amount in place; False when it has already expired."""
        self.prune(now)
        if not entry.live:
            return False
        self._total += amount - entry.amount
        self._amounts[entry.seq - self._dropped] = amount
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
        for index in range(self._head, len(self._at)):
            freed += self._amounts[index]
            if freed >= excess:
                return self._at[index] + self.period
        return now  # unreachable: all entries freed covers any excess when need <= limit

    def reset_at(self, now: float) -> float:
        """When the window is empty again (the newest entry expires); `now` if it is."""
        self.prune(now)
        return self._at[-1] + self.period if self._head < len(self._at) else now


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


EPOCH_DAY = date(1970, 1, 1).toordinal()


def utc_day(unix: float) -> int:
    """The proleptic ordinal of the UTC day holding `unix` (Unix time counts every UTC day
    as 86,400 seconds, so the day is a division: no datetime built per request)."""
    return EPOCH_DAY + int(unix // DAY_S)


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
