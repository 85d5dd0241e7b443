"""Admitting one request of an agent, before the upstream call: the agent's limits.

Order of the checks: a suspended agent is refused (403 `agent_suspended`); then the
requests per minute (429 `rpm_exceeded`, counted towards rpm abuse); a new session beyond
`concurrent_sessions` (429 `concurrent_limit_exceeded`); the cost limits per session, day
and month (429 `cost_limit_exceeded`); the metered units per day (429
`daily_limit_exceeded`) and month (429 `monthly_limit_exceeded`). A refused request takes
nothing.

Cost is known only afterwards, so admission reserves the estimate (the dearest candidate
of the plan, at the request's `max_tokens` or its default reserve) and a request is
admitted while the committed cost (settled plus reserved) is below the limit: concurrent
requests then overshoot a budget by at most one request's estimate. Metered units (audio
minutes, OCR pages, embedding tokens) are known before the call, so a request is refused
when it would go beyond the limit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import attrs

from gateway.agents.book import AgentBook, Loaded
from gateway.agents.counters import Amounts, Figures, Reservation
from gateway.agents.limits import Limits
from gateway.agents.suspension import auto_suspend
from gateway.platform.errors import ApiError, invalid_api_key
from providers.catalog import ModelInfo, round_cost
from providers.types import Usage


@attrs.frozen
class Refusal:
    error: ApiError
    kind: str  # rpm, cost or units: what auto-suspension looks at


def estimate(usage: Usage, models: Sequence[ModelInfo | None], capability: str) -> Amounts:
    """What a request is expected to spend: its usage at the dearest candidate's price."""
    cost = max((m.metered_cost(usage).total for m in models if m is not None), default=0.0)
    return Amounts(
        cost=float(cost),
        audio_minutes=usage.audio_seconds / 60,
        ocr_pages=float(usage.pages),
        embedding_tokens=float(usage.prompt_tokens) if capability == "embeddings" else 0.0,
    )


def spent(usage: Usage, model: ModelInfo | None, capability: str) -> Amounts:
    """What a request really spent on the model that served it."""
    return estimate(usage, (model,), capability)


async def admit_agent(
    book: AgentBook, agent_id: str, session: str, amounts: Amounts
) -> Reservation:
    """Reserve the request under the agent's limits or raise the refusal (403/429
    `ApiError`), suspending the agent first when its `auto_suspend` says so.
    Cancellation: nothing is reserved until the last step, which does not wait."""
    loaded = await book.get(agent_id)
    if loaded is None:
        raise invalid_api_key("This agent no longer exists.")
    if loaded.record.status == "suspended":
        raise suspended_error(loaded)
    if book.shared is not None:
        return await _admit_shared(book, loaded, session, amounts)
    await book.seed_session(loaded, session)
    figures = book.counters.current(agent_id, session)
    refusal = check(loaded.limits, figures, amounts, book.counters.wall())
    if refusal is None:
        return book.counters.reserve(agent_id, session, amounts)
    refused = book.counters.refused_for_rpm(agent_id) if refusal.kind == "rpm" else 0
    await _maybe_suspend(book, loaded, refusal, refused)
    raise refusal.error


async def _admit_shared(
    book: AgentBook, loaded: Loaded, session: str, amounts: Amounts
) -> Reservation:
    """The same checks as one atomic script on the shared counters; the refusal is
    built from the figures it saw, like in memory."""
    assert book.shared is not None
    record = loaded.record
    figures, reservation, status = await book.shared.take(
        record.id, record.key_id, session, loaded.limits, amounts
    )
    if reservation is not None:
        return reservation
    wall = book.counters.wall()
    refusal = check(loaded.limits, figures, amounts, wall) or _at_boundary(status, loaded.limits)
    await _maybe_suspend(book, loaded, refusal, figures.rpm_refusals)
    raise refusal.error


def _at_boundary(limit_type: str, limits: Limits) -> Refusal:
    """The server's refusal when the same figures pass here (a float summed in another
    order lands on the limit's other side): the limit it named."""
    kind = {"requests_per_minute": "rpm", "concurrent_sessions": "sessions"}.get(
        limit_type, "cost" if limit_type.startswith("cost") else "units"
    )
    codes = {"rpm": "rpm_exceeded", "sessions": "concurrent_limit_exceeded"}
    codes["cost"] = "cost_limit_exceeded"
    codes["units"] = "daily_limit_exceeded" if "daily" in limit_type else "monthly_limit_exceeded"
    limit = limits.get(limit_type) or 0.0
    error = ApiError(
        429,
        codes[kind],
        f"This agent's {limit_type} of {limit:g} is reached.",
        type="rate_limit_error",
        limit_type=limit_type,
        limit=limit,
    )
    return Refusal(error, kind)


async def _maybe_suspend(book: AgentBook, loaded: Loaded, refusal: Refusal, refused: int) -> None:
    """`refused`: the rpm refusals of the last minute, this one included."""
    rules = loaded.record.auto_suspend
    if refusal.kind == "cost" and rules.on_cost_limit:
        await auto_suspend(book, loaded, f"cost limit: {refusal.error.extra['limit_type']}")
    elif refusal.kind == "rpm" and rules.on_rpm_abuse and refused >= rules.abuse_threshold:
        await auto_suspend(
            book, loaded, f"rpm abuse: {refused} requests over the limit in a minute"
        )


