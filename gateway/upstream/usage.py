"""One usage record per request, whatever the endpoint: the only place they are built."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.platform.state import AppState
from gateway.upstream.accounting import Accounting
from gateway.upstream.facts import RequestFacts
from gateway.upstream.resolve import Target
from store.usage import UsageRecord


def record_usage(
    state: AppState,
    facts: RequestFacts,
    target: Target,
    accounting: Accounting,
    *,
    status: int,
    error_code: str | None = None,
    cache_hit: bool = False,
    prompt_hash: str | None = None,
) -> None:
    """Queue the request's record for the background writer (never blocks the request):
    every metered unit, its cost, footprint and latency, and what served it; `prompt_hash`
    is a chat request's cache key (what the reports use to find repeated questions)."""
    if not state.settings.usage_log_enabled:
        return
    footprint = accounting.footprint
    usage = accounting.usage
    record = UsageRecord(
        request_id=facts.request_id,
        key_id=facts.principal.key_id,
        workspace_id=facts.principal.workspace_id,
        model=target.model_id,
        provider=target.provider_id,
        endpoint=facts.endpoint,
        status=status,
        created_at=datetime.fromtimestamp(facts.created, UTC),
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        audio_seconds=usage.audio_seconds,
        characters=usage.characters,
        pages=usage.pages,
        searches=usage.searches,
        bytes_stored=usage.bytes_stored,
        cost_usd=accounting.cost.total,
        latency_ms=accounting.latency_ms,
        energy_kwh=footprint.energy_kwh if footprint else 0.0,
        carbon_gco2e=footprint.carbon_gco2e if footprint else 0.0,
        error_code=error_code,
        cache_hit=cache_hit,
        project=facts.labels.project,
        team=facts.labels.team,
        tags=facts.labels.tags,
        prompt_hash=prompt_hash,
    )
    state.metrics.observe_usage(record)
    state.usage.submit(record)
