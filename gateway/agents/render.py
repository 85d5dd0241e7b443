"""The agent endpoints' answers and the agent's own view of its usage (pure).

The spec leaves the bodies open; README ("Agents and the MCP server") documents these
shapes. Costs are USD; `cost` figures are settled spending, `committed` adds what
requests in flight have reserved; `remaining_budget` is what the limit leaves of the
committed spending (null without a limit).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs

from gateway.agents.book import Loaded
from gateway.agents.counters import Figures
from gateway.agents.gate import next_midnight, next_month
from gateway.agents.limits import Limits, shown
from providers.catalog import round_cost
from store.agents import AgentAlertRecord
from store.keys import ApiKeyRecord

WARN_AT = 0.8
# (limit, figure) pairs a warning and an alert watch; the figure's name in `Figures`.
WATCHED = (
    ("cost_per_session", "session_cost_settled"),
    ("cost_daily", "daily_settled.cost"),
    ("cost_monthly", "monthly_settled.cost"),
    ("audio_minutes_daily", "daily_settled.audio_minutes"),
    ("audio_minutes_monthly", "monthly_settled.audio_minutes"),
    ("ocr_pages_daily", "daily_settled.ocr_pages"),
    ("ocr_pages_monthly", "monthly_settled.ocr_pages"),
    ("embedding_tokens_daily", "daily_settled.embedding_tokens"),
    ("requests_per_minute", "requests_last_minute"),
    ("concurrent_sessions", "active_sessions"),
)


def iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def agent(
    loaded: Loaded, key: ApiKeyRecord | None = None, full_key: str | None = None
) -> dict[str, Any]:
    record = loaded.record
    body: dict[str, Any] = {
        "id": record.id,
        "object": "agent",
        "name": record.name,
        "status": record.status,
        "permissions": {"tools": list(record.tools)},
        "limits": shown(loaded.limits),
        "limit_overrides": shown({k: v for k, v in record.limits.items()}),
        "organization_limits": shown(loaded.ceilings),
        "template": record.template,
        "auto_suspend": attrs.asdict(record.auto_suspend),
        "key_id": record.key_id,
        "suspended_reason": record.suspended_reason,
        "suspended_at": iso(record.suspended_at),
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
    }
    if key is not None:
        body["key_prefix"] = key.prefix
        body["key_last_four"] = key.last_four
    if full_key is not None:
        body["key"] = full_key
    return body


def figure(figures: Figures, path: str) -> float:
    value: Any = figures
    for part in path.split("."):
        value = getattr(value, part)
    return float(value)


def warnings(loaded: Loaded, figures: Figures) -> list[dict[str, Any]]:
    """A warning for each limit at `WARN_AT` of its value or beyond, and for suspension."""
    found: list[dict[str, Any]] = []
    if loaded.record.status == "suspended":
        found.append(
            {
                "message": "This agent is suspended; its requests are refused until a "
                "manager resumes it.",
                "limit_type": None,
                "fraction": None,
            }
        )
    for name, path in WATCHED:
        limit = loaded.limits[name]
        if not limit:
            continue
        fraction = figure(figures, path) / limit
        if fraction >= WARN_AT:
            found.append(
                {
                    "message": f"{name} is at {fraction:.0%} of its limit "
                    f"({figure(figures, path):g} of {limit:g}).",
                    "limit_type": name,
                    "fraction": round(fraction, 4),
                }
            )
    return found


def _remaining(limit: float | None, committed: float) -> float | None:
    return None if limit is None else round_cost(max(0.0, limit - committed))


def usage(loaded: Loaded, figures: Figures, session: str, wall: float) -> dict[str, Any]:
    """The agent's figures now: the answer of `GET .../usage` and of the MCP tool
    `self_inspect/get_my_usage`."""
    limits = loaded.limits
    daily, monthly = figures.daily_settled, figures.monthly_settled
    return {
        "object": "agent.usage",
        "agent_id": loaded.record.id,
        "status": loaded.record.status,
        "session": {
            "id": session,
            "cost": round_cost(figures.session_cost_settled),
            "committed": round_cost(figures.session_cost),
            "remaining_budget": _remaining(limits["cost_per_session"], figures.session_cost),
        },
        "daily": {
            "date": figures.day,
            "cost": round_cost(daily.cost),
            "committed": round_cost(figures.daily.cost),
            "remaining_budget": _remaining(limits["cost_daily"], figures.daily.cost),
            "audio_minutes": round(daily.audio_minutes, 4),
            "ocr_pages": int(daily.ocr_pages),
            "embedding_tokens": int(daily.embedding_tokens),
            "resets_at": next_midnight(wall),
        },
        "monthly": {
            "month": figures.month,
            "cost": round_cost(monthly.cost),
            "committed": round_cost(figures.monthly.cost),
            "remaining_budget": _remaining(limits["cost_monthly"], figures.monthly.cost),
            "audio_minutes": round(monthly.audio_minutes, 4),
            "ocr_pages": int(monthly.ocr_pages),
            "resets_at": next_month(wall),
        },
        "requests_last_minute": figures.requests_last_minute,
        "active_sessions": figures.active_sessions,
        "in_flight": figures.in_flight,
        "limits": shown(limits),
        "warnings": warnings(loaded, figures),
    }


def sessions(rows: dict[str, tuple[float, int, bool]]) -> list[dict[str, Any]]:
    return [
        {"id": name, "cost": round_cost(cost), "in_flight": in_flight, "active": active}
        for name, (cost, in_flight, active) in sorted(rows.items())
    ]


def alert(record: AgentAlertRecord, secret: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": record.id,
        "object": "agent_alert",
        "agent_id": record.agent_id,
        "type": "limit_warning",
        "thresholds": {k: list(v) for k, v in record.thresholds.items()},
        "webhook_url": record.webhook_url,
        "created_at": iso(record.created_at),
    }
    if secret is not None:
        body["secret"] = secret
    return body


def limits_of(limits: Limits) -> dict[str, float | int | None]:
    return shown(limits)
