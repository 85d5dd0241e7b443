"""What a chat request leaves behind: one usage record, provider health, breakers.

Called once per request whatever its outcome, and once per upstream attempt for the
health figures and circuit breakers that routing reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import trio

from gateway.accounting import Accounting
from gateway.chat.attempts import Candidate
from gateway.chat.trip import Trip
from gateway.state import AppState
from gateway.usage_log import submit_usage
from providers.errors import ProviderError
from streams.fallback import Attempt, Outcome


def log_usage(
    state: AppState,
    trip: Trip,
    accounting: Accounting,
    *,
    status: int,
    error_code: str | None,
) -> None:
    submit_usage(
        state,
        request_id=trip.request_id,
        principal=trip.principal,
        created=trip.created,
        labels=trip.labels,
        target=trip.target,
        endpoint="chat",
        accounting=accounting,
        status=status,
        error_code=error_code,
        cache_hit=trip.cache_hit,
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
