"""The spec's maintenance windows: Sundays 02:00-04:00 UTC (primary) and Wednesdays
02:00-04:00 UTC (backup), listed on the status page as upcoming entries."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import attrs

WINDOWS = ((6, "primary"), (2, "backup"))  # (weekday, kind): Sunday, Wednesday
START = time(2, 0, tzinfo=UTC)
LENGTH = timedelta(hours=2)


@attrs.frozen
class Window:
    kind: str
    starts_at: datetime
    ends_at: datetime

    @property
    def id(self) -> str:
        return f"maint_{self.starts_at:%Y%m%d}_{self.kind}"

    def status(self, now: datetime) -> str:
        return "in_progress" if self.starts_at <= now < self.ends_at else "scheduled"


def upcoming(now: datetime, *, weeks: int = 2) -> list[Window]:
    """The windows not yet over at `now`, for the next `weeks` weeks, soonest first."""
    today = now.astimezone(UTC).date()
    found: list[Window] = []
    for offset in range(7 * weeks + 1):
        day = today + timedelta(days=offset)
        for weekday, kind in WINDOWS:
            if day.weekday() == weekday:
                start = datetime.combine(day, START)
                if start + LENGTH > now:
                    found.append(Window(kind, start, start + LENGTH))
    return found[: 2 * weeks]
