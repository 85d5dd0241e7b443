"""Serving one chat completion: route it, call the upstream under a deadline, answer.

The HTTP layer hands over the authenticated caller, the decoded body and the headers;
this module returns either a JSON answer or a streamed body, and logs one usage record
per request whatever the outcome.
"""

from __future__ import annotations

import contextlib
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any

import attrs
import trio

from gateway.auth import Principal
from gateway.chat import render
from gateway.chat.accounting import (
    Accounting,
    account,
    estimate_prompt_tokens,
    estimate_tokens,
)
from gateway.chat.resolve import available_models, resolve_chat_target
from gateway.chat.stream import (
    CLEANUP_DEADLINE_S,
    ChatStreamBody,
    StreamOutcome,
    StreamState,
)
from gateway.chat.tasks import classify
from gateway.chat.trip import RequestLabels, Trip
from gateway.chat.validation import ROUTING_MODES, ChatParams, parse_chat_body
from gateway.errors import ApiError, from_provider_error, invalid_request
from gateway.limits import Admission
from gateway.state import AppState
from providers.base import Provider
from providers.errors import ProviderError, UpstreamTimeout
from providers.types import ChatChunk, ChatResult, Usage
from store.usage import UsageRecord

DEPRECATION_HEADERS = {
    "Deprecation": "true",
    "X-Service-Deprecation-Warning": (
        "'functions' and 'function_call' are deprecated; they were converted to "
        "'tools' and 'tool_choice'."
    ),
}


@attrs.frozen
class JsonAnswer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


@attrs.frozen
class StreamAnswer:
    body: ChatStreamBody
    headers: dict[str, str]


async def serve_chat(
    state: AppState, principal: Principal, body: Any, headers: Mapping[str, str]
) -> JsonAnswer | StreamAnswer:
    """Answer one chat-completions request (raises `ApiError` for client mistakes)."""
    principal.require("chat")
    trip = plan_trip(state, principal, parse_chat_body(body), headers)
    adapter = state.registry.adapter(principal.workspace_id, trip.target.provider_id)
    if adapter is None:  # resolved against the same registry, so only a race gets here
        raise ApiError(503, "provider_unavailable", "The provider was just disabled.")
    admission = await _admit(state, trip)
    try:
        if trip.params.stream:
            return await _open_stream(state, trip, adapter, admission)
        with admission:
            return await _complete(state, trip, adapter, admission)
    except BaseException:
        admission.release()
        raise


async def _admit(state: AppState, trip: Trip) -> Admission:
    """Take the request's share of the key's limits (or wait, with `queue`); 429 if none."""
    key = trip.principal.key
    estimate = state.limits.estimate(key, _prompt_estimate(trip), trip.params.request.max_tokens)
    service = trip.params.service
    if service.rate_limit_strategy == "queue":
        max_wait_s = (service.max_wait_ms or 0) / 1000
        return await state.limits.wait_for_capacity(key, estimate, max_wait_s)
    return await state.limits.acquire(key, estimate)


def plan_trip(
    state: AppState, principal: Principal, params: ChatParams, headers: Mapping[str, str]
) -> Trip:
    mode = params.routing_mode or _header_mode(headers) or "balanced"
    resolution = resolve_chat_target(
        state.catalog,
        state.registry.active_ids(principal.workspace_id),
        model=params.model,
        provider=params.provider,
        mode=mode,
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
    )


def _header_mode(headers: Mapping[str, str]) -> str | None:
    value = headers.get("x-routing-mode")
    if value is None:
        return None
    if value not in ROUTING_MODES:
        raise invalid_request(
            "'X-Routing-Mode' names no routing mode.", param="X-Routing-Mode", value=value
        )
    return value


def base_headers(trip: Trip) -> dict[str, str]:
    headers = {"X-Request-ID": trip.request_id, "X-Service-Model-Used": trip.model_used}
    if trip.params.used_legacy_functions:
        headers.update(DEPRECATION_HEADERS)
    return headers


def elapsed_ms(trip: Trip) -> int:
    return int((time.perf_counter() - trip.started) * 1000)


# -- non-streamed --------------------------------------------------------------------------


async def _complete(
    state: AppState, trip: Trip, adapter: Provider, admission: Admission
) -> JsonAnswer:
    request = attrs.evolve(trip.params.request, model=trip.target.upstream_model)
    timeout = state.settings.upstream_timeout_s
    _meter_request(state, trip)
    try:
        with trio.fail_after(timeout):
            result = await adapter.chat(request)
    except trio.TooSlowError:
        error = _timeout(trip, timeout)
        _log_failure(state, trip, error)
        raise error from None
    except ProviderError as exc:
        error = _mapped(state, trip, exc)
        _log_failure(state, trip, error)
        raise error from exc
    accounting = _account(state, trip, _result_usage(trip, result))
    _settle(state, trip, admission, accounting)
    _log_success(state, trip, accounting)
    headers = base_headers(trip) | admission.headers() | render.footprint_headers(accounting)
    return JsonAnswer(200, render.completion_body(trip, result, accounting), headers)


def _result_usage(trip: Trip, result: ChatResult) -> Usage:
    if result.usage.total_tokens:
        return result.usage
    text = (result.content or "") + "".join(c.arguments for c in result.tool_calls)
    return Usage(_prompt_estimate(trip), estimate_tokens(text))


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


def _timeout(trip: Trip, seconds: float) -> ApiError:
    return from_provider_error(
        UpstreamTimeout(
            trip.target.provider_id,
            f"The provider did not answer within {seconds:g} s.",
            timeout_ms=int(seconds * 1000),
        )
    )


def _mapped(state: AppState, trip: Trip, exc: ProviderError) -> ApiError:
    active = state.registry.active_ids(trip.principal.workspace_id)
    return from_provider_error(exc, available_models=available_models(state.catalog, active))


