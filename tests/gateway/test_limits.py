"""The rate limiter: exact windows, reservations, concurrency, daily counts, waiting.

Monthly counts have their own module, `test_monthly_limit.py`.

Time is trio's virtual clock (`autojump_clock`); the wall clock is a fixed Unix moment
plus that virtual time, so reset times and retry delays are asserted exactly.
"""

from __future__ import annotations

import math
import tracemalloc
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import trio

from gateway.upstream.limits import RateLimiter, RateLimitExceeded
from gateway.upstream.limits.headers import format_duration, iso_z
from gateway.upstream.limits.limiter import Admission
from gateway.upstream.limits.periods import store_count_loader
from gateway.upstream.limits.policy import DEFAULT_COMPLETION_RESERVE, effective_limits
from gateway.upstream.limits.upstream import UpstreamMeter, settings_limit
from gateway.upstream.limits.windows import SlidingLog, ceil_seconds, next_midnight, utc_day
from providers.types import Usage
from store import usage
from store.db import open_database
from store.keys import ApiKeyRecord, RateLimits, new_record
from store.secrets import KeyKind, new_api_key

NOON = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
WALL0 = NOON.timestamp()
SPEC_HEADERS = {
    "X-RateLimit-Limit-RPM",
    "X-RateLimit-Remaining-RPM",
    "X-RateLimit-Concurrent",
    "X-RateLimit-Concurrent-Limit",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "X-RateLimit-Limit-Requests",
    "X-RateLimit-Remaining-Requests",
    "X-RateLimit-Reset-Requests",
    "X-RateLimit-Limit-Tokens",
    "X-RateLimit-Remaining-Tokens",
    "X-RateLimit-Reset-Tokens",
}


def make_key(kind: KeyKind = "dev", **limits: int | None) -> ApiKeyRecord:
    return new_record(
        new_api_key(kind),
        workspace_id="ws_test",
        name="test",
        kind=kind,
        permissions=("chat",),
        now=NOON,
        rate_limits=RateLimits(**limits),
    )


def wall() -> float:
    return WALL0 + trio.current_time()


def limiter(**kwargs: Any) -> RateLimiter:
    return RateLimiter(clock=trio.current_time, wall=wall, **kwargs)


def refused(limits: RateLimiter, key: ApiKeyRecord, tokens: int = 10) -> RateLimitExceeded:
    with pytest.raises(RateLimitExceeded) as caught:
        limits.admit(key, tokens)
    return caught.value


# -- pure parts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("takes", "need", "limit", "now", "expected"),
    [
        ([], 1, 1, 0.0, 0.0),  # empty: fits now
        ([(0.0, 1)], 1, 1, 10.0, 60.0),  # full: when the only entry leaves
        ([(0.0, 1), (5.0, 1)], 1, 2, 10.0, 60.0),  # the oldest frees the unit
        ([(0.0, 30), (5.0, 30), (9.0, 30)], 50, 100, 10.0, 65.0),  # two entries must go
        ([(0.0, 30)], 101, 100, 10.0, None),  # never fits
        ([(0.0, 30)], 10, 100, 10.0, 10.0),  # fits beside
    ],
)
def test_free_at(
    takes: list[tuple[float, int]], need: int, limit: int, now: float, expected: float | None
) -> None:
    log = SlidingLog()
    for at, amount in takes:
        log.take(amount, at)
    assert log.free_at(need, limit, now) == expected


def test_a_full_minute_at_a_high_rate_costs_a_few_bytes_a_take() -> None:
    """A limit far above the traffic keeps every take of the last minute: at 1,000 a
    second a key's logs hold 60,000 takes each, so a take must not be an object (~100
    bytes with its float: ~12 MiB for a busy gateway's four logs, issue 37)."""
    log = SlidingLog()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(50_000):
            log.take(1, index / 1000)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert log.used(49.999) == 50_000
    assert held / 50_000 < 24


