"""Which days a report covers, read from its query string. Pure and I/O-free.

Every period is a run of whole UTC days, first and last included: explicit
`start_date`/`end_date` (YYYY-MM-DD, both or neither), else a `time_range` counted back from
`today` (`last_7_days`, the default: today and the six days before it; `last_30_days`;
`this_month`: from the 1st; `this_quarter`: from the quarter's first day). The trend compares
a period with the one of the same length just before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta

import attrs

from gateway.platform.errors import invalid_period, invalid_request

TIME_RANGES = ("last_7_days", "last_30_days", "this_month", "this_quarter")
DEFAULT_TIME_RANGE = "last_7_days"
MAX_DAYS = 366
# Dates a report may name: the Unix era, and never so late that the day after overflows.
EARLIEST, LATEST = date(1970, 1, 1), date(9999, 12, 30)
MIN_ANALYSIS_DAYS, MAX_ANALYSIS_DAYS, DEFAULT_ANALYSIS_DAYS = 1, 90, 7


@attrs.frozen
class Period:
    """The UTC days `first` to `last`, both included."""

    first: date
    last: date

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    @property
    def start(self) -> datetime:
        return datetime.combine(self.first, time(), UTC)

    @property
    def end(self) -> datetime:
        """The instant after the period (exclusive bound)."""
        return datetime.combine(self.last + timedelta(days=1), time(), UTC)

    def previous(self) -> Period:
        """The period of the same length that ends the day before this one starts."""
        return Period(self.first - timedelta(days=self.days), self.first - timedelta(days=1))

    def dates(self) -> list[str]:
        return [(self.first + timedelta(days=i)).isoformat() for i in range(self.days)]


@attrs.frozen
class Filters:
    """Attribution filters: requests whose `X-Service-Project` / `X-Service-Team` matched."""

    project: str | None = None
    team: str | None = None


def parse_period(args: Mapping[str, str], today: date) -> Period:
    """The period a dashboard or score asks for; 400 `invalid_request` naming the bad one."""
    start, end = args.get("start_date"), args.get("end_date")
    if start is not None or end is not None:
        if args.get("time_range") is not None:
            raise invalid_period(
                "Give either 'start_date' and 'end_date' or 'time_range', not both.",
                param="time_range",
            )
        return _explicit(start, end)
    return range_period(args.get("time_range", DEFAULT_TIME_RANGE), today)


def range_period(name: str, today: date) -> Period:
    if name == "last_7_days":
        return Period(today - timedelta(days=6), today)
    if name == "last_30_days":
        return Period(today - timedelta(days=29), today)
    if name == "this_month":
        return Period(today.replace(day=1), today)
    if name == "this_quarter":
        return Period(today.replace(month=(today.month - 1) // 3 * 3 + 1, day=1), today)
    raise invalid_request(
        f"'time_range' must be one of: {', '.join(TIME_RANGES)}.", param="time_range", value=name
    )


def _explicit(start: str | None, end: str | None) -> Period:
    if start is None or end is None:
        missing = "start_date" if start is None else "end_date"
        raise invalid_period("'start_date' and 'end_date' go together: give both.", param=missing)
    period = Period(_date(start, "start_date"), _date(end, "end_date"))
    if period.last < period.first:
        raise invalid_period(
            "'end_date' must not be before 'start_date'.", param="end_date", value=end
        )
    if period.days > MAX_DAYS:
        raise invalid_period(
            f"A report covers at most {MAX_DAYS} days.", param="end_date", value=end
        )
    return period


def _date(value: str, name: str) -> date:
    try:
        if len(value) != 10:
            raise ValueError(value)
        found = date.fromisoformat(value)
    except ValueError:
        raise invalid_request(
            f"'{name}' must be a date written YYYY-MM-DD.", param=name, value=value
        ) from None
    if not EARLIEST <= found <= LATEST:
        raise invalid_request(
            f"'{name}' must be from {EARLIEST} to {LATEST}.", param=name, value=value
        )
    return found


def parse_days(args: Mapping[str, str], today: date) -> Period:
    """The `days` of an opportunity analysis (1-90, default 7), ending today."""
    raw = args.get("days")
    days = DEFAULT_ANALYSIS_DAYS if raw is None else _days(raw)
    return Period(today - timedelta(days=days - 1), today)


def _days(raw: str) -> int:
    days = int(raw) if raw.isascii() and raw.isdigit() else 0
    if not MIN_ANALYSIS_DAYS <= days <= MAX_ANALYSIS_DAYS:
        raise invalid_request(
            f"'days' must be an integer from {MIN_ANALYSIS_DAYS} to {MAX_ANALYSIS_DAYS}.",
            param="days",
            value=raw,
        )
    return days


def parse_filters(args: Mapping[str, str]) -> Filters:
    return Filters(
        project=_label(args, "project_id"),
        team=_label(args, "team_id"),
    )


def _label(args: Mapping[str, str], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not value.strip() or len(value) > 200:
        raise invalid_request(
            f"'{name}' must be a non-empty string of at most 200 characters.",
            param=name,
            value=value,
        )
    return value
