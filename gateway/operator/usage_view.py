"""The console's usage series: query parameters in, JSON out (pure).

Until the analytics family serves `/v1/management/analytics/*`, the console's charts read
this one small endpoint, `GET /v1/management/console/usage?hours=24&bucket=hour`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from gateway.platform.errors import invalid_period, invalid_request
from providers.catalog import round_cost
from store.usage_series import SeriesPoint

BUCKETS = {"minute": 60, "hour": 3600, "day": 86400}
MAX_HOURS = 24 * 90
MAX_POINTS_PER_SERIES = 2000


@attrs.frozen
class SeriesQuery:
    hours: int
    bucket: str

    @property
    def bucket_s(self) -> int:
        return BUCKETS[self.bucket]

    def since(self, now: datetime) -> datetime:
        return now - timedelta(hours=self.hours)


def parse_query(args: Mapping[str, str]) -> SeriesQuery:
    """`hours` (1 to 2160, default 24) and `bucket` (minute, hour or day, default hour);
    at most 2,000 buckets, so a year of minutes is refused rather than computed."""
    raw_hours = args.get("hours", "24")
    if not (raw_hours.isascii() and raw_hours.isdigit()) or not 1 <= int(raw_hours) <= MAX_HOURS:
        raise invalid_request(
            f"'hours' must be an integer from 1 to {MAX_HOURS}.", param="hours", value=raw_hours
        )
    bucket = args.get("bucket", "hour")
    if bucket not in BUCKETS:
        raise invalid_request(
            "'bucket' must be one of minute, hour, day.", param="bucket", value=bucket
        )
    query = SeriesQuery(int(raw_hours), bucket)
    if query.hours * 3600 // query.bucket_s > MAX_POINTS_PER_SERIES:
        raise invalid_period(
            f"Too many buckets: {query.hours} hours in {bucket}s is over "
            f"{MAX_POINTS_PER_SERIES}; use a wider bucket.",
            param="bucket",
            value=bucket,
        )
    return query


def render_series(
    query: SeriesQuery, since: datetime, points: Sequence[SeriesPoint]
) -> dict[str, Any]:
    return {
        "object": "usage_series",
        "bucket": query.bucket,
        "hours": query.hours,
        "since": _iso(since),
        "points": [_point(p) for p in points],
    }


def _point(point: SeriesPoint) -> dict[str, Any]:
    return {
        "start": _iso(point.start),
        "provider": point.provider,
        "model": point.model,
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