def test_a_reservation_settles_in_place_after_older_takes_left_the_arrays() -> None:
    log = SlidingLog(period=10.0)
    early = log.take(7, 0.0)
    for index in range(5_000):  # expire in turn, so the arrays' front is cut
        log.take(1, 1.0 + index / 100)
    reservation = log.take(40, 55.0)
    assert log.used(55.0) == 40 + 599  # the takes after 45.0 (45.01 ... 50.99)
    assert not log.adjust(early, 3, 55.0)
    assert log.adjust(reservation, 25, 55.5)
    assert log.used(55.5) == 25 + 549  # after 45.5
    assert log.free_at(100, 600, 55.5) == pytest.approx(56.24)  # the 74th oldest, 46.24
    assert log.reset_at(55.5) == 65.0


def test_entries_leave_exactly_one_period_later() -> None:
    log = SlidingLog()
    entry = log.take(5, 1.0)
    assert log.adjust(entry, 4, 60.999)
    assert log.used(60.999) == 4
    assert log.reset_at(60.999) == 61.0
    assert log.used(61.0) == 0
    assert not entry.live
    assert not log.adjust(entry, 1, 61.0)  # an expired entry cannot be changed
    assert log.reset_at(61.0) == 61.0


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.0004, "0s"), (0.85, "850ms"), (1, "1s"), (12.5, "12.5s"), (60, "1m0s")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_retry_seconds_round_up_to_at_least_one() -> None:
    assert [ceil_seconds(s) for s in (0.0, 0.2, 1.0, 1.5, 30.0)] == [1, 1, 1, 2, 30]


def test_day_arithmetic() -> None:
    assert next_midnight(WALL0) == datetime(2025, 3, 2, tzinfo=UTC).timestamp()
    assert utc_day(WALL0) == NOON.date().toordinal()


def test_plan_defaults_by_key_kind() -> None:
    dev = effective_limits(make_key("dev"))
    assert (dev.rpm, dev.tpm, dev.concurrent, dev.daily) == (60, 40_000, 10, None)
    for kind in ("prod", "admin", "tenant"):
        pro = effective_limits(make_key(kind))
        assert (pro.rpm, pro.tpm, pro.concurrent, pro.daily) == (600, 400_000, 100, None)
    own = effective_limits(make_key("dev", rpm=5, tpm=0, concurrent=2, daily_requests=9))
    assert (own.rpm, own.tpm, own.concurrent, own.daily) == (5, 0, 2, 9)


def test_reservation_estimate() -> None:
    limits = RateLimiter()
    assert limits.estimate(make_key(), 100, 50) == 150
    assert limits.estimate(make_key(), 100, None) == 100 + DEFAULT_COMPLETION_RESERVE
    # a default reserve is cut to what the tpm limit leaves, never making the request too large
    assert limits.estimate(make_key(tpm=600), 100, None) == 600
    assert limits.estimate(make_key(tpm=50), 100, None) == 100


def test_upstream_meter() -> None:
    now = [0.0]
    meter = UpstreamMeter(lambda: now[0])
    meter.record_request("ws", "openai")
    meter.record_request("ws", "openai")
    meter.record_tokens("ws", "openai", 700)
    figures = meter.figures("ws", "openai", {"rpm": 10, "tpm": 1000})
    assert figures.to_api() == {
        "rpm": {"limit": 10, "remaining": 8},
        "tpm": {"limit": 1000, "remaining": 300},
    }
    unknown = meter.figures("ws", "openai", {})
    assert unknown.to_api() == {
        "rpm": {"limit": None, "remaining": None},
        "tpm": {"limit": None, "remaining": None},
    }
    assert [settings_limit({"rpm": v}, "rpm") for v in (5, 0, -1, True, "5", None)] == [
        5,
        None,
        None,
        None,
        None,
        None,
    ]
    now[0] = 60.0
    meter.sweep()
    assert len(meter) == 0


# -- requests per minute -------------------------------------------------------------------


