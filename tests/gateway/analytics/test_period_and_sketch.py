"""The period parser and the latency sketch, pure: tables and a bound checked on data."""

from __future__ import annotations

import math
import random
from datetime import date

import pytest

from gateway.analytics.period import Period, parse_period
from gateway.platform.errors import ApiError
from store import latency_sketch
from store.latency_sketch import RELATIVE_ACCURACY, quantile, slot_of

TODAY = date(2026, 3, 15)


@pytest.mark.parametrize(
    ("values", "period"),
    [
        ({}, Period(date(2026, 2, 14), TODAY)),
        ({"end_date": "2026-01-30"}, Period(date(2026, 1, 1), date(2026, 1, 30))),
        ({"start_date": "2026-03-01"}, Period(date(2026, 3, 1), date(2026, 3, 30))),
        (
            {"start_date": "2026-03-01", "end_date": "2026-03-01"},
            Period(TODAY.replace(day=1), date(2026, 3, 1)),
        ),
        ({"start_date": "2025-03-15", "end_date": "2026-03-15"}, Period(date(2025, 3, 15), TODAY)),
    ],
)
def test_periods(values: dict[str, str], period: Period) -> None:
    assert parse_period(values, today=TODAY) == period


def test_a_period_is_whole_utc_days_end_included() -> None:
    period = Period(date(2026, 3, 1), date(2026, 3, 2))
    assert period.days == 2
    assert period.since.isoformat() == "2026-03-01T00:00:00+00:00"
    assert period.until.isoformat() == "2026-03-03T00:00:00+00:00"


@pytest.mark.parametrize(
    ("values", "param"),
    [
        ({"start_date": "2026-3-1"}, "start_date"),
        ({"start_date": 20260301}, "start_date"),
        ({"end_date": "2026-02-29"}, "end_date"),
        ({"start_date": "2025-03-14", "end_date": "2026-03-15"}, "end_date"),
    ],
)
def test_bad_periods(values: dict[str, object], param: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_period(values, today=TODAY)
    assert caught.value.status == 400 and caught.value.extra["param"] == param


def test_sketch_quantiles_stay_within_the_stated_relative_error() -> None:
    rand = random.Random(7)
    values = [rand.lognormvariate(5, 1.5) for _ in range(20_000)] + [0.0] * 50
    counts = latency_sketch.empty()
    for value in values:
        counts[slot_of(value)] += 1
    ordered = sorted(values)
    for fraction in (0.001, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0):
        exact = ordered[max(1, math.ceil(fraction * len(ordered))) - 1]
        got = quantile(counts, fraction)
        assert got is not None
        assert abs(got - exact) <= RELATIVE_ACCURACY * exact, (fraction, got, exact)
    assert quantile(latency_sketch.empty(), 0.5) is None
    assert counts[0] == 50 and quantile(counts, 0.001) == 0.0


def test_a_stored_sketch_holds_its_non_empty_slots_and_merges_by_adding() -> None:
    one, two = latency_sketch.empty(), latency_sketch.empty()
    for value in (0.5, 3.0, 3.0, 250.0):
        one[slot_of(value)] += 1
    for value in (0.0, 1e9, 120.0):
        two[slot_of(value)] += 1
    blob = latency_sketch.encode(one)
    assert blob is not None
    # int32 first slot, then one uint32 per slot from the first to the last non-empty one
    assert len(blob) == 4 + 4 * (slot_of(250.0) - slot_of(0.5) + 1)
    assert latency_sketch.encode(latency_sketch.empty()) is None
    merged = latency_sketch.merge([blob, latency_sketch.encode(two) or b""])
    assert merged == [a + b for a, b in zip(one, two, strict=True)] and sum(merged) == 7
    # beyond the range: counted in the last slot (2.8 hours), not lost
    assert slot_of(1e9) == latency_sketch.SLOTS - 1
