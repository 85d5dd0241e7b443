"""Serving one chat completion: plan it, take its share of the limits, answer it from
the cache or through the upstream engine.

`serve_chat` is an answering context (`gateway.platform.body.Answering`): entering it
authenticates nothing (the caller did), validates and plans the request, admits it and
produces the answer; the answer is sent inside the block; leaving it releases everything
the answer held (the key's concurrency slot, the winning upstream stream). A stream's
body is entered by the sender before the response head goes out. Everything is owned by
an `async with` (or a `with`) in this one generator, so a cancellation at any point (the
client went away) closes the upstream and releases the slot, with no finalizer involved.
Every request leaves one usage record whatever its outcome: the engine writes it for
what it served, this module only for a refusal or a cache hit (which no race served).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import attrs

from gateway.chat import render
from gateway.chat.body import ChatStreamBody, StreamOutcome, StreamState
from gateway.chat.cache import StreamAssembler, replayed
from gateway.chat.calls import Opened, complete, open_chat_stream
from gateway.chat.dialect import ChatCompletionFrames, answered
from gateway.chat.file_parts import has_file_ids, with_file_data
from gateway.chat.input import parse_chat_body
from gateway.chat.plan import (
    CachePlan,
    cache_plan,
    chain_plan,
    plan_trip,
    prompt_estimate,
)
from gateway.chat.services import ChatServices
from gateway.chat.trip import Trip
from gateway.kernels.dialects import Dialect, Frames
from gateway.platform.auth import Principal
from gateway.platform.body import Answer, StreamAnswer
from gateway.platform.errors import ApiError
from gateway.platform.jsonio import JsonAnswer
from gateway.upstream.accounting import Accounting, billed_nothing, estimate_tokens
from gateway.upstream.bodies import BodyCapture
from gateway.upstream.deprecation import warn_if_deprecated
from gateway.upstream.endpoints import CHAT_COMPLETIONS, refuse_off_endpoint
from gateway.upstream.engine import Served
from gateway.upstream.facts import RequestFacts, identified, new_facts
from gateway.upstream.footprint_render import footprint_headers
from gateway.upstream.limits import Hold
from gateway.upstream.usage import unplanned
from providers.base import Provider
from providers.errors import ProviderError
from providers.types import ChatResult, Usage

DEPRECATION_HEADERS = {
    "Deprecation": "true",
    "X-Service-Deprecation-Warning": (
        "'functions' and 'function_call' are deprecated; they were converted to "
        "'tools' and 'tool_choice'."
    ),
}
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@asynccontextmanager
async def serve_chat(
    chat: ChatServices,
    principal: Principal,
    body: Any,
    headers: Mapping[str, str],
    dialect: Dialect | None = None,
) -> AsyncIterator[Answer]:
    """`async with serve_chat(chat, principal, body, headers) as answer:` (raises
    `ApiError` on entry for client mistakes and upstream failures; see the module
    docstring). `dialect`, another front door's (`gateway.kernels.dialects`), reads the
    body and says the answer; chat-completions without one."""
    principal.require("chat")
    facts = new_facts("chat", principal, headers)
    facts.asked_for(body.get("model") if isinstance(body, dict) else None)  # `auto` too
    if chat.bodies.keeps(principal.workspace_id):  # the request log keeps the bodies
        facts.trail.body = BodyCapture(body)
    with identified(facts):
        trip = await _planned(
            chat, principal, facts, body, headers, dialect
        )  # its facts keep the cache key
        cache = cache_plan(chat, trip)
        with await _admit(chat, trip) as hold:  # the slot comes back when the answer is done
            hit = await _cached(chat, trip, cache)
            if hit is not None:
                yield _from_cache(chat, trip, hit, hold, dialect)
            elif trip.params.stream:
                async with _streamed(chat, trip, hold, cache, dialect) as answer:
                    yield answer
            else:
                yield await _plain(chat, trip, hold, cache, dialect)


async def _planned(
    chat: ChatServices,
    principal: Principal,
    facts: RequestFacts,
    body: Any,
    headers: Mapping[str, str],
    dialect: Dialect | None,
) -> Trip:
    try:
        chat_body = body if dialect is None else dialect.chat_body(body)
        params = parse_chat_body(chat_body)
        door = CHAT_COMPLETIONS if dialect is None else dialect.endpoint
        refuse_off_endpoint(chat.engine.catalog, params.model, door)
        if dialect is not None:
            kept = dialect.truncation()
            if kept is not None:
                params = attrs.evolve(params, kept_on_truncation=kept)
        if has_file_ids(params.request.messages):  # the gateway's own files, read inline
            messages = await with_file_data(params.request.messages, principal, chat.attachments)
            params = attrs.evolve(params, request=attrs.evolve(params.request, messages=messages))
        return plan_trip(chat, facts, params, headers, chat_body, keyed=True)
    except ApiError as error:  # refused before planning (its body, its model): recorded
        model = body.get("model") if isinstance(body, dict) else None
        chat.engine.usage.refusal(facts, unplanned(model), error)
        raise


async def _admit(chat: ChatServices, trip: Trip) -> Hold:
    """Take the request's share of the key's limits (or wait, with `queue`); 429 if none
    (and the refusal is recorded, so analytics count rate-limit hits)."""
    try:
        return await chat.admission.admit(
            trip.principal,
            trip.params.service,
            prompt_tokens=prompt_estimate(trip),
            max_tokens=trip.params.request.max_tokens,
            plan=lambda: chain_plan(chat, trip),
        )
    except ApiError as error:
        if error.status == 429:
            chat.engine.usage.refusal(trip.facts, trip.target, error)
        raise


def _decided(trip: Trip, served: Served[Any]) -> Trip:
    return trip.decided(served.target, served.attempts, served.retries)


# -- plain answers -------------------------------------------------------------------------


async def _plain(
    chat: ChatServices, trip: Trip, hold: Hold, cache: CachePlan | None, dialect: Dialect | None
) -> JsonAnswer:
    async def operation(adapter: Provider, target: Any) -> ChatResult:
        return await complete(trip, adapter, target)

    served = await chat.engine.call(
        trip.facts,
        chain_plan(chat, trip),
        operation,
        hold=hold,
        timeout_s=chat.settings.upstream_timeout_s,
        meter=lambda result: _result_usage(trip, result),
    )
    trip = _decided(trip, served)
    result, accounting = served.value, served.accounting
    if cache is not None and not trip.fell_back:
        _keep(chat, cache, attrs.evolve(result, usage=accounting.usage))
    headers = base_headers(trip) | hold.headers() | footprint_headers(accounting)
    return JsonAnswer(200, _whole(dialect, trip, result, accounting), headers)


def _whole(dialect: Dialect | None, trip: Trip, result: ChatResult, accounting: Accounting) -> Any:
    """A whole answer's body, in the dialect's shape."""
    if dialect is None:
        return render.completion_body(trip, result, accounting)
    return dialect.answer(answered(trip), result, accounting)


def _frames(dialect: Dialect | None, trip: Trip) -> Frames:
    """A stream's frames, in the dialect's shape."""
    if dialect is None:
        return ChatCompletionFrames(trip)
    return dialect.frames(answered(trip))


def _result_usage(trip: Trip, result: ChatResult) -> Usage:
    """What the answer used (and, for the request log, the answer to keep)."""
    _capture(trip, lambda: _answer_body(result))
    if result.usage.total_tokens:
        return result.usage
    text = "".join(
        (choice.content or "") + "".join(c.arguments for c in choice.tool_calls)
        for choice in result.choices
    )
    return Usage(prompt_estimate(trip), estimate_tokens(text))


# -- streamed answers ----------------------------------------------------------------------


@asynccontextmanager
async def _streamed(
    chat: ChatServices, trip: Trip, hold: Hold, cache: CachePlan | None, dialect: Dialect | None
) -> AsyncIterator[StreamAnswer]:
    """Race the chain to a first content chunk; the winner stays open for the block and
    the body relays the rest.

    Failures up to the first content fall back invisibly; later ones end the stream with
    an error event (see `ChatStreamBody`), which the engine maps and records.
    """

    def opener(adapter: Provider, target: Any) -> Any:
        return open_chat_stream(trip, adapter, target)

    opening = chat.engine.open_stream(
        trip.facts,
        chain_plan(chat, trip),
        opener,
        hold=hold,
        timeout_s=chat.settings.first_chunk_timeout_s,
    )
    async with opening as stream:
        trip = _decided(trip, stream.served)
        opened: Opened = stream.value
        captured = trip.facts.trail.body is not None
        assembler = (
            StreamAssembler(max_chars=chat.settings.cache_max_bytes) if cache or captured else None
        )
        if assembler is not None and captured:
            _capture(trip, lambda: _assembled(trip, assembler))
        body = ChatStreamBody(
            trip,
            opened.rest,
            opened.head,
            idle_timeout_s=chat.settings.stream_idle_timeout_s,
            tab=stream,
            measure=lambda usage, chars: _stream_usage(trip, usage, chars),
            on_finish=lambda outcome: _store_stream(chat, trip, cache, assembler, outcome),
            assembler=assembler,
            frames=_frames(dialect, trip),
        )
        try:
            yield StreamAnswer(body, base_headers(trip) | hold.headers() | STREAM_HEADERS)
        finally:
            body.report()  # a body never entered still says what it sent (nothing)


def _stream_usage(trip: Trip, usage: Usage | None, chars: int) -> Usage:
    """The final chunk's figures when the stream finished, so the client and the usage
    log agree to the digit; otherwise counted from what was sent."""
    if usage is None or not usage.total_tokens:
        return Usage(prompt_estimate(trip), max(0, (chars + 3) // 4))
    return usage


def _store_stream(
    chat: ChatServices,
    trip: Trip,
    cache: CachePlan | None,
    assembler: StreamAssembler | None,
    outcome: StreamOutcome,
) -> None:
    if outcome.state is not StreamState.DONE or outcome.accounting is None:
        return
    if cache is None or assembler is None or trip.fell_back:
        return  # the key names the routed model; a fallback's answer is not its answer
    result = assembler.result(
        id=trip.request_id, model=trip.target.upstream_model, usage=outcome.accounting.usage
    )
    if result is not None:
        _keep(chat, cache, result)


def _capture(trip: Trip, answer: Callable[[], Any]) -> None:
    """The answer's reader, for the request log of a workspace that keeps bodies."""
    capture = trip.facts.trail.body
    if capture is not None:
        capture.answer = answer