async def test_the_60th_request_passes_and_the_61st_is_refused(
    autojump_clock: trio.abc.Clock,
) -> None:
    limits, key = limiter(), make_key("dev")
    t0 = trio.current_time()
    for i in range(60):
        await trio.sleep_until(t0 + i * 0.5)
        limits.admit(key, 10).release()
    await trio.sleep_until(t0 + 30)
    error = refused(limits, key)
    assert error.status == 429
    body = error.body()["error"]
    assert body["type"] == "rate_limit_error"
    assert body["code"] == "rate_limit_exceeded"
    assert body["limit_type"] == "rpm"
    assert (body["limit"], body["current"]) == (60, 60)
    assert body["retry_after"] == 30  # the first request leaves the window at t0 + 60
    assert body["reset_at"] == iso_z(WALL0 + t0 + 60)
    assert error.headers["Retry-After"] == "30"
    assert error.headers["X-RateLimit-Remaining-Requests"] == "0"
    assert error.headers["X-RateLimit-Limit-Requests"] == "60"
    assert error.headers.keys() >= SPEC_HEADERS

    await trio.sleep_until(t0 + 59.999)
    refused(limits, key)
    await trio.sleep_until(t0 + 60)
    limits.admit(key, 10).release()  # exactly when the first one left
    again = refused(limits, key).body()["error"]
    assert again["retry_after"] == 1  # 0.5 s, rounded up to a whole second
    assert again["reset_at"] == iso_z(WALL0 + t0 + 60.5)
    assert again["reset_at"].endswith(".500Z")


async def test_a_refused_request_takes_nothing(autojump_clock: trio.abc.Clock) -> None:
    limits, key = limiter(), make_key(rpm=2, tpm=100)
    limits.admit(key, 50).release()
    error = refused(limits, key, tokens=60)
    assert error.code == "token_limit_exceeded"
    snap = limits.snapshot(key)
    assert (snap.requests_used, snap.tokens_used, snap.inflight) == (1, 50, 0)
    limits.admit(key, 50).release()  # the refused one took neither a request nor tokens
    assert refused(limits, key, tokens=0).code == "rate_limit_exceeded"


# -- tokens per minute ---------------------------------------------------------------------


async def test_tokens_are_reserved_then_settled(autojump_clock: trio.abc.Clock) -> None:
    limits, key = limiter(), make_key(tpm=1000)
    t0 = trio.current_time()
    first = limits.admit(key, 600)
    await trio.sleep(10)
    error = refused(limits, key, tokens=600)
    body = error.body()["error"]
    assert (body["code"], body["limit_type"]) == ("token_limit_exceeded", "tpm")
    assert (body["limit"], body["current"], body["requested"]) == (1000, 600, 600)
    assert body["retry_after"] == 50
    assert body["reset_at"] == iso_z(WALL0 + t0 + 60)
    assert error.headers["X-RateLimit-Remaining-Tokens"] == "400"

    first.settle(Usage(100))  # the answer was short: 500 tokens come back at once
    assert limits.snapshot(key).tokens_used == 100
    second = limits.admit(key, 600)
    second.settle(Usage(900))  # longer than reserved: the difference is charged
    assert limits.snapshot(key).tokens_used == 1000
    second.settle(Usage(0))  # only the first settlement counts
    assert limits.snapshot(key).tokens_used == 1000
    first.release()
    second.release()


async def test_a_settlement_after_the_window_charges_the_difference_now(
    autojump_clock: trio.abc.Clock,
) -> None:
    limits, key = limiter(), make_key(tpm=1000)
    with limits.admit(key, 100) as long_request:
        await trio.sleep(90)  # the reservation has left the window
        long_request.settle(Usage(400))
    snap = limits.snapshot(key)
    assert snap.tokens_used == 300
    assert snap.tokens_reset_at == WALL0 + trio.current_time() + 60


