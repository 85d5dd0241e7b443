"""The console's usage series: query parameters in, JSON out (pure).

The console's charts read this one small endpoint,
`GET /v1/management/console/usage?hours=24&bucket=hour` (the last hours), or
`?start_date=2026-11-01&end_date=2026-11-07&bucket=day` (whole UTC days, both included).
The answer lists every bucket of the range (`buckets`), so a chart draws an empty one as
zero rather than leaving it out, and the points of requests that reached no provider
carry the error that stopped them (`reason`), so they are labelled rather than blank.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Literal, TypedDict

import attrs

from gateway.platform import shapes
from gateway.platform.answers import Time
from gateway.platform.errors import invalid_period
from gateway.platform.shapes import Choices, Doc, Format, Pattern, Range
from providers.catalog import round_cost
from store.usage_series import SeriesPoint

BUCKETS = {"minute": 60, "hour": 3600, "day": 86400}
MAX_HOURS = 24 * 90
MAX_POINTS_PER_SERIES = 2000
DEFAULT_HOURS = 24
# A day the series can end on: 1970-01-01 to 9999-12-30 (the day after must exist).
Day = Annotated[
    str,
    Format("date"),
    Pattern("^(?!9999-12-31$)(19[7-9][0-9]|[2-9][0-9]{3})-", "a day from 1970 to 9999-12-30"),
]
Bucket = Annotated[str, Choices(tuple(BUCKETS))]


@attrs.frozen
class UsageParameters:
    """The range (the last `hours`, or whole UTC days) and the bucket size. Dates that do
    not make a range together (one without the other, with `hours`, the end before the
    start, over 2,000 buckets) are `invalid_period`."""

    hours: (
        Annotated[
            int,
            Range(least=1, most=MAX_HOURS),
            Doc("The last hours, as whole buckets ending with the current one (default 24)"),
        ]
        | None
    ) = None
    start_date: Annotated[Day, Doc("First UTC day, with end_date; not with hours")] | None = None
    end_date: Annotated[Day, Doc("Last UTC day, included; with start_date")] | None = None
    bucket: Bucket = "hour"


class UsageViewPoint(TypedDict):
    """The sums of one bucket, provider and model. An empty `provider` summed requests
    that reached no provider; `reason` is the error code that stopped them."""

    start: Time
    provider: str
    model: str
    reason: str | None
    requests: int
    errors: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    energy_kwh: float
    carbon_gco2e: float
    cache_hits: int


class UsageSeries(TypedDict):
    """Usage over time: every bucket of the range (`buckets`, empty ones included), and
    the points that have requests."""

    object: Literal["usage_series"]
    bucket: Bucket
    hours: int | None
    since: Time
    until: Time
    buckets: list[Time]
    points: list[UsageViewPoint]


@attrs.frozen
class SeriesQuery:
    """The range [since, until) in whole buckets; `hours` when it is the last hours."""

    since: datetime
    until: datetime
    bucket: str
    hours: int | None = None

    @property
    def bucket_s(self) -> int:
        return BUCKETS[self.bucket]

    def starts(self) -> list[datetime]:
        """The start of every bucket of the range, oldest first."""
        step = timedelta(seconds=self.bucket_s)
        count = int((self.until - self.since) / step)
        return [self.since + step * index for index in range(count)]


def parse_query(args: Mapping[str, str], now: datetime) -> SeriesQuery:
    """`hours` (1 to 2160, default 24) or `start_date` and `end_date` (YYYY-MM-DD, both
    together, not with `hours`), and `bucket` (minute, hour or day, default hour); at most
    2,000 buckets, so a year of minutes is refused rather than computed."""
    asked = shapes.parse_query(UsageParameters, args)
    bucket = asked.bucket
    if asked.start_date is not None or asked.end_date is not None:
        query = _dated(asked)
    else:
        query = _last_hours(asked.hours or DEFAULT_HOURS, bucket, now)
    count = len(query.starts())
    if count > MAX_POINTS_PER_SERIES:
        raise invalid_period(
            f"Too many buckets: {count} {bucket}s is over {MAX_POINTS_PER_SERIES}; "
            "use a wider bucket.",
            param="bucket",
            value=bucket,
        )
    return query


def _last_hours(hours: int, bucket: str, now: datetime) -> SeriesQuery:
    """The last `hours`, as whole buckets ending with the one `now` falls in: "last 24
    hours" by the hour is 24 bars, the current hour's the last."""
    size = BUCKETS[bucket]
    count = math.ceil(hours * 3600 / size)
    current = int(now.timestamp()) // size * size
    since = datetime.fromtimestamp(current - (count - 1) * size, UTC)
    return SeriesQuery(since, since + timedelta(seconds=count * size), bucket, hours)


def _dated(asked: UsageParameters) -> SeriesQuery:
    if asked.hours is not None:
        raise invalid_period(
            "Send either 'hours' or 'start_date' and 'end_date', not both.", param="hours"
        )
    start, end = _date(asked.start_date, "start_date"), _date(asked.end_date, "end_date")
    if end < start:
        raise invalid_period(
            f"'end_date' ({end.isoformat()}) is before 'start_date' ({start.isoformat()}).",
            param="end_date",
            value=end.isoformat(),
        )
    since = datetime(start.year, start.month, start.day, tzinfo=UTC)
    until = datetime(end.year, end.month, end.day, tzinfo=UTC) + _DAY
    return SeriesQuery(since, until, asked.bucket)


_DAY = timedelta(days=1)


def _date(day: str | None, name: str) -> date:
    """A day the declaration has checked (YYYY-MM-DD, 1970 to 9999-12-30)."""
    if day is None:
        other = "end_date" if name == "start_date" else "start_date"
        raise invalid_period(f"'{name}' is required with '{other}'.", param=name)
    return date.fromisoformat(day)


def render_series(query: SeriesQuery, points: Sequence[SeriesPoint]) -> UsageSeries:
    return {
        "object": "usage_series",
        "bucket": query.bucket,
        "hours": query.hours,
        "since": _iso(query.since),
        "until": _iso(query.until),
        "buckets": [_iso(start) for start in query.starts()],
        "points": [_point(p) for p in points],
    }


def _point(point: SeriesPoint) -> UsageViewPoint:
    return {
        "start": _iso(point.start),
        "provider": point.provider,
        "model": point.model,
        "reason": point.reason,
        "requests": point.requests,
        "errors": point.errors,
        "prompt_tokens": point.prompt_tokens,
        "completion_tokens": point.completion_tokens,
        "cost_usd": round_cost(point.cost_usd),
        "energy_kwh": point.energy_kwh,
        "carbon_gco2e": point.carbon_gco2e,
        "cache_hits": point.cache_hits,
    }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
