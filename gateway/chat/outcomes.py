"""What a chat request leaves behind: one usage record, provider health, breakers.

Called once per request whatever its outcome, and once per upstream attempt for the
health figures and circuit breakers that routing reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import trio

from gateway.chat.accounting import Accounting
from gateway.chat.attempts import Candidate
from gateway.chat.trip import Trip
from gateway.state import AppState
from providers.errors import ProviderError
from store.usage import UsageRecord
from streams.fallback import Attempt, Outcome


def log_usage(
    state: AppState,
    trip: Trip,
    accounting: Accounting,
    *,
    status: int,
    error_code: str | None,
    endpoint: str = "chat",
) -> None:
    footprint = accounting.footprint
    state.usage.submit(
        UsageRecord(
            request_id=trip.request_id,
            key_id=trip.principal.key_id,
            workspace_id=trip.principal.workspace_id,
            model=trip.target.model_id,
            provider=trip.target.provider_id,
            endpoint=endpoint,
            status=status,
            created_at=datetime.fromtimestamp(trip.created, UTC),
            prompt_tokens=accounting.usage.prompt_tokens,
            completion_tokens=accounting.usage.completion_tokens,
            cost_usd=accounting.cost.total,
            latency_ms=accounting.latency_ms,
            energy_kwh=footprint.energy_kwh if footprint else 0.0,
            carbon_gco2e=footprint.carbon_gco2e if footprint else 0.0,
            error_code=error_code,
            cache_hit=trip.cache_hit,
            project=trip.labels.project,
            team=trip.labels.team,
            tags=trip.labels.tags,
        )
    )


def record_attempts(state: AppState, trip: Trip, attempts: Sequence[Attempt[Candidate]]) -> None:
    """Feed each attempt into provider health and its circuit breaker.

    Losers cancelled by a faster candidate say nothing about their provider; failures
    that are the client's fault (a bad request) do not count against it either.
    """
    workspace = trip.principal.workspace_id
    now = trio.current_time()
    for attempt in attempts:
        target = attempt.candidate.target
        ms = _span_ms(attempt)
        breaker = state.breakers.breaker(workspace, target.provider_id, target.upstream_model)
        if attempt.outcome is Outcome.WON:
            state.health.record(workspace, target.provider_id, ok=True, latency_ms=ms)
            state.health.record_first_result(workspace, target.provider_id, ms)
            breaker.record(True, now)
        elif attempt.outcome is Outcome.FAILED and _providers_fault(attempt.error):
            kind = type(attempt.error).__name__
            state.health.record(
                workspace, target.provider_id, ok=False, latency_ms=ms, error_type=kind
            )
            breaker.record(False, now)


def _providers_fault(error: Exception | None) -> bool:
    return isinstance(error, ProviderError) and error.retryable


def _span_ms(attempt: Attempt[Candidate]) -> float:
    if attempt.started_at is None or attempt.ended_at is None:
        return 0.0
    return (attempt.ended_at - attempt.started_at) * 1000
