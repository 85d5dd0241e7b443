"""The agent endpoints' answers and the agent's own view of its usage (pure).

The spec leaves the bodies open; README ("Agents and the MCP server") documents these
shapes. Costs are USD; `cost` figures are settled spending, `committed` adds what
requests in flight have reserved; `remaining_budget` is what the limit leaves of the
committed spending (null without a limit).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NotRequired, TypedDict, cast

import attrs

from gateway.agents.book import Loaded
from gateway.agents.counters import Figures
from gateway.agents.gate import next_midnight, next_month
from gateway.agents.limits import LIMIT_NAMES, TEMPLATES, Limits, shown
from gateway.kernels.webhooks.render import Delivery
from gateway.platform.answers import Time
from gateway.platform.shapes import Choices, Doc
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


class AgentLimits(TypedDict):
    """Every limit by name; null: no limit. Counted limits are whole numbers."""

    requests_per_minute: int | None
    cost_per_session: float | None
    cost_daily: float | None
    cost_monthly: float | None
    audio_minutes_daily: float | None
    audio_minutes_monthly: float | None
    ocr_pages_daily: int | None
    ocr_pages_monthly: int | None
    embedding_tokens_daily: int | None
    concurrent_sessions: int | None


LimitName = Annotated[str, Choices(LIMIT_NAMES)]
AgentStatus = Literal["active", "suspended"]


class AgentPermissions(TypedDict):
    tools: list[str]


class AgentAutoSuspend(TypedDict):
    on_cost_limit: bool
    on_rpm_abuse: bool
    abuse_threshold: int


class Agent(TypedDict):
    """An agent: its effective limits (its overrides, else the organisation's)."""

    id: str
    object: Literal["agent"]
    name: str
    status: AgentStatus
    permissions: AgentPermissions
    limits: AgentLimits
    limit_overrides: Annotated[dict[LimitName, float], Doc("The agent's own limits")]
    organization_limits: AgentLimits
    template: Annotated[str, Choices(tuple(TEMPLATES))] | None
    auto_suspend: AgentAutoSuspend
    key_id: str
    suspended_reason: str | None
    suspended_at: Time | None
    created_at: Time
    updated_at: Time
    key_prefix: NotRequired[str]
    key_last_four: NotRequired[str]
    key: NotRequired[Annotated[str, Doc("The agent key: in the creation answer only")]]


class AgentWarning(TypedDict):
    """A limit at 80 % of its value or beyond (`limit_type`), or the agent suspended."""

    message: str
    limit_type: str | None
    fraction: float | None


class AgentSessionSpend(TypedDict):
    id: str
    cost: float
    committed: float
    remaining_budget: float | None


class AgentDailySpend(TypedDict):
    date: str
    cost: float
    committed: float
    remaining_budget: float | None
    audio_minutes: float
    ocr_pages: int
    embedding_tokens: int
    resets_at: str


class AgentMonthlySpend(TypedDict):
    month: str
    cost: float
    committed: float
    remaining_budget: float | None
    audio_minutes: float
    ocr_pages: int
    resets_at: str


class AgentSessionRow(TypedDict):
    id: str
    cost: float
    in_flight: int
    active: bool


class AgentUsage(TypedDict):
    """What an agent has spent (USD): `cost` settled, `committed` with what requests in
    flight reserved; `remaining_budget` what the limit leaves (null: no limit)."""

    object: Literal["agent.usage"]
    agent_id: str
    status: AgentStatus
    session: AgentSessionSpend
    daily: AgentDailySpend
    monthly: AgentMonthlySpend
    requests_last_minute: int
    active_sessions: int
    in_flight: int
    limits: AgentLimits
    warnings: list[AgentWarning]
    sessions: NotRequired[list[AgentSessionRow]]


class AgentAlert(TypedDict):
    """A limit-warning alert: each threshold fires once per limit period."""

    id: str
    object: Literal["agent_alert"]
    agent_id: str
    type: Literal["limit_warning"]
    thresholds: dict[LimitName, list[float]]
    webhook_url: str
    created_at: Time
    secret: NotRequired[
        Annotated[str, Doc("The webhook's signing secret: in the creation answer only")]
    ]
    deliveries: NotRequired[
        Annotated[list[Delivery], Doc("The webhook delivery log, newest first")]
    ]


class AgentLimitsShown(TypedDict):
    """The organisation's agent limits: the ceilings its agents inherit."""

    object: Literal["agent_limits"]
    limits: AgentLimits


def limits_shown(limits: Limits) -> AgentLimits:
    return cast(AgentLimits, shown(limits))


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def agent(loaded: Loaded, key: ApiKeyRecord | None = None, full_key: str | None = None) -> Agent:
    record = loaded.record
    body: Agent = {
        "id": record.id,
        "object": "agent",
        "name": record.name,
        "status": record.status,
        "permissions": {"tools": list(record.tools)},
        "limits": limits_shown(loaded.limits),
        "limit_overrides": _overrides(record.limits),
        "organization_limits": limits_shown(loaded.ceilings),
        "template": record.template,
        "auto_suspend": cast(AgentAutoSuspend, attrs.asdict(record.auto_suspend)),
        "key_id": record.key_id,
        "suspended_reason": record.suspended_reason,
        "suspended_at": None if record.suspended_at is None else iso(record.suspended_at),
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
    }
    if key is not None:
        body["key_prefix"] = key.prefix
        body["key_last_four"] = key.last_four
    if full_key is not None:
        body["key"] = full_key
    return body


def _overrides(own: Mapping[str, float]) -> dict[str, float]:
    return {k: v for k, v in shown(dict(own)).items() if v is not None}


def figure(figures: Figures, path: str) -> float:
    value: Any = figures
    for part in path.split("."):
        value = getattr(value, part)
    return float(value)


def warnings(loaded: Loaded, figures: Figures) -> list[AgentWarning]:
    """A warning for each limit at `WARN_AT` of its value or beyond, and for suspension."""
    found: list[AgentWarning] = []
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


def usage(loaded: Loaded, figures: Figures, session: str, wall: float) -> AgentUsage:
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
        "limits": limits_shown(limits),
        "warnings": warnings(loaded, figures),
    }


def sessions(rows: dict[str, tuple[float, int, bool]]) -> list[AgentSessionRow]:
    return [
        {"id": name, "cost": round_cost(cost), "in_flight": in_flight, "active": active}
        for name, (cost, in_flight, active) in sorted(rows.items())
    ]


def alert(record: AgentAlertRecord, secret: str | None = None) -> AgentAlert:
    body: AgentAlert = {
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


def organization_limits(ceilings: Limits) -> AgentLimitsShown:
    return {"object": "agent_limits", "limits": limits_shown(ceilings)}
