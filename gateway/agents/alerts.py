"""Limit-warning alerts: which thresholds an agent's figures have crossed, and in which
limit period (pure).

A threshold fires once per period of its limit: the UTC day for daily limits, the month
for monthly ones, the session (within its day) for `cost_per_session`, the minute for
`requests_per_minute`, the day for `concurrent_sessions`. The store's firing table keeps
that promise across restarts (`store.agents.claim_firing`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import attrs

from gateway.agents.book import Loaded
from gateway.agents.counters import Figures
from gateway.agents.render import WATCHED, figure
from providers.catalog import round_cost
from store.agents import AgentAlertRecord


@attrs.frozen
class Crossing:
    alert: AgentAlertRecord
    limit_type: str
    threshold: float
    current: float
    limit: float
    period: str


def period(limit_type: str, figures: Figures, session: str, now: datetime) -> str:
    if limit_type.endswith("_monthly"):
        return figures.month
    if limit_type == "cost_per_session":
        return f"{figures.day}/{session}"
    if limit_type == "requests_per_minute":
        return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")
    return figures.day


def crossings(
    alerts: list[AgentAlertRecord],
    loaded: Loaded,
    figures: Figures,
    session: str,
    now: datetime,
) -> Iterator[Crossing]:
    """Every (alert, limit, threshold) whose fraction the figures have reached."""
    paths = dict(WATCHED)
    for alert in alerts:
        for limit_type, thresholds in alert.thresholds.items():
            limit = loaded.limits.get(limit_type)
            if not limit:
                continue
            current = figure(figures, paths[limit_type])
            for threshold in thresholds:
                if current >= threshold * limit:
                    yield Crossing(
                        alert,
                        limit_type,
                        threshold,
                        current,
                        limit,
                        period(limit_type, figures, session, now),
                    )


def payload(crossing: Crossing, agent_id: str, now: datetime) -> dict[str, Any]:
    """The spec's limit-warning payload."""
    return {
        "event": "limit_warning",
        "agent_id": agent_id,
        "limit_type": crossing.limit_type,
        "threshold": crossing.threshold,
        "current": round_cost(crossing.current),
        "limit": crossing.limit,
        "timestamp": now.astimezone(UTC).isoformat().replace("+00:00", "Z"),
    }