def suspended_error(loaded: Loaded) -> ApiError:
    record = loaded.record
    return ApiError(
        403,
        "agent_suspended",
        f"Agent '{record.id}' is suspended ({record.suspended_reason or 'by a manager'}); "
        "a manager can resume it.",
        type="permission_error",
        agent_id=record.id,
        reason=record.suspended_reason,
    )


def check(limits: Limits, figures: Figures, amounts: Amounts, wall: float) -> Refusal | None:
    """The first limit this request would break, if any (pure)."""
    return (
        _rpm(limits, figures)
        or _sessions(limits, figures)
        or _cost(limits, figures, wall)
        or _units(limits, figures, amounts, wall)
    )


def _rpm(limits: Limits, figures: Figures) -> Refusal | None:
    limit = limits["requests_per_minute"]
    if limit is None or figures.requests_last_minute < limit:
        return None
    retry = max(1, math.ceil(figures.first_request_expires_in))
    error = ApiError(
        429,
        "rpm_exceeded",
        f"This agent may make {int(limit)} requests per minute.",
        type="rate_limit_error",
        headers={"Retry-After": str(retry)},
        limit=int(limit),
        current=figures.requests_last_minute,
        retry_after_seconds=retry,
        limit_type="requests_per_minute",
    )
    return Refusal(error, "rpm")


def _sessions(limits: Limits, figures: Figures) -> Refusal | None:
    limit = limits["concurrent_sessions"]
    if limit is None or figures.session_active or figures.active_sessions < limit:
        return None
    error = ApiError(
        429,
        "concurrent_limit_exceeded",
        f"This agent may run {int(limit)} sessions at once; finish one or reuse its "
        "X-Agent-Session.",
        type="rate_limit_error",
        limit=int(limit),
        current=figures.active_sessions,
        limit_type="concurrent_sessions",
    )
    return Refusal(error, "sessions")


def _cost(limits: Limits, figures: Figures, wall: float) -> Refusal | None:
    committed = (
        ("cost_per_session", figures.session_cost, None),
        ("cost_daily", figures.daily.cost, midnight_after),
        ("cost_monthly", figures.monthly.cost, month_after),
    )
    for name, current, resets_at in committed:
        limit = limits[name]
        if limit is None or current < limit:
            continue
        error = ApiError(
            429,
            "cost_limit_exceeded",
            f"This agent's {name} of ${limit:g} is spent (${round_cost(current)} committed).",
            type="rate_limit_error",
            limit_type=name,
            limit=limit,
            current=round_cost(current),
        )
        if resets_at is not None:  # formatted only for a refusal
            _resets(error, resets_at(wall), wall)
        return Refusal(error, "cost")
    return None


_UNITS = (
    ("audio_minutes_daily", "audio_minutes", "daily"),
    ("ocr_pages_daily", "ocr_pages", "daily"),
    ("embedding_tokens_daily", "embedding_tokens", "daily"),
    ("audio_minutes_monthly", "audio_minutes", "monthly"),
    ("ocr_pages_monthly", "ocr_pages", "monthly"),
)


def _units(limits: Limits, figures: Figures, amounts: Amounts, wall: float) -> Refusal | None:
    for name, unit, period in _UNITS:
        limit, wanted = limits[name], getattr(amounts, unit)
        if limit is None or not wanted:
            continue
        current = getattr(figures.daily if period == "daily" else figures.monthly, unit)
        if current + wanted <= limit:
            continue
        daily = period == "daily"
        error = ApiError(
            429,
            "daily_limit_exceeded" if daily else "monthly_limit_exceeded",
            f"This agent's {name} of {limit:g} would be exceeded ({current:g} used, "
            f"{wanted:g} asked).",
            type="rate_limit_error",
            limit_type=name,
            limit=limit,
            current=round(current, 6),
            requested=round(wanted, 6),
        )
        _resets(error, midnight_after(wall) if daily else month_after(wall), wall)
        return Refusal(error, "units")
    return None


def _resets(error: ApiError, moment: datetime, wall: float) -> None:
    """A period refusal's `resets_at`, and `Retry-After` (seconds) until then, as the
    spec's rate-limit errors carry it: a client that honours it waits instead of spending
    its retries."""
    error.extra["resets_at"] = _iso(moment)
    error.headers["Retry-After"] = str(max(1, math.ceil(moment.timestamp() - wall)))


def midnight_after(wall: float) -> datetime:
    day = datetime.fromtimestamp(wall, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day + timedelta(days=1)


def month_after(wall: float) -> datetime:
    first = datetime.fromtimestamp(wall, UTC).replace(
        day=1, hour=0, minute=0, second=0, microsecond=0
    )
    return (first + timedelta(days=32)).replace(day=1)


def next_midnight(wall: float) -> str:
    return _iso(midnight_after(wall))


def next_month(wall: float) -> str:
    return _iso(month_after(wall))


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
