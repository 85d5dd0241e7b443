"""SLA credits: measured uptime of a month from incident history, and the credit it earns.

Downtime is the union of the periods during which a `critical` or `major` incident of the
workspace was open (overlapping incidents count once), clipped to the month (and to now
for the current month). `minor` incidents (degraded, still serving) and maintenance do not
count. The credit is a share of the month's fee, by plan:

| plan | SLA | uptime below SLA | below 99.0 % (Pro) / 99.9 % (Ent.) | below 95.0 % / 99.0 % |
|---|---|---|---|---|
| Free | none (best effort) | no credit | no credit | no credit |
| Pro | 99.9 % | 10 % | 25 % | 50 % |
| Enterprise | 99.99 % | 10 % | 25 % | 50 % |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

import attrs

SLA_TARGETS: Mapping[str, float | None] = {"free": None, "pro": 99.9, "enterprise": 99.99}
# plan -> (uptime percent strictly below which, credit percent), largest credit first.
CREDIT_TABLE: Mapping[str, tuple[tuple[float, float], ...]] = {
    "free": (),
    "pro": ((95.0, 50.0), (99.0, 25.0), (99.9, 10.0)),
    "enterprise": ((99.0, 50.0), (99.9, 25.0), (99.99, 10.0)),
}
COUNTED_SEVERITIES = frozenset({"critical", "major"})


@attrs.frozen
class Outage:
    start: datetime
    end: datetime | None  # None: still open
    severity: str


@attrs.frozen
class Assessment:
    plan: str
    sla_target: float | None
    uptime_percent: float
    downtime_minutes: float
    credit_percent: float

    @property
    def status(self) -> str:
        return "approved" if self.credit_percent > 0 else "not_eligible"


def month_bounds(period: str) -> tuple[datetime, datetime]:
    """[first instant, first instant of the next month) of `YYYY-MM`; ValueError if bad."""
    start = datetime.strptime(period, "%Y-%m").replace(tzinfo=UTC)
    year, month = (start.year + 1, 1) if start.month == 12 else (start.year, start.month + 1)
    return start, start.replace(year=year, month=month)


def downtime_seconds(outages: Iterable[Outage], start: datetime, end: datetime) -> float:
    """Seconds of [start, end) covered by at least one counted outage."""
    spans = sorted(
        (max(o.start, start), min(o.end or end, end))
        for o in outages
        if o.severity in COUNTED_SEVERITIES
    )
    total, cursor = 0.0, start
    for span_start, span_end in spans:
        span_start = max(span_start, cursor)
        if span_end > span_start:
            total += (span_end - span_start).total_seconds()
            cursor = span_end
    return total


def credit_percent(plan: str, uptime_percent: float) -> float:
    for below, credit in CREDIT_TABLE.get(plan, ()):
        if uptime_percent < below:
            return credit
    return 0.0


def assess(plan: str, outages: Iterable[Outage], start: datetime, end: datetime) -> Assessment:
    """Uptime and credit of the period [start, end) for a plan."""
    length = (end - start).total_seconds()
    down = downtime_seconds(outages, start, end)
    uptime = 100.0 if length <= 0 else round(100.0 * (1 - down / length), 4)
    return Assessment(
        plan=plan,
        sla_target=SLA_TARGETS.get(plan),
        uptime_percent=uptime,
        downtime_minutes=round(down / 60, 2),
        credit_percent=credit_percent(plan, uptime),
    )
