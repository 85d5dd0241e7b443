"""Serving one chat completion: plan it, take its share of the limits, answer it from
the cache or race it through its fallback chain, and account for it.

The HTTP layer hands over the authenticated caller, the decoded body and the headers;
this module returns either a JSON answer or a streamed body. A failure before any
content reaches the client is an ordinary HTTP error; every request leaves one usage
record whatever its outcome.
"""

from __future__ import annotations

import time
import uuid
import weakref
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
import trio

from gateway.chat import render
from gateway.chat.attempts import (
    Opened,
    complete,
    fallback_targets,
    hedge_delay,
    open_stream,
    retry_policy,
)
from gateway.chat.cache import ReplayStream, StreamAssembler, cache_key, decide_cache
from gateway.chat.input import ChatParams, parse_chat_body
from gateway.chat.model_fit import fitted, prompt_tokens
from gateway.chat.outcomes import log_usage
from gateway.chat.stream import ChatStreamBody, StreamOutcome, StreamState
from gateway.chat.tasks import classify
from gateway.chat.trip import Trip
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, from_provider_error, invalid_request
from gateway.platform.jsonio import JsonAnswer
from gateway.platform.state import AppState
from gateway.upstream.accounting import Accounting, account, estimate_prompt_tokens, estimate_tokens
from gateway.upstream.admission import admit
from gateway.upstream.chain import (
    Candidate,
    attempt_summary,
    record_attempts,
    retryable,
    usable,
    with_fallback_fields,
)
from gateway.upstream.footprint_render import footprint_headers
from gateway.upstream.labels import RequestLabels
from gateway.upstream.limits import Hold
from gateway.upstream.options import ROUTING_MODES
from gateway.upstream.resolve import RoutingSignals, available_models, resolve_chat_target
from gateway.upstream.routing.apply import routed_resolution
from gateway.upstream.routing.context import chat_context
from gateway.upstream.routing.rules import Rule, match_rule
from gateway.upstream.routing.transform import apply_transform
from providers.catalog import CostBreakdown
from providers.errors import ProviderError
from providers.types import ChatResult, Usage
from streams.fallback import Attempt, RaceFailed
from streams.race import Race, Winner, from_call, race

DEPRECATION_HEADERS = {
    "Deprecation": "true",
    "X-Service-Deprecation-Warning": (
        "'functions' and 'function_call' are deprecated; they were converted to "
        "'tools' and 'tool_choice'."
    ),
}
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@attrs.frozen
class StreamAnswer:
    body: ChatStreamBody
    headers: dict[str, str]


@attrs.frozen
class CachePlan:
    key: str
    ttl_s: float


async def serve_chat(
    state: AppState, principal: Principal, body: Any, headers: Mapping[str, str]
) -> JsonAnswer | StreamAnswer:
    """Answer one chat-completions request (raises `ApiError` for client mistakes)."""
    principal.require("chat")
    trip = plan_trip(state, principal, parse_chat_body(body), headers, body)
    cache = _cache_plan(state, trip)
    admission = await _admit(state, trip)
    try:
        hit = _cached(state, trip, cache)
        if hit is not None:
            return await _answer_from_cache(state, trip, hit, admission)
        if trip.params.stream:
            return await _stream(state, trip, admission, cache)
        with admission:
            return await _plain(state, trip, admission, cache)
    except BaseException:
        admission.release()
        raise


def plan_trip(
    state: AppState,
    principal: Principal,
    params: ChatParams,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
) -> Trip:
    """Route the request: a forced provider, else the first matching rule, else the mode.

    A matching rule's `transform` is applied here, so the limits, the cache key and the
    upstream all see the request as transformed.
    """
    mode = params.routing_mode or _header_mode(headers) or "balanced"
    active = state.registry.active_ids(principal.workspace_id)
    rule = _matching_rule(state, principal, params, headers, body)
    transform = rule.actions.transform if rule else None
    if transform is not None:  # after matching: the conditions saw what the client sent
        params = attrs.evolve(params, request=apply_transform(transform, params.request))
    if params.provider is None:
        signals = _signals(state, principal.workspace_id) if params.model == "auto" else None
        disabled = frozenset(state.registry.configured(principal.workspace_id)) - active
        resolution = routed_resolution(
            state.catalog,
            active,
            rule,
            model=params.model,
            mode=mode,
            signals=signals,
            disabled=disabled,
        )
    else:
        resolution = resolve_chat_target(
            state.catalog, active, model=params.model, provider=params.provider, mode=mode
        )
    prompt = prompt_tokens(params.request.messages, params.request.tools)
    resolution = fitted(
        resolution,
        prompt=prompt,
        max_tokens=params.request.max_tokens,
        flexible=params.model == "auto",
    )
    principal.require_model(resolution.target.model_id)
    return Trip(
        request_id=str(uuid.uuid4()),
        created=int(time.time()),
        started=time.perf_counter(),
        principal=principal,
        params=params,
        resolution=resolution,
        task_type=classify(params.request.messages, headers.get("x-service-task-type")),
        labels=RequestLabels.from_headers(headers),
        rule=rule,
    )


