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
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import attrs

from gateway.platform.errors import invalid_request
from providers.catalog import round_cost
from store.usage_series import SeriesPoint

BUCKETS = {"minute": 60, "hour": 3600, "day": 86400}
MAX_HOURS = 24 * 90
MAX_POINTS_PER_SERIES = 2000
EARLIEST, LATEST = date(1970, 1, 1), date(9999, 12, 30)
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


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
    bucket = args.get("bucket", "hour")
    if bucket not in BUCKETS:
        raise invalid_request(
            "'bucket' must be one of minute, hour, day.", param="bucket", value=bucket
        )
    if "start_date" in args or "end_date" in args:
        query = _dated(args, bucket)
    else:
        query = _last_hours(args, bucket, now)
    count = len(query.starts())
    if count > MAX_POINTS_PER_SERIES:
        raise invalid_request(
            f"Too many buckets: {count} {bucket}s is over {MAX_POINTS_PER_SERIES}; "
            "use a wider bucket.",
            param="bucket",
            value=bucket,
        )
    return query


def _last_hours(args: Mapping[str, str], bucket: str, now: datetime) -> SeriesQuery:
    """The last `hours`, as whole buckets ending with the one `now` falls in: "last 24
    hours" by the hour is 24 bars, the current hour's the last."""
    raw_hours = args.get("hours", "24")
    if not raw_hours.isdigit() or not 1 <= int(raw_hours) <= MAX_HOURS:
        raise invalid_request(
            f"'hours' must be an integer from 1 to {MAX_HOURS}.", param="hours", value=raw_hours
        )
    hours = int(raw_hours)
    size = BUCKETS[bucket]
    count = math.ceil(hours * 3600 / size)
    current = int(now.timestamp()) // size * size
    since = datetime.fromtimestamp(current - (count - 1) * size, UTC)
    return SeriesQuery(since, since + timedelta(seconds=count * size), bucket, hours)


def _dated(args: Mapping[str, str], bucket: str) -> SeriesQuery:
    if "hours" in args:
        raise invalid_request(
            "Send either 'hours' or 'start_date' and 'end_date', not both.", param="hours"
        )
    start, end = _date(args, "start_date"), _date(args, "end_date")
    if end < start:
        raise invalid_request(
            f"'end_date' ({end.isoformat()}) is before 'start_date' ({start.isoformat()}).",
            param="end_date",
            value=end.isoformat(),
        )
    since = datetime(start.year, start.month, start.day, tzinfo=UTC)
    return SeriesQuery(since, datetime(end.year, end.month, end.day, tzinfo=UTC) + _DAY, bucket)


_DAY = timedelta(days=1)


def _date(args: Mapping[str, str], name: str) -> date:
    raw = args.get(name)
    if raw is None:
        other = "end_date" if name == "start_date" else "start_date"
        raise invalid_request(f"'{name}' is required with '{other}'.", param=name)
    try:
        found = date.fromisoformat(raw) if _ISO_DATE.fullmatch(raw) else None
    except ValueError:
        found = None
    if found is None or not EARLIEST <= found <= LATEST:
        raise invalid_request(
            f"'{name}' must be a date written YYYY-MM-DD (UTC) from {EARLIEST} to {LATEST}.",
            param=name,
            value=raw,
        )
    return found


def render_series(query: SeriesQuery, points: Sequence[SeriesPoint]) -> dict[str, Any]:
    return {
        "object": "usage_series",
        "bucket": query.bucket,
        "hours": query.hours,
        "since": _iso(query.since),
        "until": _iso(query.until),
        "buckets": [_iso(start) for start in query.starts()],
        "points": [_point(p) for p in points],
    }


def _point(point: SeriesPoint) -> dict[str, Any]:
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