async def test_a_request_larger_than_the_token_limit_is_refused_for_good(
    autojump_clock: trio.abc.Clock,
) -> None:
    limits, key = limiter(), make_key(tpm=1000)
    error = refused(limits, key, tokens=1001)
    body = error.body()["error"]
    assert (body["code"], body["requested"], body["current"]) == ("token_limit_exceeded", 1001, 0)
    assert "retry_after" not in body
    assert "Retry-After" not in error.headers
    start = trio.current_time()
    with pytest.raises(RateLimitExceeded):
        await limits.wait_for_capacity(key, 1001, max_wait_s=30)
    assert trio.current_time() == start  # waiting could not help, so nothing waited


# -- concurrency ---------------------------------------------------------------------------


async def _hold(
    limits: RateLimiter,
    key: ApiKeyRecord,
    until: trio.Event,
    admitted: list[Admission],
    refusals: list[RateLimitExceeded],
) -> None:
    try:
        admission = await limits.acquire(key, 10)
    except RateLimitExceeded as exc:
        refusals.append(exc)
        return
    with admission:
        admitted.append(admission)
        await until.wait()


async def _slow_loader(key_id: str, day: datetime, month: datetime) -> usage.RequestCounts:
    await trio.sleep(0.1)  # every task reaches the limiter before any is admitted
    return usage.RequestCounts(0, 0)


async def test_n_plus_one_concurrent_requests_admit_exactly_n(
    autojump_clock: trio.abc.Clock,
) -> None:
    limits = limiter(count_loader=_slow_loader)
    key = make_key(concurrent=3, daily_requests=1000)
    admitted: list[Admission] = []
    refusals: list[RateLimitExceeded] = []
    done = trio.Event()
    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(_hold, limits, key, done, admitted, refusals)
        await trio.sleep(1)
        assert len(admitted) == 3
        assert len(refusals) == 1
        body = refusals[0].body()["error"]
        assert (body["code"], body["limit_type"]) == ("concurrent_limit_exceeded", "concurrent")
        assert (body["limit"], body["current"]) == (3, 3)
        assert "retry_after" not in body
        assert refusals[0].headers["Retry-After"] == "1"  # the spec's 429 headers: a poll
        assert admitted[0].headers()["X-RateLimit-Concurrent"] == "3"
        assert admitted[0].headers()["X-RateLimit-Concurrent-Limit"] == "3"
        done.set()
    assert limits.snapshot(key).inflight == 0
    assert all(a.released for a in admitted)


async def test_a_cancelled_request_releases_its_slot(autojump_clock: trio.abc.Clock) -> None:
    limits, key = limiter(), make_key(concurrent=2)
    admitted: list[Admission] = []
    async with trio.open_nursery() as nursery:
        for _ in range(2):
            nursery.start_soon(_hold, limits, key, trio.Event(), admitted, [])
        await trio.sleep(1)
        assert limits.snapshot(key).inflight == 2
        nursery.cancel_scope.cancel()  # as a client disconnect does
    assert limits.snapshot(key).inflight == 0
    limits.admit(key, 10).release()


async def test_release_is_idempotent(autojump_clock: trio.abc.Clock) -> None:
    limits, key = limiter(), make_key(concurrent=2)
    one = limits.admit(key, 1)
    two = limits.admit(key, 1)
    one.release()
    one.release()
    assert limits.snapshot(key).inflight == 1
    two.release()


# -- daily ---------------------------------------------------------------------------------


