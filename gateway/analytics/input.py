"""Query parameters of the analytics pages, validated into one `AnalyticsQuery` (pure).

`granularity` (hour, day, week, month; default day) and `group_by` (model, provider,
api_key) where the page takes them, and the period (`gateway.analytics.period`). An hourly
series is limited to `MAX_HOURLY_DAYS` days, so a year of hours is refused rather than
computed. Unknown parameters are ignored, as HTTP query strings customarily are.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import get_args

import attrs

from gateway.analytics.period import Period, parse_period
from gateway.platform.errors import invalid_period, invalid_request
from store.analytics import Bucket, Dimension

GRANULARITIES: tuple[Bucket, ...] = get_args(Bucket)
GROUPS: Mapping[str, Dimension] = {"model": "model", "provider": "provider", "api_key": "key_id"}
MAX_HOURLY_DAYS = 31


@attrs.frozen
class AnalyticsQuery:
    period: Period
    granularity: Bucket = "day"
    group_by: str | None = None

    @property
    def dimension(self) -> Dimension | None:
        return GROUPS[self.group_by] if self.group_by else None


def parse_query(
    args: Mapping[str, str], *, today: date, series: bool = False, groups: bool = False
) -> AnalyticsQuery:
    """The period, and `granularity` when `series`, `group_by` when `groups`."""
    period = parse_period(args, today=today)
    granularity = _granularity(args, period) if series else "day"
    group_by = _group_by(args) if groups else None
    return AnalyticsQuery(period, granularity, group_by)


def _granularity(args: Mapping[str, str], period: Period) -> Bucket:
    raw = args.get("granularity", "day")
    for choice in GRANULARITIES:
        if raw == choice:
            if choice == "hour" and period.days > MAX_HOURLY_DAYS:
                raise invalid_period(
                    f"An hourly series covers at most {MAX_HOURLY_DAYS} days; this range "
                    f"has {period.days}. Use a wider granularity.",
                    param="granularity",
                    value=raw,
                )
            return choice
    raise invalid_request(
        f"'granularity' must be one of {', '.join(GRANULARITIES)}.",
        param="granularity",
        value=raw,
    )


def _group_by(args: Mapping[str, str]) -> str | None:
    raw = args.get("group_by")
    if raw is None or raw == "":
        return None
    if raw not in GROUPS:
        raise invalid_request(
            f"'group_by' must be one of {', '.join(GROUPS)}.", param="group_by", value=raw
        )
    return raw