def _signals(state: AppState, workspace_id: str) -> RoutingSignals:
    def observed(provider_id: str) -> float | None:
        return state.health.figures(workspace_id, provider_id).latency_ms

    return RoutingSignals(observed_latency_ms=observed)


def _matching_rule(
    state: AppState,
    principal: Principal,
    params: ChatParams,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
) -> Rule | None:
    if params.provider is not None:  # a forced provider bypasses routing, rules included
        return None
    rules = state.rules.enabled(principal.workspace_id)
    if not rules:
        return None
    context = chat_context(state.catalog, principal.key, body, headers, datetime.now(UTC))
    return match_rule(rules, context)


def _header_mode(headers: Mapping[str, str]) -> str | None:
    value = headers.get("x-routing-mode")
    if value is None:
        return None
    if value not in ROUTING_MODES:
        raise invalid_request(
            "'X-Routing-Mode' names no routing mode.", param="X-Routing-Mode", value=value
        )
    return value


async def _admit(state: AppState, trip: Trip) -> Hold:
    """Take the request's share of the key's limits (or wait, with `queue`); 429 if none."""
    return await admit(
        state,
        trip.principal.key,
        trip.params.service,
        prompt_tokens=_prompt_estimate(trip),
        max_tokens=trip.params.request.max_tokens,
    )


# -- the chain -----------------------------------------------------------------------------


def _race(state: AppState, trip: Trip, attempt: Any) -> Race[Candidate, Any]:
    workspace = trip.principal.workspace_id
    targets = fallback_targets(state.catalog, trip, trip.params.service.fallbacks)
    chain = usable(
        targets,
        lambda pid: state.registry.adapter(workspace, pid),
        state.breakers,
        workspace,
        trio.current_time(),
    )
    if not chain:
        error = _unavailable(state, trip)
        _log_failure(state, trip, error)  # admitted, so counted: the log must say so too
        raise error
    service = trip.params.service
    rule_retry = trip.rule.actions.retry if trip.rule else None
    return race(
        chain,
        attempt,
        is_retryable=retryable(service.retryable_errors),
        hedge_delay=hedge_delay(
            state.health,
            workspace,
            _configured_hedge(state, workspace),
            from_latency=state.settings.hedge_from_latency,
        ),
        retry=retry_policy(
            service.retry_max_attempts or (rule_retry.max_attempts if rule_retry else None),
            rule_retry.initial_delay_ms if rule_retry else None,
        ),
    )


def _configured_hedge(state: AppState, workspace: str) -> Any:
    def configured(provider_id: str) -> float | None:
        entry = state.registry.get(workspace, provider_id)
        value = entry.record.settings.get("hedge_after_ms") if entry else None
        return float(value) if isinstance(value, int | float) else None

    return configured


def _unavailable(state: AppState, trip: Trip) -> ApiError:
    return ApiError(
        503,
        "provider_unavailable",
        "Every provider that could serve this request is failing; try again shortly.",
        type="provider_error",
        provider=trip.resolution.target.provider_id,
        status_url="/v1/status",
        retry_after=30,
    )


def _decided(trip: Trip, winner: Winner[Candidate, Any]) -> Trip:
    return attrs.evolve(
        trip,
        served=winner.candidate.target,
        attempts=tuple(attempt_summary(winner.attempts)),
        retries=_retries(winner.attempts),
    )


def _retries(attempts: tuple[Attempt[Candidate], ...]) -> int:
    return sum(1 for a in attempts if a.try_number > 1)


def _race_error(state: AppState, trip: Trip, failed: RaceFailed) -> ApiError:
    """The failure the client sees when no attempt won: the deciding error, plus what
    the chain tried."""
    record_attempts(state, trip.principal.workspace_id, failed.attempts)
    error = failed.error
    if not isinstance(error, ProviderError):
        raise error
    active = state.registry.active_ids(trip.principal.workspace_id)
    mapped = with_fallback_fields(
        from_provider_error(error, available_models=available_models(state.catalog, active)),
        failed,
    )
    trip = attrs.evolve(trip, attempts=tuple(attempt_summary(failed.attempts)))
    _log_failure(state, trip, mapped)
    return mapped