async def test_the_daily_limit_starts_from_the_stored_count(
    autojump_clock: trio.abc.Clock,
) -> None:
    calls: list[tuple[str, datetime, datetime]] = []

    async def loader(key_id: str, day: datetime, month: datetime) -> usage.RequestCounts:
        calls.append((key_id, day, month))
        await trio.sleep(0.5)
        return usage.RequestCounts(daily=98, monthly=98)

    limits = limiter(count_loader=loader)
    key = make_key(daily_requests=100)
    async with trio.open_nursery() as nursery:  # concurrent first requests share one load
        for _ in range(2):
            nursery.start_soon(limits.acquire, key, 10)
    march = datetime(2025, 3, 1, tzinfo=UTC)
    assert calls == [(key.id, march, march)]
    error = refused(limits, key)
    body = error.body()["error"]
    assert (body["code"], body["limit_type"]) == ("daily_limit_exceeded", "daily")
    assert (body["limit"], body["current"]) == (100, 100)
    midnight = datetime(2025, 3, 2, tzinfo=UTC).timestamp()
    assert body["retry_after"] == math.ceil(midnight - wall()) == 43200
    assert body["reset_at"] == "2025-03-02T00:00:00.000Z"

    await trio.sleep_until(trio.current_time() + (midnight - wall()))
    admission = await limits.acquire(key, 10)  # a new UTC day counts from zero
    admission.release()
    assert limits.snapshot(key).daily_used == 1
    assert len(calls) == 1


async def test_a_failed_load_is_tried_again(autojump_clock: trio.abc.Clock) -> None:
    answers: list[usage.RequestCounts | Exception] = [OSError("disk"), usage.RequestCounts(5, 5)]

    async def loader(key_id: str, day: datetime, month: datetime) -> usage.RequestCounts:
        await trio.lowlevel.checkpoint()
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    limits = limiter(count_loader=loader)
    key = make_key(daily_requests=6)
    with pytest.raises(OSError, match="disk"):
        await limits.acquire(key, 1)
    (await limits.acquire(key, 1)).release()
    assert refused(limits, key).code == "daily_limit_exceeded"


async def test_admit_without_the_daily_load_is_a_programming_error(
    autojump_clock: trio.abc.Clock,
) -> None:
    limits = limiter(count_loader=_slow_loader)
    with pytest.raises(RuntimeError, match="load_counts"):
        limits.admit(make_key(daily_requests=5), 1)
    limits.admit(make_key(), 1).release()  # keys without a daily limit need no load


async def test_the_store_loader_counts_todays_requests() -> None:
    db = open_database(None)
    try:
        key = make_key(daily_requests=3)
        now = datetime.now(UTC)
        records = [
            usage.UsageRecord(
                request_id=f"req_{i}",
                key_id=key.id,
                workspace_id=key.workspace_id,
                model="m",
                provider="p",
                endpoint="chat",
                status=200,
                created_at=at,
            )
            for i, at in enumerate([now, now, now - timedelta(days=2)])
        ]
        db.run_sync(lambda d: usage.insert_records(d, records))
        limits = RateLimiter(count_loader=store_count_loader(db))
        (await limits.acquire(key, 1)).release()
        with pytest.raises(RateLimitExceeded) as caught:
            await limits.acquire(key, 1)
        assert caught.value.body()["error"]["current"] == 3
    finally:
        db.close()


# -- waiting (rate_limit_handling.strategy = "queue") --------------------------------------


async def test_a_waiter_is_admitted_exactly_when_a_slot_frees(
    autojump_clock: trio.abc.Clock,
) -> None:
    limits, key = limiter(), make_key(concurrent=1)
    t0 = trio.current_time()
    holder = limits.admit(key, 10)
    admitted_at: list[float] = []

    async def waiter() -> None:
        with await limits.wait_for_capacity(key, 10, max_wait_s=10):
            admitted_at.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.sleep(3)
        holder.release()
    assert admitted_at == [t0 + 3]
    assert limits.snapshot(key).inflight == 0


async def test_a_waiter_is_admitted_exactly_when_the_window_frees(
    autojump_clock: trio.abc.Clock,
) -> None:
    limits, key = limiter(), make_key(rpm=1)
    t0 = trio.current_time()
    limits.admit(key, 10).release()
    with await limits.wait_for_capacity(key, 10, max_wait_s=60):
        assert trio.current_time() == t0 + 60