def _answer_body(result: ChatResult) -> dict[str, Any]:
    return {
        "content": result.content,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.tool_calls
        ],
        "finish_reason": result.finish_reason,
    }


def _assembled(trip: Trip, assembler: StreamAssembler) -> dict[str, Any] | None:
    result = assembler.result(id=trip.request_id, model=trip.target.upstream_model)
    return None if result is None else _answer_body(result)


def _keep(chat: ChatServices, cache: CachePlan, result: ChatResult) -> None:
    """Cache an answer in this process, or (several workers) queue it for the shared
    server without waiting."""
    shared = chat.shared_cache
    (chat.cache if shared is None else shared).put(cache.key, result, ttl_s=cache.ttl_s)


# -- cache ---------------------------------------------------------------------------------


async def _cached(chat: ChatServices, trip: Trip, cache: CachePlan | None) -> ChatResult | None:
    """A cache lookup's result (from this process, or from the shared server, where an
    error or a slow answer is a miss), its miss counted."""
    if cache is None:
        return None
    shared = chat.shared_cache  # one attribute check more without a shared server
    found = chat.cache.get(cache.key) if shared is None else await shared.get(cache.key)
    if found is None:
        chat.cache.stats.record_miss(trip.principal.workspace_id, trip.target.model_id)
    return found


