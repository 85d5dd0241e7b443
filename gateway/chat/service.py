"""Serving one chat completion: plan it, take its share of the limits, answer it from
the cache or through the upstream engine, and account for it.

`serve_chat` is an async context manager: entering it authenticates nothing (the caller
did), validates and plans the request, admits it and produces the answer; the answer is
sent inside the block; leaving it releases everything the answer held (the key's
concurrency slot, the winning upstream stream). A stream's body is entered by the sender
before the response head goes out. Nothing is acquired outside an `async with`, so a
cancellation at any point (the client went away) closes the upstream and releases the
slot, with no finalizer involved. Every request leaves one usage record whatever its
outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from email.utils import format_datetime
from types import TracebackType
from typing import Any

import attrs

from gateway.chat.body import ChatStreamBody, StreamOutcome, StreamState
from gateway.chat.cache import ReplayStream, StreamAssembler
from gateway.chat.calls import OpenChatStream, Opened, complete
from gateway.chat.dialect import CHAT, Dialect
from gateway.chat.plan import (
    CachePlan,
    cache_plan,
    chain_plan,
    plan_trip,
    prompt_estimate,
    prompt_key,
)
from gateway.chat.trip import Trip
from gateway.platform.auth import Principal
from gateway.platform.body import Answer, StreamAnswer
from gateway.platform.errors import ApiError
from gateway.platform.jsonio import JsonAnswer
from gateway.platform.state import AppState
from gateway.upstream.accounting import Accounting, account, estimate_tokens
from gateway.upstream.admission import admit, settle
from gateway.upstream.engine import Served, call, open_stream
from gateway.upstream.facts import RequestFacts, identified, new_facts
from gateway.upstream.footprint_render import footprint_headers
from gateway.upstream.limits import Hold
from gateway.upstream.usage import record_refusal, record_usage, unplanned
from providers.catalog import CostBreakdown, Deprecation
from providers.types import ChatResult, Usage

DEPRECATION_HEADERS = {
    "Deprecation": "true",
    "X-Service-Deprecation-Warning": (
        "'functions' and 'function_call' are deprecated; they were converted to "
        "'tools' and 'tool_choice'."
    ),
}
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def serve_chat(
    state: AppState,
    principal: Principal,
    body: Any,
    headers: Mapping[str, str],
    dialect: Dialect = CHAT,
) -> ChatAnswering:
    """`async with serve_chat(state, principal, body, headers) as answer:` (raises
    `ApiError` on entry for client mistakes and upstream failures). `dialect` reads the
    body and renders the answer (`gateway.chat.dialect`): chat-completions by default."""
    return ChatAnswering(state, principal, body, headers, dialect)


class ChatAnswering:
    """The answering context of one chat request (see the module docstring)."""

    def __init__(
        self,
        state: AppState,
        principal: Principal,
        body: Any,
        headers: Mapping[str, str],
        dialect: Dialect,
    ) -> None:
        self._state, self._principal, self._body, self._headers = state, principal, body, headers
        self._dialect = dialect
        self._held = AsyncExitStack()

    async def __aenter__(self) -> Answer:
        async with AsyncExitStack() as stack:
            answer = await self._answer(stack)
            self._held = stack.pop_all()  # a failure before here released everything
        return answer

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._held.__aexit__(exc_type, exc, tb)

    async def _answer(self, stack: AsyncExitStack) -> Answer:
        self._principal.require("chat")
        facts = new_facts("chat", self._principal, self._headers)
        with identified(facts):
            return await self._answer_with(stack, facts)

    async def _answer_with(self, stack: AsyncExitStack, facts: RequestFacts) -> Answer:
        state, dialect = self._state, self._dialect
        try:
            parsed = dialect.parse(self._body)
            trip = plan_trip(state, facts, parsed.params, self._headers, parsed.rule_body)
        except ApiError as error:  # refused before planning (its body, its model): recorded
            model = self._body.get("model") if isinstance(self._body, dict) else None
            record_refusal(state, facts, unplanned(model), error)
            raise
        cache = cache_plan(state, trip)
        trip = attrs.evolve(trip, prompt_hash=cache.key if cache else prompt_key(trip))
        hold = await _admit(state, trip)
        stack.enter_context(hold)  # the concurrency slot comes back when the answer is done
        hit = None
        if cache is not None:  # one attribute check more without a shared server
            shared = state.shared_cache
            found = state.cache.get(cache.key) if shared is None else await shared.get(cache.key)
            hit = _counted(state, trip, found)
        if hit is not None:
            return await _answer_from_cache(state, dialect, trip, hit, hold, stack)
        if trip.params.stream:
            return await _stream(state, dialect, trip, hold, cache, stack)
        return await _plain(state, dialect, trip, hold, cache)


async def _admit(state: AppState, trip: Trip) -> Hold:
    """Take the request's share of the key's limits (or wait, with `queue`); 429 if none
    (and the refusal is recorded, so analytics count rate-limit hits)."""
    try:
        return await admit(
            state,
            trip.principal,
            trip.params.service,
            prompt_tokens=prompt_estimate(trip),
            max_tokens=trip.params.request.max_tokens,
            plan=lambda: chain_plan(state, trip),
        )
    except ApiError as error:
        if error.status == 429:
            record_refusal(state, trip.facts, trip.target, error)
        raise


def _decided(trip: Trip, served: Served[Any]) -> Trip:
    return attrs.evolve(
        trip, served=served.target, attempts=served.attempts, retries=served.retries
    )


# -- plain answers -------------------------------------------------------------------------


async def _plain(
    state: AppState, dialect: Dialect, trip: Trip, hold: Hold, cache: CachePlan | None
) -> JsonAnswer:
    async def operation(adapter: Any, target: Any) -> ChatResult:
        return await complete(trip, adapter, target)

    plan = chain_plan(state, trip)
    served = await call(
        state, trip.facts, plan, operation, timeout_s=state.settings.upstream_timeout_s
    )
    trip = _decided(trip, served)
    result = served.value
    accounting = _account(state, trip, _result_usage(trip, result))
    settle(state, trip.facts, trip.target, hold, accounting.usage)
    _record(state, trip, accounting, status=200)
    if cache is not None and not trip.fell_back:
        _keep(state, cache, attrs.evolve(result, usage=accounting.usage))
    headers = base_headers(trip) | hold.headers() | footprint_headers(accounting)
    return JsonAnswer(200, dialect.answer(trip, result, accounting), headers)


def _result_usage(trip: Trip, result: ChatResult) -> Usage:
    if result.usage.total_tokens:
        return result.usage
    text = (result.content or "") + "".join(c.arguments for c in result.tool_calls)
    return Usage(prompt_estimate(trip), estimate_tokens(text))


# -- streamed answers ----------------------------------------------------------------------


async def _stream(
    state: AppState,
    dialect: Dialect,
    trip: Trip,
    hold: Hold,
    cache: CachePlan | None,
    stack: AsyncExitStack,
) -> StreamAnswer:
    """Race the chain to a first content chunk; the winner stays open in `stack` (the
    answering context) and the body relays the rest.

    Failures up to the first content fall back invisibly; later ones end the stream with
    an error event (see `ChatStreamBody`).
    """

    def opener(adapter: Any, target: Any) -> OpenChatStream:
        return OpenChatStream(trip, adapter, target)

    plan = chain_plan(state, trip)
    opening = open_stream(
        state, trip.facts, plan, opener, timeout_s=state.settings.first_chunk_timeout_s
    )
    served = await stack.enter_async_context(opening)
    trip = _decided(trip, served)
    opened: Opened = served.value
    assembler = StreamAssembler(max_chars=state.settings.cache_max_bytes) if cache else None
    body = ChatStreamBody(
        trip,
        opened.rest,
        opened.head,
        idle_timeout_s=state.settings.stream_idle_timeout_s,
        accountant=lambda usage, chars: _stream_accounting(state, trip, usage, chars),
        on_finish=lambda outcome: _finish_stream(state, trip, hold, outcome, cache, assembler),
        assembler=assembler,
        frames=dialect.frames(trip),
    )
    stack.callback(body.report)  # a body never entered still leaves its record
    return StreamAnswer(body, base_headers(trip) | hold.headers() | STREAM_HEADERS)


def _stream_accounting(state: AppState, trip: Trip, usage: Usage | None, chars: int) -> Accounting:
    if usage is None or not usage.total_tokens:
        usage = Usage(prompt_estimate(trip), max(0, (chars + 3) // 4))
    return _account(state, trip, usage)


def _finish_stream(
    state: AppState,
    trip: Trip,
    hold: Hold,
    outcome: StreamOutcome,
    cache: CachePlan | None,
    assembler: StreamAssembler | None,
) -> None:
    # The final chunk's figures when the stream finished, so the client and the usage log
    # agree to the digit; otherwise counted now from what was sent.
    accounting = outcome.accounting or _stream_accounting(
        state, trip, outcome.usage, outcome.completion_chars
    )
    settle(state, trip.facts, trip.target, hold, accounting.usage)
    hold.release()
    if outcome.state is StreamState.DONE:
        _record(state, trip, accounting, status=200)
        _store_stream(state, trip, cache, assembler, accounting)
    elif outcome.error is not None:
        _record(state, trip, accounting, status=outcome.error.status, code=outcome.error.code)
    else:
        _record(state, trip, accounting, status=499, code="client_disconnected")


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
        _keep(state, cache, result)


def _keep(state: AppState, cache: CachePlan, result: ChatResult) -> None:
    """Cache an answer in this process, or (several workers) queue it for the shared
    server without waiting."""
    shared = state.shared_cache
    (state.cache if shared is None else shared).put(cache.key, result, ttl_s=cache.ttl_s)


# -- cache ---------------------------------------------------------------------------------


def _counted(state: AppState, trip: Trip, found: ChatResult | None) -> ChatResult | None:
    """A cache lookup's result (from this process, or from the shared server, where an
    error or a slow answer is a miss), its miss counted."""
    if found is None:
        state.cache.stats.record_miss(trip.principal.workspace_id, trip.target.model_id)
    return found


async def _answer_from_cache(
    state: AppState,
    dialect: Dialect,
    trip: Trip,
    hit: ChatResult,
    hold: Hold,
    stack: AsyncExitStack,
) -> Answer:
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
        _finish_hit(state, trip, hold, accounting, saved_usd=full.cost.total)
        answer = dialect.answer(trip, hit, accounting)
        # zero, as its `_gateway.energy`: the spec's footprint headers are on every answer
        headers = base_headers(trip) | hold.headers() | footprint_headers(accounting)
        return JsonAnswer(200, answer, headers)
    chunks = await stack.enter_async_context(ReplayStream(hit))
    body = ChatStreamBody(
        trip,
        chunks,
        (),
        idle_timeout_s=state.settings.stream_idle_timeout_s,
        accountant=lambda usage, chars: accounting,
        on_finish=lambda outcome: _finish_hit(
            state, trip, hold, accounting, saved_usd=full.cost.total
        ),
        frames=dialect.frames(trip),
    )
    stack.callback(body.report)
    return StreamAnswer(body, base_headers(trip) | hold.headers() | STREAM_HEADERS)


def _finish_hit(
    state: AppState, trip: Trip, hold: Hold, accounting: Accounting, *, saved_usd: float
) -> None:
    hold.settle(Usage())
    hold.release()
    _record(state, trip, accounting, status=200, saved_usd=saved_usd)


# -- accounting ----------------------------------------------------------------------------


def base_headers(trip: Trip) -> dict[str, str]:
    headers = {"X-Request-ID": trip.request_id, "X-Service-Model-Used": trip.model_used}
    trace_id = trip.facts.labels.trace_id
    if trace_id is not None:  # echoed, so a client's own tracing can match the answer
        headers["X-Service-Trace-Id"] = trace_id
    if trip.params.used_legacy_functions:
        headers.update(DEPRECATION_HEADERS)
    info = trip.target.info
    if info is not None and info.deprecation is not None:
        _warn_deprecated_model(headers, info.id, info.deprecation)
    return headers


def _warn_deprecated_model(headers: dict[str, str], model: str, facts: Deprecation) -> None:
    """A deprecated model's answer says so (the catalog's lifecycle facts, which
    `/v1/models` shows), with its sunset date (RFC 8594 `Sunset`) and replacement, so a
    client learns it from the answers it already reads."""
    warning = (
        f"The model '{model}' is deprecated (sunset {facts.sunset_date}); use "
        f"'{facts.replacement}' ({facts.migration_guide})."
    )
    previous = headers.get("X-Service-Deprecation-Warning")
    headers["Deprecation"] = "true"
    headers["X-Service-Deprecation-Warning"] = f"{previous} {warning}" if previous else warning
    sunset = _http_date(facts.sunset_date)
    if sunset is not None:
        headers["Sunset"] = sunset


def _http_date(day: str) -> str | None:
    try:
        moment = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return None
    return format_datetime(moment, usegmt=True)


def _account(state: AppState, trip: Trip, usage: Usage) -> Accounting:
    return account(
        state.catalog,
        trip.target.info,
        usage,
        latency_ms=trip.facts.elapsed_ms(),
        task_type=trip.task_type,
    )


def _record(
    state: AppState,
    trip: Trip,
    accounting: Accounting,
    *,
    status: int,
    code: str | None = None,
    saved_usd: float = 0.0,
) -> None:
    record_usage(
        state,
        trip.facts,
        trip.target,
        accounting,
        status=status,
        error_code=code,
        cache_hit=trip.cache_hit,
        prompt_hash=trip.prompt_hash,
        cache_savings_usd=saved_usd,
    )