async def test_a_waiter_gives_up_at_its_deadline(autojump_clock: trio.abc.Clock) -> None:
    limits, key = limiter(), make_key(concurrent=1)
    t0 = trio.current_time()
    with limits.admit(key, 10):
        with pytest.raises(RateLimitExceeded) as caught:
            await limits.wait_for_capacity(key, 10, max_wait_s=5)
        assert trio.current_time() == t0 + 5
        assert caught.value.code == "concurrent_limit_exceeded"


async def test_a_waiter_does_not_wait_for_a_window_beyond_its_deadline(
    autojump_clock: trio.abc.Clock,
) -> None:
    limits, key = limiter(), make_key(rpm=1)
    t0 = trio.current_time()
    limits.admit(key, 10).release()
    with pytest.raises(RateLimitExceeded) as caught:
        await limits.wait_for_capacity(key, 10, max_wait_s=59)
    assert trio.current_time() == t0
    assert caught.value.body()["error"]["retry_after"] == 60


async def test_waiters_are_bounded_and_cancellation_leaves_nothing(
    autojump_clock: trio.abc.Clock,
) -> None:
    limits, key = limiter(max_waiters_per_key=1), make_key(concurrent=1)
    holder = limits.admit(key, 10)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(limits.wait_for_capacity, key, 10, 100.0)
        await trio.sleep(1)
        start = trio.current_time()
        with pytest.raises(RateLimitExceeded):
            await limits.wait_for_capacity(key, 10, max_wait_s=100)
        assert trio.current_time() == start  # refused at once: the queue is full
        nursery.cancel_scope.cancel()
    holder.release()
    assert limits.snapshot(key).inflight == 0
    await trio.sleep(60)
    limits.sweep()
    assert limits.tracked() == (0, 0)  # the cancelled waiter left no trace


# -- headers and memory --------------------------------------------------------------------


async def test_headers_are_present_and_consistent(autojump_clock: trio.abc.Clock) -> None:
    limits, key = limiter(), make_key("dev")
    t0 = trio.current_time()
    with limits.admit(key, 1000) as admission:
        await trio.sleep(15)
        headers = admission.headers()
    assert headers.keys() == SPEC_HEADERS
    assert headers["X-RateLimit-Limit-RPM"] == headers["X-RateLimit-Limit-Requests"] == "60"
    assert headers["X-RateLimit-Limit"] == "60"
    assert headers["X-RateLimit-Remaining-RPM"] == headers["X-RateLimit-Remaining"] == "59"
    assert headers["X-RateLimit-Remaining-Requests"] == "59"
    assert headers["X-RateLimit-Reset-Requests"] == "45s"
    assert headers["X-RateLimit-Reset"] == str(int(WALL0 + t0 + 60))
    assert headers["X-RateLimit-Limit-Tokens"] == "40000"
    assert headers["X-RateLimit-Remaining-Tokens"] == "39000"
    assert headers["X-RateLimit-Reset-Tokens"] == "45s"
    assert headers["X-RateLimit-Concurrent"] == "1"
    assert headers["X-RateLimit-Concurrent-Limit"] == "10"


async def test_idle_keys_are_dropped(autojump_clock: trio.abc.Clock) -> None:
    limits = limiter()
    busy = make_key()
    for _ in range(3):
        limits.admit(make_key(daily_requests=10), 10).release()
    held = limits.admit(busy, 10)
    limits.upstream.record_request("ws", "openai")
    assert limits.tracked() == (4, 3)
    await trio.sleep(60)
    limits.admit(make_key(), 10).release()  # a minute on: this admission sweeps
    assert limits.tracked() == (2, 3)  # the held key and the new one; counts last a month
    assert len(limits.upstream) == 0
    held.release()
    await trio.sleep(24 * 3600)
    limits.sweep()
    assert limits.tracked() == (0, 3)  # day counts live as long as their month's count
    await trio.sleep(30 * 24 * 3600)  # April
    limits.sweep()
    assert limits.tracked() == (0, 0)
