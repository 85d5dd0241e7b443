"""One usage record per request, whatever the endpoint: the only place they are built."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.platform.auth import Principal
from gateway.platform.state import AppState
from gateway.upstream.accounting import Accounting
from gateway.upstream.labels import RequestLabels
from gateway.upstream.resolve import Target
from store.usage import UsageRecord


def submit_usage(
    state: AppState,
    *,
    request_id: str,
    principal: Principal,
    created: int,
    labels: RequestLabels,
    target: Target,
    endpoint: str,
    accounting: Accounting,
    status: int,
    error_code: str | None,
    cache_hit: bool = False,
) -> None:
    """Queue the record for the background writer (never blocks the request)."""
    if not state.settings.usage_log_enabled:
        return
    footprint = accounting.footprint
    record = UsageRecord(
        request_id=request_id,
        key_id=principal.key_id,
        workspace_id=principal.workspace_id,
        model=target.model_id,
        provider=target.provider_id,
        endpoint=endpoint,
        status=status,
        created_at=datetime.fromtimestamp(created, UTC),
        prompt_tokens=accounting.usage.prompt_tokens,
        completion_tokens=accounting.usage.completion_tokens,
        cost_usd=accounting.cost.total,
        latency_ms=accounting.latency_ms,
        energy_kwh=footprint.energy_kwh if footprint else 0.0,
        carbon_gco2e=footprint.carbon_gco2e if footprint else 0.0,
        error_code=error_code,
        cache_hit=cache_hit,
        project=labels.project,
        team=labels.team,
        tags=labels.tags,
    )
    state.metrics.observe_usage(record)
    state.usage.submit(record)
