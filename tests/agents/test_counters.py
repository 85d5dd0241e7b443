"""The agent counters and the admission checks, pure, under a controllable clock: the
sliding minute, sessions going idle, day and month roll-over, reserve then settle."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs

from gateway.agents.counters import Amounts, MemoryCounters
from gateway.agents.gate import check
from gateway.agents.limits import LIMIT_NAMES, Limits

NOON = datetime(2026, 3, 31, 12, 0, tzinfo=UTC).timestamp()


@attrs.define
class Clock:
    """Monotonic seconds and wall time, moved by the test."""

    now: float = 1000.0
    wall_now: float = NOON

    def mono(self) -> float:
        return self.now

    def wall(self) -> float:
        return self.wall_now

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.wall_now += seconds


def counters(clock: Clock, idle_s: float = 300.0) -> MemoryCounters:
    return MemoryCounters(idle_s=idle_s, clock=clock.mono, wall=clock.wall)


def limits(**values: float) -> Limits:
    return {name: values.get(name) for name in LIMIT_NAMES}


def test_the_minute_slides_and_the_retry_is_when_the_oldest_request_leaves() -> None:
    clock = Clock()
    book = counters(clock)
    rpm = limits(requests_per_minute=2)
    for _ in range(2):
        assert check(rpm, book.current("a", "s"), Amounts(), clock.wall()) is None
        book.settle(book.reserve("a", "s", Amounts()), Amounts())
        clock.advance(10)
    refusal = check(rpm, book.current("a", "s"), Amounts(), clock.wall())
    assert refusal is not None
    assert refusal.error.code == "rpm_exceeded"
    assert refusal.error.extra["retry_after_seconds"] == 40  # the first request, 20 s ago
    clock.advance(40)
    assert check(rpm, book.current("a", "s"), Amounts(), clock.wall()) is None


def test_cost_is_committed_at_reservation_and_replaced_at_settlement() -> None:
    clock = Clock()
    book = counters(clock)
    budget = limits(cost_daily=1.0, cost_per_session=0.7)
    first = book.reserve("a", "s", Amounts(cost=0.6))
    assert book.current("a", "s").daily.cost == 0.6
    assert check(budget, book.current("a", "s"), Amounts(cost=0.6), clock.wall()) is None
    second = book.reserve("a", "s", Amounts(cost=0.6))
    refused = check(budget, book.current("a", "s"), Amounts(cost=0.6), clock.wall())
    assert refused is not None
    assert refused.error.extra["limit_type"] == "cost_per_session"
    book.settle(first, Amounts(cost=0.1))
    book.settle(second, Amounts())  # ended without an answer: charged nothing
    book.settle(second, Amounts(cost=5.0))  # only the first settlement counts
    figures = book.current("a", "s")
    assert (figures.daily.cost, figures.daily_settled.cost, figures.in_flight) == (0.1, 0.1, 0)
    assert figures.session_cost_settled == 0.1


def test_sessions_go_idle_and_free_their_place() -> None:
    clock = Clock()
    book = counters(clock, idle_s=300)
    one = limits(concurrent_sessions=1)
    book.settle(book.reserve("a", "first", Amounts()), Amounts())
    assert check(one, book.current("a", "first"), Amounts(), clock.wall()) is None
    refused = check(one, book.current("a", "second"), Amounts(), clock.wall())
    assert refused is not None and refused.error.code == "concurrent_limit_exceeded"
    held = book.reserve("a", "first", Amounts())
    clock.advance(600)  # idle by time, but a request is still in flight
    assert check(one, book.current("a", "second"), Amounts(), clock.wall()) is not None
    book.settle(held, Amounts())
    clock.advance(301)
    assert check(one, book.current("a", "second"), Amounts(), clock.wall()) is None


def test_days_and_months_roll_over_at_utc_midnight() -> None:
    clock = Clock()
    book = counters(clock)
    book.baseline("a", Amounts(cost=2.0, ocr_pages=5), Amounts(cost=9.0, ocr_pages=50))
    pages = limits(ocr_pages_daily=6, cost_monthly=10.0)
    refused = check(pages, book.current("a", "s"), Amounts(ocr_pages=2), clock.wall())
    assert refused is not None
    assert refused.error.code == "daily_limit_exceeded"
    assert refused.error.extra["resets_at"] == "2026-04-01T00:00:00Z"
    late = book.reserve("a", "s", Amounts(cost=0.5, ocr_pages=1))
    clock.advance(12 * 3600)  # past midnight, and into April
    book.settle(late, Amounts(cost=0.5, ocr_pages=1))  # charged to the period it ends in
    figures = book.current("a", "s")
    assert (figures.day, figures.month) == ("2026-04-01", "2026-04")
    assert figures.daily == Amounts(cost=0.5, ocr_pages=1)
    assert figures.monthly == Amounts(cost=0.5, ocr_pages=1)
    assert check(pages, figures, Amounts(ocr_pages=2), clock.wall()) is None
