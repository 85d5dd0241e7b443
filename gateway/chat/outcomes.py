"""What a chat request leaves behind: one usage record, provider health, breakers.

Called once per request whatever its outcome, and once per upstream attempt for the
health figures and circuit breakers that routing reads.
"""

from __future__ import annotations

from gateway.chat.trip import Trip
from gateway.platform.state import AppState
from gateway.upstream.accounting import Accounting
from gateway.upstream.usage import submit_usage


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
