"""One usage record per request, whatever the endpoint: the only place they are built."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from gateway.platform.errors import ApiError
from gateway.platform.request_context import current_request
from gateway.platform.state import AppState
from gateway.upstream.accounting import Accounting, account
from gateway.upstream.facts import RequestFacts
from gateway.upstream.resolve import Target
from providers.types import Usage
from store.keys import ApiKeyRecord
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
    cache_savings_usd: float = 0.0,
) -> None:
    """Queue the request's record for the background writer (never blocks the request):
    every metered unit, its cost, footprint and latency, and what served it; `prompt_hash`
    is a chat request's cache key (what the reports use to find repeated questions). The
    call's trail (model asked, attempts, time to first token) and the request's trace id
    go with it for the request log; its provider, model, tokens and cost reach the access
    log and the request metrics through the request's context."""
    if not state.settings.usage_log_enabled:
        return
    footprint = accounting.footprint
    usage = accounting.usage
    trail = facts.trail
    context = current_request()
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
        cache_savings_usd=cache_savings_usd,
        project=facts.labels.project,
        team=facts.labels.team,
        tags=facts.labels.tags,
        prompt_hash=prompt_hash,
        agent_session=_agent_session(facts),
        request_log=state.settings.request_log_days > 0,
        model_requested=trail.model_requested or target.model_id or None,
        ttft_ms=trail.ttft_ms,
        attempts=trail.attempts,
        trace_id=context.trace_id if context is not None else None,
    )
    if context is not None:
        context.note_usage(record)
    state.metrics.observe_usage(record)
    state.usage.submit(record)
    live = state.shared_live
    if live is not None:  # several workers: the realtime page counts every one
        live.count(record)


def _agent_session(facts: RequestFacts) -> str | None:
    """An agent's session, kept so its cost is read back after a restart."""
    credential = facts.principal.credential
    if isinstance(credential, ApiKeyRecord) and credential.agent_id is not None:
        return facts.principal.agent_session
    return None


def record_refusal(state: AppState, facts: RequestFacts, target: Target, error: ApiError) -> None:
    """A request refused with `error` before any provider answered it (a limit's 429, or a
    4xx for its body or parameters): a record with that status and code, metering nothing,
    so rate-limit hits and error rates count it. A plain call in the caller's `except`
    block: the chat path pays nothing for it when nothing is refused."""
    nothing = account(
        state.catalog, target.info, Usage(), latency_ms=facts.elapsed_ms(), task_type=None
    )
    error.recorded = True
    record_usage(state, facts, target, nothing, status=error.status, error_code=error.code)


def unplanned(model: object) -> Target:
    """The target of a request refused before it was planned: the model it named (when it
    named one as text), no provider."""
    name = model if isinstance(model, str) else ""
    return Target(provider_id="", model_id=name, upstream_model=name, info=None)


@contextmanager
def recording_rejection(
    state: AppState, facts: RequestFacts, named: Callable[[], object] = lambda: None
) -> Iterator[None]:
    """Around the checks of a request's form, body, file and parameters (never around its
    upstream call, which records itself): a client error there is recorded
    (`record_refusal`, once, under the model `named()` gives by then) so the error pages
    count invalid requests of every endpoint, not only chat's; the error goes on
    unchanged."""
    try:
        yield
    except ApiError as error:
        if 400 <= error.status < 500 and not error.recorded:
            record_refusal(state, facts, unplanned(named()), error)
        raise


@contextmanager
def recording_refusal(state: AppState, facts: RequestFacts, target: Target) -> Iterator[None]:
    """Around admission: a request the limits refuse (429) is recorded (`record_refusal`);
    the error goes on unchanged. (The chat path calls `record_refusal` itself.)"""
    try:
        yield
    except ApiError as error:
        if error.status == 429:
            record_refusal(state, facts, target, error)
        raise
