"""The upstream attempts of one chat request: the chain, each try, and its rules.

The chain is the routed target followed by its fallbacks (from a routing rule, the
request's `service.fallbacks`, or the model's catalog chain), keeping only providers
that are active and whose circuit lets requests through. `streams.race` runs it: a
retryable failure moves on (after the retry policy); a hedge delay starts the next
candidate alongside a silent one; the first to produce a first result wins.

An attempt's first result is, for a plain call, the whole answer; for a stream, the
chunks up to and including the first one that carries content, a tool call or the
finish: a stream that fails before that falls back without the client noticing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

import attrs
import trio

from gateway.chat.trip import Trip
from gateway.upstream.chain import Candidate, deadline_exceeded
from gateway.upstream.health import HealthBook
from gateway.upstream.resolve import Target, target_of
from providers.catalog import Catalog
from providers.types import ChatChunk, ChatRequest, ChatResult
from streams.fallback import RetryPolicy

HEDGE_FLOOR_S = 0.25
HEDGE_CEILING_S = 10.0
HEDGE_MIN_SAMPLES = 20


@attrs.frozen
class Opened:
    """A stream that has produced its first result: the chunks so far and the rest."""

    head: tuple[ChatChunk, ...]
    rest: AsyncIterator[ChatChunk]


def fallback_targets(catalog: Catalog, trip: Trip, explicit: Sequence[str]) -> list[Target]:
    """The routed target, then `explicit` fallbacks (rule or request), else the catalog's
    chain for the model (or, for `auto`, the other candidates it was chosen among)."""
    chain = [trip.resolution.target]
    if trip.params.provider is not None:  # a forced provider bypasses routing entirely
        return chain
    if explicit:
        chain += [target_of(m) for m in (catalog.model(i) for i in explicit) if m is not None]
    else:
        chain += list(trip.resolution.alternatives)
    unique: dict[tuple[str, str], Target] = {}
    for target in chain:
        unique.setdefault((target.provider_id, target.upstream_model), target)
    return list(unique.values())


def retry_policy(max_attempts: int | None, initial_delay_ms: int | None) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=max(1, max_attempts or 1),
        initial_delay=(initial_delay_ms if initial_delay_ms is not None else 100) / 1000,
        max_delay=5.0,
    )


def hedge_delay(
    health: HealthBook,
    workspace_id: str,
    configured_ms: Callable[[str], float | None],
    *,
    from_latency: bool,
) -> Callable[[Candidate], float | None]:
    """When to start the next candidate beside a silent one: the provider's configured
    `hedge_after_ms`, else (with `from_latency`) twice its observed p95 time to first
    result (within bounds, once enough requests were seen), else never."""

    def delay(candidate: Candidate) -> float | None:
        provider_id = candidate.target.provider_id
        configured = configured_ms(provider_id)
        if configured is not None:
            return configured / 1000
        if not from_latency:
            return None
        p95 = health.first_result_p95_ms(workspace_id, provider_id, HEDGE_MIN_SAMPLES)
        if p95 is None:
            return None
        return min(HEDGE_CEILING_S, max(HEDGE_FLOOR_S, 2 * p95 / 1000))

    return delay


def request_for(trip: Trip, target: Target) -> ChatRequest:
    return attrs.evolve(trip.params.request, model=target.upstream_model)


async def complete(trip: Trip, candidate: Candidate, timeout_s: float) -> ChatResult:
    """One whole call under its deadline; running out is a retryable `UpstreamTimeout`."""
    try:
        with trio.fail_after(timeout_s):
            return await candidate.adapter.chat(request_for(trip, candidate.target))
    except trio.TooSlowError:
        raise deadline_exceeded(candidate.target.provider_id, timeout_s) from None


@asynccontextmanager
async def open_stream(trip: Trip, candidate: Candidate, timeout_s: float) -> AsyncIterator[Opened]:
    """Open the candidate's stream and read up to its first content, both within
    `timeout_s`: an upstream that never sends its answer's head is as late as one that
    sends no chunk. Running out is a retryable `UpstreamTimeout`. Closes on exit."""
    async with AsyncExitStack() as stack:
        try:
            with trio.fail_after(timeout_s):
                chunks = await stack.enter_async_context(
                    candidate.adapter.chat_stream(request_for(trip, candidate.target))
                )
                head = await _read_head(chunks)
        except trio.TooSlowError:
            raise deadline_exceeded(candidate.target.provider_id, timeout_s) from None
        yield Opened(head, chunks)


async def _read_head(chunks: AsyncIterator[ChatChunk]) -> tuple[ChatChunk, ...]:
    head: list[ChatChunk] = []
    async for chunk in chunks:
        head.append(chunk)
        if chunk.content or chunk.tool_calls or chunk.finish_reason:
            break
    return tuple(head)
