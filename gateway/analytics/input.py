"""Query parameters of the analytics pages, validated into one `AnalyticsQuery` (pure).

`granularity` (hour, day, week, month; default day) and `group_by` (model, provider,
api_key) where the page takes them, and the period (`gateway.analytics.period`). An hourly
series is limited to `MAX_HOURLY_DAYS` days, so a year of hours is refused rather than
computed. Unknown parameters are ignored, as HTTP query strings customarily are.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Annotated, Literal, get_args

import attrs

from gateway.analytics.answers import ExportFormat, Section
from gateway.analytics.period import MAX_DAYS, Period, parse_period
from gateway.platform.errors import invalid_period
from gateway.platform.shapes import Count, Doc, Format, Pattern, Range
from store.analytics import Bucket, Dimension

GRANULARITIES: tuple[Bucket, ...] = get_args(Bucket)
GroupBy = Literal["model", "provider", "api_key"]
GROUPS: Mapping[GroupBy, Dimension] = {
    "model": "model",
    "provider": "provider",
    "api_key": "key_id",
}
MAX_HOURLY_DAYS = 31
MAX_LISTED = 100  # exports listed at once
SECTIONS: tuple[Section, ...] = get_args(Section)
FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)

# A day the gateway computes with: 1970-01-01 to 9999-12-30 (the day after must exist);
# the period's own rules (`gateway.analytics.period`) come after this shape's.
Day = Annotated[
    str,
    Format("date"),
    Pattern("^(?!9999-12-31$)(19[7-9][0-9]|[2-9][0-9]{3})-", "a day from 1970 to 9999-12-30"),
]
StartDate = Annotated[
    Day | None, Doc("First UTC day (YYYY-MM-DD); default 29 days before end_date")
]
EndDate = Annotated[
    Day | None, Doc(f"Last UTC day, included; default today. At most {MAX_DAYS} days")
]
WorkspaceId = Annotated[str | None, Doc("Another workspace of the caller's (as X-Workspace-ID)")]


@attrs.frozen
class WorkspaceQuery:
    """The workspace to read (the caller's own by default)."""

    workspace_id: WorkspaceId = None


@attrs.frozen
class PeriodQuery:
    """A period of UTC days (the last 30 by default). Dates that do not make a period
    together (an end before the start, over a year) are `invalid_period`."""

    start_date: StartDate = None
    end_date: EndDate = None
    workspace_id: WorkspaceId = None


@attrs.frozen
class SeriesQuery:
    """A period, as a series of buckets (an hourly one covers at most 31 days)."""

    start_date: StartDate = None
    end_date: EndDate = None
    workspace_id: WorkspaceId = None
    granularity: Bucket = "day"


@attrs.frozen
class UsageQuery:
    """A period, as a series of buckets, optionally one series per group."""

    start_date: StartDate = None
    end_date: EndDate = None
    workspace_id: WorkspaceId = None
    granularity: Bucket = "day"
    group_by: GroupBy | None = None


@attrs.frozen
class ExportsQuery:
    """How many of the latest exports to list."""

    limit: Annotated[int, Range(least=1, most=MAX_LISTED)] = 20
    workspace_id: WorkspaceId = None


@attrs.frozen
class ExportRequest:
    """An export of a period (the last 30 days by default) in one format (CSV by
    default), of some sections (all by default)."""

    start_date: Day | None = None
    end_date: Day | None = None
    format: ExportFormat = "csv"
    include: Annotated[list[Section], Count(least=1)] = attrs.field(factory=lambda: list(SECTIONS))


@attrs.frozen
class AnalyticsQuery:
    period: Period
    granularity: Bucket = "day"
    group_by: GroupBy | None = None

    @property
    def dimension(self) -> Dimension | None:
        return GROUPS[self.group_by] if self.group_by else None


def analytics_query(
    asked: PeriodQuery | SeriesQuery | UsageQuery, *, today: date
) -> AnalyticsQuery:
    """The period of a read query (its rules over both dates), its `granularity` and
    `group_by` where the page takes them."""
    period = parse_period(attrs.asdict(asked), today=today)
    granularity = asked.granularity if not isinstance(asked, PeriodQuery) else "day"
    if granularity == "hour" and period.days > MAX_HOURLY_DAYS:
        raise invalid_period(
            f"An hourly series covers at most {MAX_HOURLY_DAYS} days; this range "
            f"has {period.days}. Use a wider granularity.",
            param="granularity",
            value=granularity,
        )
    group_by = asked.group_by if isinstance(asked, UsageQuery) else None
    return AnalyticsQuery(period, granularity, group_by)