def _from_cache(
    chat: ChatServices, trip: Trip, hit: ChatResult, hold: Hold, dialect: Dialect | None
) -> Answer:
    """Serve a cached answer: counted as savings, billed nothing, shaped like a live one.
    No race served it, so its record is written here, through the engine, at once."""
    trip = attrs.evolve(trip, cache_hit=True)
    full = chat.engine.served_from_cache(trip.facts, trip.target, hold, hit.usage)
    chat.cache.stats.record_hit(
        trip.principal.workspace_id,
        trip.target.model_id,
        tokens_saved=hit.usage.total_tokens,
        cost_saved_usd=full.cost.total,
    )
    accounting = billed_nothing(full)
    if not trip.params.stream:
        answer = _whole(dialect, trip, hit, accounting)
        # zero, as its `_gateway.energy`: the spec's footprint headers are on every answer
        headers = base_headers(trip) | hold.headers() | footprint_headers(accounting)
        return JsonAnswer(200, answer, headers)
    body = ChatStreamBody(
        trip,
        replayed(hit),
        (),
        idle_timeout_s=chat.settings.stream_idle_timeout_s,
        tab=_Replayed(accounting),
        measure=lambda usage, chars: accounting.usage,
        frames=_frames(dialect, trip),
    )
    return StreamAnswer(body, base_headers(trip) | hold.headers() | STREAM_HEADERS)


@attrs.define
class _Replayed:
    """The tab of a cached answer replayed as a stream: already recorded, billed nothing."""

    accounting: Accounting
    metered: Usage = attrs.field(factory=Usage)

    def finished(self, usage: Usage) -> Accounting:
        return self.accounting

    def failed(self, error: ProviderError) -> ApiError:  # a replay does not fail
        raise AssertionError("a cached answer's replay failed") from error


# -- headers -------------------------------------------------------------------------------


def base_headers(trip: Trip) -> dict[str, str]:
    headers = {"X-Request-ID": trip.request_id, "X-Service-Model-Used": trip.model_used}
    trace_id = trip.facts.labels.trace_id
    if trace_id is not None:  # echoed, so a client's own tracing can match the answer
        headers["X-Service-Trace-Id"] = trace_id
    if trip.params.used_legacy_functions:
        headers.update(DEPRECATION_HEADERS)
    warn_if_deprecated(headers, trip.target.info)
    return headers
