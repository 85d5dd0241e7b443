"""The period an analytics request covers: `start_date` and `end_date` (YYYY-MM-DD, UTC,
end inclusive), validated once for every family that reads usage over days.

Pure: the caller passes today's date. Absent both, the period is the last
`DEFAULT_DAYS` days up to today; one alone extends `DEFAULT_DAYS` days from (or to) it,
never past the dates a period may name. A range longer than `MAX_DAYS` is refused rather
than computed, and so is a date outside `EARLIEST`-`LATEST` (the Unix era, and never so
late that the day after it, the period's exclusive end, overflows: `9999-12-31` was a 500
on every page and an export that failed after it was accepted).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import attrs

from gateway.analytics.answers import AnalyticsPeriod
from gateway.platform.errors import invalid_period, invalid_request

DEFAULT_DAYS = 30
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
MAX_DAYS = 366
EARLIEST, LATEST = date(1970, 1, 1), date(9999, 12, 30)


@attrs.frozen
class Period:
    """Whole UTC days from `start` to `end`, both included."""

    start: date
    end: date

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    @property
    def since(self) -> datetime:
        """The first instant of the period (UTC)."""
        return datetime.combine(self.start, time(), UTC)

    @property
    def until(self) -> datetime:
        """The first instant after the period (UTC): ranges are [since, until)."""
        return datetime.combine(self.end + timedelta(days=1), time(), UTC)

    def render(self) -> AnalyticsPeriod:
        return {"start": self.start.isoformat(), "end": self.end.isoformat()}


def parse_period(values: Mapping[str, Any], *, today: date, max_days: int = MAX_DAYS) -> Period:
    """`start_date` / `end_date` from a query or a body into a `Period`; a bad date, an end
    before the start or a range over `max_days` days is a 400 naming the parameter."""
    start = _date(values, "start_date")
    end = _date(values, "end_date")
    span = timedelta(days=DEFAULT_DAYS - 1)
    if start is None and end is None:
        end = today
    if start is None:
        assert end is not None
        start = max(EARLIEST, end - span)
    if end is None:
        end = start + min(span, LATEST - start)  # never past LATEST (nor the calendar)
    if end < start:
        raise invalid_period(
            f"'end_date' ({end.isoformat()}) is before 'start_date' ({start.isoformat()}).",
            param="end_date",
            value=end.isoformat(),
        )
    period = Period(start, end)
    if period.days > max_days:
        raise invalid_period(
            f"The range covers {period.days} days; at most {max_days} are allowed.",
            param="end_date",
            value=end.isoformat(),
        )
    return period


def _date(values: Mapping[str, Any], name: str) -> date | None:
    raw = values.get(name)
    if raw is None:
        return None
    if not isinstance(raw, str) or not _ISO_DATE.fullmatch(raw):
        raise _bad_date(name, raw)
    try:
        found = date.fromisoformat(raw)
    except ValueError:
        raise _bad_date(name, raw) from None
    if not EARLIEST <= found <= LATEST:
        raise invalid_request(
            f"'{name}' must be from {EARLIEST} to {LATEST}.", param=name, value=raw
        )
    return found


def _bad_date(name: str, raw: object) -> Exception:
    return invalid_request(
        f"'{name}' must be a date written YYYY-MM-DD (UTC).", param=name, value=raw
    )