# -- plain answers -------------------------------------------------------------------------


async def _plain(
    state: AppState, trip: Trip, admission: Hold, cache: CachePlan | None
) -> JsonAnswer:
    timeout = state.settings.upstream_timeout_s
    _meter_request(state, trip)
    contest = _race(state, trip, from_call(lambda c: complete(trip, c, timeout)))
    try:
        async with contest as winner:
            result: ChatResult = winner.value
    except RaceFailed as failed:
        raise _race_error(state, trip, failed) from None
    record_attempts(state, trip.principal.workspace_id, winner.attempts)
    trip = _decided(trip, winner)
    accounting = _account(state, trip, _result_usage(trip, result))
    _settle(state, trip, admission, accounting)
    log_usage(state, trip, accounting, status=200, error_code=None)
    if cache is not None and not trip.fell_back:
        state.cache.put(cache.key, attrs.evolve(result, usage=accounting.usage), ttl_s=cache.ttl_s)
    headers = base_headers(trip) | admission.headers() | footprint_headers(accounting)
    return JsonAnswer(200, render.completion_body(trip, result, accounting), headers)


def _result_usage(trip: Trip, result: ChatResult) -> Usage:
    if result.usage.total_tokens:
        return result.usage
    text = (result.content or "") + "".join(c.arguments for c in result.tool_calls)
    return Usage(_prompt_estimate(trip), estimate_tokens(text))


# -- streamed answers ----------------------------------------------------------------------


async def _stream(
    state: AppState, trip: Trip, admission: Hold, cache: CachePlan | None
) -> StreamAnswer:
    """Race the chain to a first content chunk, then hand the open stream to the body.

    The race stays entered until the body exits: exiting it closes the winner's
    upstream. Failures up to the first content fall back invisibly; later ones end the
    stream with an error event (see `ChatStreamBody`).
    """
    timeout = state.settings.first_chunk_timeout_s
    _meter_request(state, trip)
    contest = _race(state, trip, lambda c: open_stream(trip, c, timeout))
    try:
        winner = await contest.__aenter__()
    except RaceFailed as failed:
        raise _race_error(state, trip, failed) from None
    record_attempts(state, trip.principal.workspace_id, winner.attempts)
    trip = _decided(trip, winner)
    opened: Opened = winner.value
    assembler = StreamAssembler(max_chars=state.settings.cache_max_bytes) if cache else None
    body = ChatStreamBody(
        trip,
        contest,
        opened.rest,
        opened.head,
        idle_timeout_s=state.settings.stream_idle_timeout_s,
        accountant=lambda usage, chars: _stream_accounting(state, trip, usage, chars),
        on_finish=lambda outcome: _finish_stream(state, trip, admission, outcome, cache, assembler),
        assembler=assembler,
    )
    return _stream_answer(trip, body, admission)


def _stream_answer(trip: Trip, body: ChatStreamBody, admission: Hold) -> StreamAnswer:
    # Should the body never be entered (the client left before sending began), the
    # slot still comes back when the body is collected; release is idempotent.
    weakref.finalize(body, admission.release)
    return StreamAnswer(body, base_headers(trip) | admission.headers() | STREAM_HEADERS)