# -- streamed ------------------------------------------------------------------------------


async def _open_stream(
    state: AppState, trip: Trip, adapter: Provider, admission: Admission
) -> StreamAnswer:
    """Open the upstream stream and wait for its first chunk before answering.

    From here the body owns the admission: it settles and releases it when the stream
    ends, whichever way.
    """
    request = attrs.evolve(trip.params.request, model=trip.target.upstream_model)
    _meter_request(state, trip)
    upstream = adapter.chat_stream(request)
    timeout = state.settings.first_chunk_timeout_s
    chunks: AsyncIterator[ChatChunk] | None = None
    try:
        with trio.fail_after(timeout):
            chunks = await upstream.__aenter__()
            first = await _first_chunk(chunks)
    except BaseException as exc:
        if chunks is not None:
            await _close_quietly(upstream, chunks)
        error = _stream_start_error(state, trip, exc, timeout)
        if error is None:
            raise
        _log_failure(state, trip, error)
        raise error from None
    body = ChatStreamBody(
        trip,
        upstream,
        chunks,
        first,
        idle_timeout_s=state.settings.stream_idle_timeout_s,
        accountant=lambda usage, chars: _stream_accounting(state, trip, usage, chars),
        on_finish=lambda outcome: _finish_stream(state, trip, admission, outcome),
    )
    # Should the body never be entered (the client left before sending began), the
    # slot still comes back when the body is collected; release is idempotent.
    weakref.finalize(body, admission.release)
    headers = (
        base_headers(trip)
        | admission.headers()
        | {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )
    return StreamAnswer(body, headers)


async def _first_chunk(chunks: AsyncIterator[ChatChunk]) -> ChatChunk | None:
    try:
        chunk = await chunks.__anext__()
    except StopAsyncIteration:
        return None
    return chunk


def _stream_start_error(
    state: AppState, trip: Trip, exc: BaseException, timeout: float
) -> ApiError | None:
    """The HTTP error for a stream that failed before its first chunk (None: re-raise)."""
    if isinstance(exc, trio.TooSlowError):
        return _timeout(trip, timeout)
    if isinstance(exc, ProviderError):
        return _mapped(state, trip, exc)
    return None


async def _close_quietly(
    upstream: AbstractAsyncContextManager[Any], chunks: AsyncIterator[ChatChunk]
) -> None:
    """Close a stream that failed to start; its own error is already being reported."""
    with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
        cleanup.shield = True
        aclose = getattr(chunks, "aclose", None)
        with contextlib.suppress(ProviderError):
            if aclose is not None:
                await aclose()
            await upstream.__aexit__(None, None, None)


def _stream_accounting(state: AppState, trip: Trip, usage: Usage | None, chars: int) -> Accounting:
    if usage is None or not usage.total_tokens:
        usage = Usage(_prompt_estimate(trip), max(0, (chars + 3) // 4))
    return _account(state, trip, usage)


def _finish_stream(
    state: AppState, trip: Trip, admission: Admission, outcome: StreamOutcome
) -> None:
    accounting = _stream_accounting(state, trip, outcome.usage, outcome.completion_chars)
    _settle(state, trip, admission, accounting)
    admission.release()
    if outcome.state is StreamState.DONE:
        _log(state, trip, accounting, status=200, error_code=None)
    elif outcome.error is not None:
        _log(state, trip, accounting, status=outcome.error.status, error_code=outcome.error.code)
    else:
        _log(state, trip, accounting, status=499, error_code="client_disconnected")


def _meter_request(state: AppState, trip: Trip) -> None:
    state.limits.upstream.record_request(trip.principal.workspace_id, trip.target.provider_id)


def _settle(state: AppState, trip: Trip, admission: Admission, accounting: Accounting) -> None:
    """Charge the key the tokens really used (the admission reserved an estimate)."""
    tokens = accounting.usage.total_tokens
    admission.settle(tokens)
    state.limits.upstream.record_tokens(
        trip.principal.workspace_id, trip.target.provider_id, tokens
    )


# -- usage log -----------------------------------------------------------------------------


def _log_success(state: AppState, trip: Trip, accounting: Accounting) -> None:
    _log(state, trip, accounting, status=200, error_code=None)


def _log_failure(state: AppState, trip: Trip, error: ApiError) -> None:
    accounting = _account(state, trip, Usage(0, 0))
    _log(state, trip, accounting, status=error.status, error_code=error.code)


def _log(
    state: AppState, trip: Trip, accounting: Accounting, *, status: int, error_code: str | None
) -> None:
    footprint = accounting.footprint
    if error_code != "client_disconnected" and status not in (400, 403, 404):
        state.health.record(
            trip.principal.workspace_id,
            trip.target.provider_id,
            ok=status < 400,
            latency_ms=accounting.latency_ms,
            error_type=error_code,
        )
    state.usage.submit(
        UsageRecord(
            request_id=trip.request_id,
            key_id=trip.principal.key_id,
            workspace_id=trip.principal.workspace_id,
            model=trip.target.model_id,
            provider=trip.target.provider_id,
            endpoint="chat",
            status=status,
            created_at=datetime.fromtimestamp(trip.created, UTC),
            prompt_tokens=accounting.usage.prompt_tokens,
            completion_tokens=accounting.usage.completion_tokens,
            cost_usd=accounting.cost.total,
            latency_ms=accounting.latency_ms,
            energy_kwh=footprint.energy_kwh if footprint else 0.0,
            carbon_gco2e=footprint.carbon_gco2e if footprint else 0.0,
            error_code=error_code,
            project=trip.labels.project,
            team=trip.labels.team,
            tags=trip.labels.tags,
        )
    )
