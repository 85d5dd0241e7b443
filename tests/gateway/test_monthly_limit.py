"""The monthly request limit: UTC month arithmetic, counts shared with the daily limit, 429s.

Time is trio's virtual clock (`autojump_clock`); the wall clock is a fixed Unix moment
plus that virtual time, so reset times and retry delays are asserted exactly. The HTTP
side (the official client, a restart) is in `test_monthly_limit_api.py`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
import trio

from gateway.upstream.limits import RateLimiter, RateLimitExceeded, store_count_loader
from gateway.upstream.limits import policy as limit_policy
from gateway.upstream.limits.policy import PlanLimits, effective_limits
from gateway.upstream.limits.windows import (
    PeriodCount,
    month_start,
    next_month_start,
    utc_day,
    utc_month_of,
)
from store.db import open_database
from store.keys import ApiKeyRecord, RateLimits, new_record
from store.secrets import KeyKind, new_api_key
from store.usage import RequestCounts, UsageRecord, insert_records
from tests.gateway.test_limits import SPEC_HEADERS

# The last day of March, an hour before midnight: the next UTC month starts in 3,600 s.
LATE = datetime(2025, 3, 31, 23, 0, tzinfo=UTC)
APRIL = datetime(2025, 4, 1, tzinfo=UTC)
MARCH = datetime(2025, 3, 1, tzinfo=UTC)


def make_key(kind: KeyKind = "prod", **limits: int | None) -> ApiKeyRecord:
    return new_record(
        new_api_key(kind),
        workspace_id="ws_test",
        name="test",
        kind=kind,
        permissions=("chat",),
        now=LATE,
        rate_limits=RateLimits(**limits),
    )


def limiter(start: datetime = LATE, **kwargs: Any) -> RateLimiter:
    origin = start.timestamp() - trio.current_time()
    return RateLimiter(clock=trio.current_time, wall=lambda: origin + trio.current_time(), **kwargs)


def refused(limits: RateLimiter, key: ApiKeyRecord) -> RateLimitExceeded:
    with pytest.raises(RateLimitExceeded) as caught:
        limits.admit(key, 10)
    return caught.value


def admit(limits: RateLimiter, key: ApiKeyRecord, times: int = 1) -> None:
    for _ in range(times):
        limits.admit(key, 10).release()


class Loader:
    """A count loader that answers fixed counts and remembers what it was asked."""

    def __init__(self, daily: int = 0, monthly: int = 0, delay: float = 0.5) -> None:
        self.answer = RequestCounts(daily=daily, monthly=monthly)
        self.delay = delay
        self.calls: list[tuple[str, datetime, datetime]] = []

    async def __call__(self, key_id: str, day: datetime, month: datetime) -> RequestCounts:
        self.calls.append((key_id, day, month))
        await trio.sleep(self.delay)
        return self.answer


# -- pure parts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2025, 3, 31, 23, 59, 59, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC)),
        (datetime(2025, 4, 1, tzinfo=UTC), datetime(2025, 5, 1, tzinfo=UTC)),
        (datetime(2025, 12, 15, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)),
        (datetime(2024, 2, 29, 12, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC)),
    ],
)
def test_the_next_utc_month(moment: datetime, expected: datetime) -> None:
    assert next_month_start(moment.timestamp()) == expected.timestamp()
    day = utc_day(moment.timestamp())
    assert month_start(utc_month_of(day)) == moment.replace(
        day=1, hour=0, minute=0, second=0, microsecond=0
    )


def test_a_new_day_restarts_the_day_and_a_new_month_both() -> None:
    march_30 = utc_day(datetime(2025, 3, 30, tzinfo=UTC).timestamp())
    count = PeriodCount(march_30, daily=4, monthly=40)
    assert count.counts_on(march_30 + 1) == (0, 40)
    count.roll(march_30 + 1)  # March 31
    assert (count.daily, count.monthly) == (0, 40)
    count.roll(march_30 - 5)  # the wall clock stepped back: nothing is handed out again
    assert (count.day, count.daily, count.monthly) == (march_30 + 1, 0, 40)
    assert count.counts_on(march_30 + 2) == (0, 0)
    count.roll(march_30 + 2)  # April 1
    assert (count.daily, count.monthly) == (0, 0)


def test_no_plan_has_a_monthly_limit_unless_it_declares_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for kind in ("dev", "prod", "admin", "tenant"):
        assert effective_limits(make_key(kind)).monthly is None
    assert effective_limits(make_key("dev", monthly_requests=7)).monthly == 7
    plan = PlanLimits(rpm=60, tpm=40_000, concurrent=10, monthly=1000)
    monkeypatch.setitem(limit_policy.PLAN_BY_KIND, "dev", plan)
    assert effective_limits(make_key("dev")).monthly == 1000
    assert effective_limits(make_key("dev", monthly_requests=5)).monthly == 5


# -- refusals ------------------------------------------------------------------------------


async def take(limits: RateLimiter, key: ApiKeyRecord) -> None:
    (await limits.acquire(key, 10)).release()


async def test_the_request_over_the_monthly_limit_is_refused_until_the_next_month(
    autojump_clock: trio.abc.Clock,
) -> None:
    loader = Loader(daily=3, monthly=98)
    limits, key = limiter(count_loader=loader), make_key(monthly_requests=100)
    t0 = trio.current_time()
    async with trio.open_nursery() as nursery:  # concurrent first requests share one load
        for _ in range(2):
            nursery.start_soon(take, limits, key)
    assert loader.calls == [(key.id, datetime(2025, 3, 31, tzinfo=UTC), MARCH)]
    assert trio.current_time() == t0 + 0.5

    error = refused(limits, key)
    assert error.status == 429
    body = error.body()["error"]
    assert body["type"] == "rate_limit_error"
    assert (body["code"], body["limit_type"]) == ("monthly_limit_exceeded", "monthly")
    assert (body["limit"], body["current"]) == (100, 100)
    assert body["retry_after"] == 3600  # 3,599.5 s to April, rounded up
    assert body["reset_at"] == "2025-04-01T00:00:00.000Z"
    assert body["message"] == "Monthly limit reached: 100 of 100 requests this month (UTC)."
    assert error.headers["Retry-After"] == "3600"
    assert error.headers.keys() >= SPEC_HEADERS
    snap = limits.snapshot(key)
    assert (snap.daily_used, snap.monthly_used, snap.monthly_remaining) == (5, 100, 0)

    await trio.sleep_until(t0 + 3599.999)
    assert refused(limits, key).body()["error"]["retry_after"] == 1
    await trio.sleep_until(t0 + 3600)  # April 1, 00:00:00 UTC
    await take(limits, key)  # a new month counts from zero, without reading the log again
    snap = limits.snapshot(key)
    assert (snap.daily_used, snap.monthly_used, snap.monthly_remaining) == (1, 1, 99)
    assert snap.monthly_reset_at == datetime(2025, 5, 1, tzinfo=UTC).timestamp()
    assert len(loader.calls) == 1


async def test_a_new_day_keeps_the_month_count(autojump_clock: trio.abc.Clock) -> None:
    start = datetime(2025, 3, 10, 12, tzinfo=UTC)
    limits = limiter(start)
    key = make_key(daily_requests=2, monthly_requests=3)
    admit(limits, key, 2)
    assert refused(limits, key).code == "daily_limit_exceeded"
    await trio.sleep(12 * 3600)  # March 11, midnight
    admit(limits, key)
    error = refused(limits, key)
    body = error.body()["error"]
    assert (body["code"], body["limit"], body["current"]) == ("monthly_limit_exceeded", 3, 3)
    assert body["retry_after"] == (APRIL - datetime(2025, 3, 11, tzinfo=UTC)).total_seconds()
    assert body["reset_at"] == "2025-04-01T00:00:00.000Z"


async def test_when_both_are_spent_the_month_is_named(autojump_clock: trio.abc.Clock) -> None:
    """The day's reset would not admit the request: the answer gives the month's."""
    limits = limiter(datetime(2025, 3, 10, 12, tzinfo=UTC))
    key = make_key(daily_requests=1, monthly_requests=1)
    admit(limits, key)
    body = refused(limits, key).body()["error"]
    assert (body["code"], body["limit_type"]) == ("monthly_limit_exceeded", "monthly")
    assert body["reset_at"] == "2025-04-01T00:00:00.000Z"


# -- consistency of the counts ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits_set", "code"),
    [
        ({"monthly_requests": 2, "daily_requests": 10}, "monthly_limit_exceeded"),
        ({"monthly_requests": 10, "daily_requests": 2}, "daily_limit_exceeded"),
        ({"monthly_requests": 10, "daily_requests": 10, "rpm": 2}, "rate_limit_exceeded"),
        ({"monthly_requests": 10, "daily_requests": 10, "concurrent": 2}, None),
    ],
)
async def test_a_request_refused_by_any_limit_is_counted_by_none(
    autojump_clock: trio.abc.Clock, limits_set: dict[str, int], code: str | None
) -> None:
    limits, key = limiter(MARCH + timedelta(days=9)), make_key("prod", **limits_set)
    held = [limits.admit(key, 10), limits.admit(key, 10)]
    if code is None:
        code = "concurrent_limit_exceeded"
    else:
        for admission in held:
            admission.release()
    for _ in range(5):
        assert refused(limits, key).code == code
    snap = limits.snapshot(key)
    assert (snap.daily_used, snap.monthly_used) == (2, 2)
    assert (snap.requests_used, snap.inflight) == (2, 2 if code.startswith("concurrent") else 0)


async def test_the_counts_go_on_while_a_key_has_no_period_limit(
    autojump_clock: trio.abc.Clock,
) -> None:
    """A limit removed and set again within the month finds every request counted."""
    loader = Loader(daily=1, monthly=1, delay=0)
    limits, limited = limiter(count_loader=loader), make_key(monthly_requests=4)
    await take(limits, limited)
    unlimited = attrs.evolve(limited, rate_limits=RateLimits())
    for _ in range(2):
        await take(limits, unlimited)
    error = refused(limits, limited)  # 1 from the log, 1 limited, 2 unlimited
    assert (error.code, error.body()["error"]["current"]) == ("monthly_limit_exceeded", 4)
    assert len(loader.calls) == 1


# -- loading, waiting, memory ----------------------------------------------------------------


async def test_a_waiter_crossing_into_a_new_month_is_admitted_on_the_new_count(
    autojump_clock: trio.abc.Clock,
) -> None:
    """The sweep that forgets March runs inside the waiter's admission: the key's counts
    move on to April first, so they are neither lost nor read again."""
    loader = Loader(monthly=5, delay=0)
    start = APRIL - timedelta(seconds=30)
    limits = limiter(start, count_loader=loader)
    key = make_key(monthly_requests=10, concurrent=1)
    t0 = trio.current_time()
    holder = await limits.acquire(key, 10)
    admitted_at: list[float] = []

    async def waiter() -> None:
        with await limits.wait_for_capacity(key, 10, max_wait_s=300):
            admitted_at.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.sleep(90)  # April 1, 00:01:00
        holder.release()
    assert admitted_at == [t0 + 90]
    snap = limits.snapshot(key)
    assert (snap.daily_used, snap.monthly_used) == (1, 1)
    assert len(loader.calls) == 1


async def test_a_waiter_whose_counts_another_key_swept_reads_them_again(
    autojump_clock: trio.abc.Clock,
) -> None:
    loader = Loader(monthly=5, delay=0)
    limits = limiter(APRIL - timedelta(seconds=30), count_loader=loader)
    key = make_key(monthly_requests=10, concurrent=1)
    holder = await limits.acquire(key, 10)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(limits.wait_for_capacity, key, 10, 300.0)
        await trio.sleep(70)
        admit(limits, make_key())  # April, a minute on: this admission sweeps March away
        assert limits.tracked() == (2, 0)
        holder.release()
    assert loader.calls[1] == (key.id, APRIL, APRIL)
    assert limits.snapshot(key).monthly_used == 6


async def test_past_months_are_forgotten_and_read_again(autojump_clock: trio.abc.Clock) -> None:
    loader = Loader(daily=2, monthly=2, delay=0)
    limits = limiter(LATE, count_loader=loader)
    key = make_key(monthly_requests=10)
    await take(limits, key)
    await trio.sleep(3600)  # April
    limits.sweep()
    assert limits.tracked() == (0, 0)
    await take(limits, key)
    assert loader.calls[1] == (key.id, APRIL, APRIL)
    assert limits.snapshot(key).monthly_used == 3  # what the log said, plus this one


async def test_waiting_cannot_outlast_a_month(autojump_clock: trio.abc.Clock) -> None:
    limits, key = limiter(), make_key(monthly_requests=1)
    admit(limits, key)
    start = trio.current_time()
    with pytest.raises(RateLimitExceeded) as caught:
        await limits.wait_for_capacity(key, 10, max_wait_s=60)
    assert caught.value.code == "monthly_limit_exceeded"
    assert trio.current_time() == start  # refused at once: the month ends in an hour


async def test_a_cancelled_load_leaves_nothing(autojump_clock: trio.abc.Clock) -> None:
    loader = Loader(monthly=1, delay=10)
    limits, key = limiter(count_loader=loader), make_key(monthly_requests=2)
    with trio.move_on_after(5):
        await limits.acquire(key, 10)
    assert limits.tracked() == (0, 0)
    with pytest.raises(RuntimeError, match="load_counts"):
        limits.admit(key, 10)
    await take(limits, key)
    assert len(loader.calls) == 2
    assert refused(limits, key).code == "monthly_limit_exceeded"


async def test_the_store_loader_counts_this_months_limited_requests() -> None:
    """Chat and embeddings pass the limiter, so the log's count holds both; an endpoint
    the limiter does not admit is left out, so a restart finds the count the limiter had."""
    db = open_database(None)
    flushed: list[bool] = []

    async def flush() -> None:
        flushed.append(True)

    try:
        key = make_key(monthly_requests=3)
        now = datetime.now(UTC)
        rows = [
            ("chat", now),
            ("embeddings", now),
            ("not-limited", now),
            ("chat", now - timedelta(40)),
        ]
        records = [
            UsageRecord(
                request_id=f"req_{i}",
                key_id=key.id,
                workspace_id=key.workspace_id,
                model="m",
                provider="p",
                endpoint=endpoint,
                status=200,
                created_at=at,
            )
            for i, (endpoint, at) in enumerate(rows)
        ]
        db.run_sync(lambda d: insert_records(d, records))
        limits = RateLimiter(count_loader=store_count_loader(db, flush))
        (await limits.acquire(key, 1)).release()
        assert flushed == [True]
        with pytest.raises(RateLimitExceeded) as caught:
            await limits.acquire(key, 1)
        assert caught.value.body()["error"]["current"] == 3
    finally:
        db.close()