def _stream_accounting(state: AppState, trip: Trip, usage: Usage | None, chars: int) -> Accounting:
    if usage is None or not usage.total_tokens:
        usage = Usage(_prompt_estimate(trip), max(0, (chars + 3) // 4))
    return _account(state, trip, usage)


def _finish_stream(
    state: AppState,
    trip: Trip,
    admission: Hold,
    outcome: StreamOutcome,
    cache: CachePlan | None,
    assembler: StreamAssembler | None,
) -> None:
    # The final chunk's figures when the stream finished, so the client and the usage log
    # agree to the digit; otherwise counted now from what was sent.
    accounting = outcome.accounting or _stream_accounting(
        state, trip, outcome.usage, outcome.completion_chars
    )
    _settle(state, trip, admission, accounting)
    admission.release()
    if outcome.state is StreamState.DONE:
        log_usage(state, trip, accounting, status=200, error_code=None)
        _store_stream(state, trip, cache, assembler, accounting)
    elif outcome.error is not None:
        status, code = outcome.error.status, outcome.error.code
        log_usage(state, trip, accounting, status=status, error_code=code)
    else:
        log_usage(state, trip, accounting, status=499, error_code="client_disconnected")


def _store_stream(
    state: AppState,
    trip: Trip,
    cache: CachePlan | None,
    assembler: StreamAssembler | None,
    accounting: Accounting,
) -> None:
    if cache is None or assembler is None or trip.fell_back:
        return  # the key names the routed model; a fallback's answer is not its answer
    result = assembler.result(
        id=trip.request_id, model=trip.target.upstream_model, usage=accounting.usage
    )
    if result is not None:
        state.cache.put(cache.key, result, ttl_s=cache.ttl_s)


# -- cache ---------------------------------------------------------------------------------


def _cache_plan(state: AppState, trip: Trip) -> CachePlan | None:
    settings = state.settings
    rule_cache = trip.rule.actions.cache if trip.rule else None
    decision = decide_cache(
        default_enabled=settings.cache_enabled,
        default_ttl_s=settings.cache_ttl_s,
        rule_enabled=rule_cache.enabled if rule_cache else None,
        rule_ttl_s=float(rule_cache.ttl_seconds) if rule_cache else None,
        skip=trip.params.service.cache_skip,
    )
    if not decision.enabled:
        return None
    key = cache_key(
        workspace_id=trip.principal.workspace_id,
        provider_id=trip.target.provider_id,
        upstream_model=trip.target.upstream_model,
        request=trip.params.request,
    )
    return CachePlan(key, decision.ttl_s)


def _cached(state: AppState, trip: Trip, cache: CachePlan | None) -> ChatResult | None:
    if cache is None:
        return None
    found = state.cache.get(cache.key)
    if found is None:
        state.cache.stats.record_miss(trip.principal.workspace_id, trip.target.model_id)
    return found


async def _answer_from_cache(
    state: AppState, trip: Trip, hit: ChatResult, admission: Hold
) -> JsonAnswer | StreamAnswer:
    """Serve a cached answer: counted as savings, billed nothing, shaped like a live one."""
    trip = attrs.evolve(trip, cache_hit=True)
    full = _account(state, trip, hit.usage)
    state.cache.stats.record_hit(
        trip.principal.workspace_id,
        trip.target.model_id,
        tokens_saved=hit.usage.total_tokens,
        cost_saved_usd=full.cost.total,
    )
    accounting = attrs.evolve(full, cost=CostBreakdown(0.0, 0.0, 0.0), footprint=None)
    if not trip.params.stream:
        with admission:
            admission.settle(0)
            log_usage(state, trip, accounting, status=200, error_code=None)
            answer = render.completion_body(trip, hit, accounting)
            return JsonAnswer(200, answer, base_headers(trip) | admission.headers())
    replay = ReplayStream(hit)
    chunks = await replay.__aenter__()
    body = ChatStreamBody(
        trip,
        replay,
        chunks,
        (),
        idle_timeout_s=state.settings.stream_idle_timeout_s,
        accountant=lambda usage, chars: accounting,
        on_finish=lambda outcome: _finish_hit(state, trip, admission, accounting),
    )
    return _stream_answer(trip, body, admission)


def _finish_hit(state: AppState, trip: Trip, admission: Hold, accounting: Accounting) -> None:
    admission.settle(0)
    admission.release()
    log_usage(state, trip, accounting, status=200, error_code=None)


# -- accounting ----------------------------------------------------------------------------


def base_headers(trip: Trip) -> dict[str, str]:
    headers = {"X-Request-ID": trip.request_id, "X-Service-Model-Used": trip.model_used}
    if trip.params.used_legacy_functions:
        headers.update(DEPRECATION_HEADERS)
    return headers


def elapsed_ms(trip: Trip) -> int:
    return int((time.perf_counter() - trip.started) * 1000)


def _prompt_estimate(trip: Trip) -> int:
    return estimate_prompt_tokens(trip.params.request.messages, trip.params.request.tools)


def _account(state: AppState, trip: Trip, usage: Usage) -> Accounting:
    return account(
        state.catalog,
        trip.target.info,
        usage,
        latency_ms=elapsed_ms(trip),
        task_type=trip.task_type,
    )


def _meter_request(state: AppState, trip: Trip) -> None:
    state.limits.upstream.record_request(trip.principal.workspace_id, trip.target.provider_id)


def _settle(state: AppState, trip: Trip, admission: Hold, accounting: Accounting) -> None:
    """Charge the key the tokens really used (the admission reserved an estimate)."""
    tokens = accounting.usage.total_tokens
    admission.settle(tokens)
    state.limits.upstream.record_tokens(
        trip.principal.workspace_id, trip.target.provider_id, tokens
    )


def _log_failure(state: AppState, trip: Trip, error: ApiError) -> None:
    accounting = _account(state, trip, Usage(0, 0))
    log_usage(state, trip, accounting, status=error.status, error_code=error.code)
