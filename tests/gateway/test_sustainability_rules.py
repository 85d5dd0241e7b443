"""The sustainability reports' pure rules: grade bands, priority bands, shares, periods."""

from __future__ import annotations

from datetime import date

import pytest

from gateway.platform.errors import ApiError
from gateway.sustainability.figures import percentages, trend_percent
from gateway.sustainability.opportunities import monthly_kg, priority
from gateway.sustainability.period import Period, parse_days, parse_period
from gateway.sustainability.score import grade, percentile, trend


@pytest.mark.parametrize(
    ("score", "letter"),
    [
        (100, "A+"),
        (90, "A+"),
        (89, "A"),
        (85, "A"),
        (84, "B+"),
        (80, "B+"),
        (79, "B"),
        (75, "B"),
        (74, "C+"),
        (70, "C+"),
        (69, "C"),
        (65, "C"),
        (64, "D"),
        (60, "D"),
        (59, "F"),
        (0, "F"),
    ],
)
def test_grades_follow_the_spec_bands_at_every_edge(score: int, letter: str) -> None:
    assert grade(score) == letter


@pytest.mark.parametrize(
    ("kg", "band"),
    [
        (1.0001, "high"),
        (1.0, "medium"),
        (0.75, "medium"),
        (0.5, "medium"),
        (0.4999, "low"),
        (0, "low"),
    ],
)
def test_priority_bands_at_their_thresholds(kg: float, band: str) -> None:
    assert priority(kg) == band


def test_savings_are_normalised_to_a_thirty_day_month() -> None:
    assert monthly_kg(700.0, 7) == pytest.approx(3.0)
    assert monthly_kg(1000.0, 30) == pytest.approx(1.0)


def test_shares_always_add_up_to_exactly_100() -> None:
    assert percentages([1.0, 1.0, 1.0]) == [33.34, 33.33, 33.33]
    assert sum(percentages([2.0, 0.001, 7.3, 0.5])) == pytest.approx(100.0, abs=1e-9)
    assert percentages([0.0, 0.0]) == [0.0, 0.0]
    assert percentages([]) == []


def test_trends_against_the_previous_period() -> None:
    assert trend_percent(150.0, 100.0) == 50.0
    assert trend_percent(0.0, 0.0) == 0.0
    assert trend_percent(3.0, 0.0) is None
    assert trend(70, 80) == {
        "direction": "declining",
        "change_percent": -12.5,
        "previous_score": 80,
    }
    assert trend(0, 0) == {"direction": "stable", "change_percent": 0.0, "previous_score": 0}
    assert trend(40, 0)["change_percent"] is None


def test_percentile_ranks_among_the_workspaces_own_days() -> None:
    assert percentile(60, [50, 60, 70, 80]) == 50
    assert percentile(60, []) == 0


TODAY = date(2026, 5, 14)


@pytest.mark.parametrize(
    ("args", "first", "last"),
    [
        ({}, date(2026, 5, 8), TODAY),
        ({"time_range": "last_30_days"}, date(2026, 4, 15), TODAY),
        ({"time_range": "this_month"}, date(2026, 5, 1), TODAY),
        ({"time_range": "this_quarter"}, date(2026, 4, 1), TODAY),
        (
            {"start_date": "2026-01-30", "end_date": "2026-02-02"},
            date(2026, 1, 30),
            date(2026, 2, 2),
        ),
    ],
)
def test_periods(args: dict[str, str], first: date, last: date) -> None:
    assert parse_period(args, TODAY) == Period(first, last)


def test_the_previous_period_has_the_same_length() -> None:
    period = Period(date(2026, 3, 1), date(2026, 3, 7))
    assert period.previous() == Period(date(2026, 2, 22), date(2026, 2, 28))
    assert period.days == 7


@pytest.mark.parametrize(
    "args",
    [
        {"start_date": "0001-01-01", "end_date": "0001-01-02"},
        {"start_date": "9999-12-31", "end_date": "9999-12-31"},
        {"start_date": "2026-02-30", "end_date": "2026-03-01"},
    ],
)
def test_dates_out_of_range_are_refused(args: dict[str, str]) -> None:
    with pytest.raises(ApiError) as caught:
        parse_period(args, TODAY)
    assert caught.value.status == 400


@pytest.mark.parametrize("raw", ["0", "91", "1.5", "²", " 7", "+7", ""])
def test_analysis_days_outside_1_to_90_are_refused(raw: str) -> None:
    with pytest.raises(ApiError):
        parse_days({"days": raw}, TODAY)
    assert parse_days({"days": "90"}, TODAY).days == 90
    assert parse_days({}, TODAY).days == 7
