"""The one upstream engine every endpoint family calls: race a plan, account for the call.

A family validates its input, plans its candidates (`Engine.plan_named`, or
`gateway.upstream.plan.plan_of` over targets it chose), admits the request
(`gateway.upstream.admission`) and hands the engine one operation: `call` for an answer
that arrives whole, `open_stream` for one that streams. The engine keeps the candidates
whose provider is active and whose circuit lets requests through (none: 503
`provider_unavailable`), races them through `streams.race` with the caller's deadline per
attempt, the plan's retries and the provider's hedge delay, feeds every attempt into
provider health and the breakers, and maps the deciding failure to the spec's error with
the chain's fallback fields.

The engine owns the whole call, so no family writes a usage record or settles limits for
an answer it served: the family says what was metered (`call`'s `meter`, or the stream's
`finished`), and the engine prices it, settles the request's hold with it and writes the
one usage record; a failure (no candidate, every attempt failed, the client went away,
a stream that broke after its head) is recorded here too. An answer that did not come
from a race (a cache hit, a local engine) is accounted the same way through `served`.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence, Set
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Generic, TypeVar

import attrs
import trio

from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, from_provider_error
from gateway.platform.tracing import Tracing
from gateway.upstream.accounting import Accounting, account, billed_nothing
from gateway.upstream.admission import PolicyBound
from gateway.upstream.chain import (
    Candidate,
    attempt_summary,
    deadline_exceeded,
    retryable,
    span_ms,
    usable,
    with_fallback_fields,
)
from gateway.upstream.circuit import BreakerBook
from gateway.upstream.facts import RequestFacts
from gateway.upstream.health import HealthBook
from gateway.upstream.limits import Hold, UpstreamMeter
from gateway.upstream.options import ServiceOptions
from gateway.upstream.outcomes import (
    FirstResultObserver,
    RaceBook,
    deciding,
    log_race,
    start_trail,
    unavailable,
)
from gateway.upstream.plan import Plan, hedge_delay, plan_named
from gateway.upstream.registry import ProviderRegistry
from gateway.upstream.resolve import Target, available_models
from gateway.upstream.served import CLIENT_LEFT, Called, Served, Streaming
from gateway.upstream.shared_breakers import SharedBreakers
from gateway.upstream.usage import UsageLog
from providers.base import Provider
from providers.catalog import Catalog
from providers.errors import ProviderError
from providers.types import Usage
from streams.fallback import Attempt, Outcome, RaceFailed
from streams.held import Held, background, hold_open
from streams.race import Winner, race

T = TypeVar("T")
S = TypeVar("S")
Operation = Callable[[Provider, Target], Awaitable[T]]
Opener = Callable[[Provider, Target], AbstractAsyncContextManager[S]]
# What the families import from here (the split's modules hold them).
__all__ = ["Called", "Engine", "FirstResultObserver", "Served", "Streaming", "unavailable"]


@attrs.define(eq=False)
class Engine:
    """The engine, built once by the composition root with the services it needs.

    `on_first_result` are the observers of each winning attempt's time to its first result
    (provider, milliseconds), plugged in by the root (the metrics); none by default.

    Each call's trail (`RequestFacts.trail`) gets the race's attempts, offsets from the
    request's arrival and the time to the first result, for its usage record and the
    request log.
    """

    catalog: Catalog
    registry: ProviderRegistry
    breakers: BreakerBook
    health: HealthBook
    upstream: UpstreamMeter
    usage: UsageLog
    hedge_from_latency: bool = False
    shared_breakers: SharedBreakers | None = None
    on_first_result: tuple[FirstResultObserver, ...] = ()
    # OpenTelemetry (`gateway.platform.tracing`): a span per attempt, its id sent upstream
    # in `traceparent`. None (tracing off): no span is made.
    tracing: Tracing | None = None
    book: RaceBook = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.book = RaceBook(self.breakers, self.health, self.shared_breakers, self.on_first_result)

    # -- planning ------------------------------------------------------------------------

    def active(self, workspace_id: str) -> Set[str]:
        """The providers the workspace may call now."""
        return self.registry.active_ids(workspace_id)

    def plan_named(
        self,
        principal: Principal,
        *,
        model: str,
        provider: str | None,
        fallbacks: Sequence[str],
        capability: str,
        service: ServiceOptions,
        catalog_fallbacks: bool = True,
    ) -> Plan:
        """`gateway.upstream.plan.plan_named` over this engine's catalog and providers."""
        return plan_named(
            self.catalog,
            self.active(principal.workspace_id),
            principal,
            model=model,
            provider=provider,
            fallbacks=fallbacks,
            capability=capability,
            service=service,
            catalog_fallbacks=catalog_fallbacks,
        )

    # -- calls -------------------------------------------------------------------------

    async def call(
        self,
        facts: RequestFacts,
        plan: Plan,
        operation: Operation[T],
        *,
        hold: Hold | None,
        timeout_s: float,
        meter: Callable[[T], Usage],
    ) -> Called[T]:
        """Race the plan until one candidate's `operation` returns; each attempt has
        `timeout_s` (running out is a retryable `provider_timeout`). The answer's usage is
        `meter(value)`: priced, settled on `hold` (None: a part of a request whose hold
        is settled by another call) and recorded before this returns.

        Raises the mapped `ApiError` when no candidate served. Cancellation (the client went
        away) closes every upstream request, writes a 499 record and propagates.
        """

        if self.tracing is not None:
            operation = self.tracing.traced_operation(operation, _attempt_attributes)

        async def attempt(candidate: Candidate) -> T:
            # A scope, not `fail_after`: the same deadline without two generators. An
            # operation's own TooSlowError means the same as before: the call took too long.
            try:
                with trio.CancelScope(deadline=trio.current_time() + timeout_s):
                    return await operation(candidate.adapter, candidate.target)
            except trio.TooSlowError:
                pass
            raise deadline_exceeded(candidate.target.provider_id, timeout_s) from None

        chain = self._chain(facts, plan)
        tried: Attempt[Candidate] | None = None
        if self._alone(chain[0], plan, facts.principal.workspace_id):
            first = await self._call_first(facts, plan, chain[0], attempt, hold, meter)
            if isinstance(first, Called):
                return first
            tried = first
        winner = await self._race(facts, plan, chain, attempt, tried=tried)
        served = self._served(plan, winner, winner.value)
        accounting = self.served(facts, served.target, hold, meter(served.value))
        return Called(
            served.target, served.value, served.primary, served.attempts, served.retries, accounting
        )

    async def _call_first(
        self,
        facts: RequestFacts,
        plan: Plan,
        first: Candidate,
        attempt: Callable[[Candidate], Awaitable[T]],
        hold: Hold | None,
        meter: Callable[[T], Usage],
    ) -> Called[T] | Attempt[Candidate]:
        """The first candidate with nothing to race it, called in the caller's task with
        none of the race's machinery (most calls end with it): its answer, booked and
        accounted, or (it failed) the failed try the race goes on from."""
        started = trio.current_time()
        try:
            value = await attempt(first)
        except Exception as exc:
            return Attempt(first, 0, 1, Outcome.FAILED, started, trio.current_time(), exc)
        except trio.Cancelled:
            self.usage.failure(facts, plan.primary, *CLIENT_LEFT)
            raise
        won = Attempt(first, 0, 1, Outcome.WON, started, trio.current_time())
        self.book.won(
            facts.principal.workspace_id,
            first.target,
            float(span_ms(won) or 0),
            won.ended_at or started,
        )
        log_race(facts, (won,))
        accounting = self.served(facts, first.target, hold, meter(value))
        return Called(
            first.target, value, plan.primary, tuple(attempt_summary((won,))), 0, accounting
        )

    def open_stream(
        self,
        facts: RequestFacts,
        plan: Plan,
        opener: Opener[S],
        *,
        hold: Hold | None,
        timeout_s: float,
    ) -> AbstractAsyncContextManager[Streaming[S]]:
        """`async with engine.open_stream(...) as stream:` races the plan until one
        candidate's `opener` has been entered (an async context manager whose entry opens
        the stream and reads up to its first result, all within `timeout_s`); the winner
        stays open for the block and is closed when it ends, on every path, cancellation
        included. Failures before the first result fall back as in `call`.

        The stream's end is the family's to say: `stream.finished(usage)` (success),
        `stream.failed(error)` (a failure after the first result, mapped here); leaving
        the block without either is recorded as the client's departure (499), or as the
        `ApiError` that left it, with what `stream.metered` says was used. Either way the
        engine settles `hold` and writes the one usage record.
        """
        return self._streaming(facts, plan, opener, hold, timeout_s)

    @asynccontextmanager
    async def _streaming(
        self,
        facts: RequestFacts,
        plan: Plan,
        opener: Opener[S],
        hold: Hold | None,
        timeout_s: float,
    ) -> AsyncIterator[Streaming[S]]:
        chain = self._chain(facts, plan)
        if self.tracing is not None:
            opener = self.tracing.traced_opener(opener, _attempt_attributes)
        tried: Attempt[Candidate] | None = None
        if self._alone(chain[0], plan, facts.principal.workspace_id):
            async with self._first(facts, plan, chain[0], opener, hold, timeout_s) as first:
                if first.stream is not None:
                    yield first.stream
                    return
                tried = first.tried
        # The winner is held open by a task of this nursery (`streams.held`): the race
        # hands it out as a plain object, as `trio.open_tcp_stream` hands out a socket.
        async with background() as holders:

            async def attempt(candidate: Candidate) -> Held[S]:
                opened = opener(candidate.adapter, candidate.target)
                try:
                    return await hold_open(holders, opened, enter_within=timeout_s)
                except trio.TooSlowError:
                    raise deadline_exceeded(candidate.target.provider_id, timeout_s) from None

            winner = await self._race(facts, plan, chain, attempt, close=_release, tried=tried)
            held = winner.value
            try:
                with Streaming(self, facts, hold, self._served(plan, winner, held.value)) as stream:
                    yield stream
            finally:
                held.release()

    @asynccontextmanager
    async def _first(
        self,
        facts: RequestFacts,
        plan: Plan,
        first: Candidate,
        opener: Opener[S],
        hold: Hold | None,
        timeout_s: float,
    ) -> AsyncIterator[_FirstTry[S]]:
        """The first candidate with nothing to race it, entered here, in the caller's task,
        with no nursery (as `race` tries a lone first candidate inline): most requests end
        with it. Yields its open stream, or (it failed before its first result) the failed
        try the race goes on from."""
        started, entered = trio.current_time(), False
        try:
            # The opener's entry must finish within `timeout_s`; the scope stays entered,
            # lifted, for the block (an opener may hold a nursery, which must nest inside
            # every scope entered before it).
            with trio.CancelScope(deadline=started + timeout_s) as deadline:
                async with opener(first.adapter, first.target) as value:
                    deadline.deadline = math.inf
                    entered = True
                    won = Attempt(first, 0, 1, Outcome.WON, started, trio.current_time())
                    self.book.attempts(facts.principal.workspace_id, (won,))
                    log_race(facts, (won,))
                    served = self._served(plan, Winner(first, 0, value, (won,)), value)
                    with Streaming(self, facts, hold, served) as stream:
                        yield _FirstTry(stream=stream)
                    return
            raise deadline_exceeded(first.target.provider_id, timeout_s)
        except Exception as exc:
            if entered:
                raise
            failed = Attempt(first, 0, 1, Outcome.FAILED, started, trio.current_time(), exc)
        except trio.Cancelled:
            if not entered:
                self.usage.failure(facts, plan.primary, *CLIENT_LEFT)
            raise
        yield _FirstTry(tried=failed)

    def served(
        self, facts: RequestFacts, target: Target, hold: Hold | None, usage: Usage
    ) -> Accounting:
        """Account for an answer `target` served with `usage`: price it, settle `hold` with
        it and write the request's 200 record. The end of every successful call; a family
        calls it itself only for an answer that came from no race (a local engine, the
        blob store)."""
        accounting = self.price(facts, target, usage)
        if hold is not None:
            self.settle(facts, target, hold, usage)
        self.usage.record(facts, target, accounting, status=200)
        return accounting

    def served_from_cache(
        self, facts: RequestFacts, target: Target, hold: Hold, usage: Usage
    ) -> Accounting:
        """Account for an answer a cache held (`usage`: what it used when it was made): the
        key is charged nothing, and the record bills nothing and counts what it would
        have cost as saved. Returns that full accounting (`billed_nothing` of it is what
        the client is shown)."""
        full = self.price(facts, target, usage)
        facts.trail.ttft_ms = float(full.latency_ms)  # the whole answer is at hand
        hold.settle(Usage())
        billed = billed_nothing(full)
        saved = full.cost.total
        self.usage.record(
            facts, target, billed, status=200, cache_hit=True, cache_savings_usd=saved
        )
        return full

    def price(self, facts: RequestFacts, target: Target, usage: Usage) -> Accounting:
        """What `usage` on `target` cost (pure, no record)."""
        return account(
            self.catalog,
            target.info,
            usage,
            latency_ms=facts.elapsed_ms(),
            task_type=facts.task_type,
            provider_id=target.provider_id,
        )

    def settle(self, facts: RequestFacts, target: Target, hold: Hold, usage: Usage) -> None:
        """Charge the key what the request really used (admission reserved an estimate),
        a policy's share (an agent's) the cost of `usage` on the model that served, and
        count the tokens against what the gateway sends the serving provider."""
        hold.settle(usage)
        if isinstance(hold, PolicyBound):
            hold.charge(target.info, usage)
        self.upstream.record_tokens(
            facts.principal.workspace_id, target.provider_id, usage.total_tokens
        )

    # -- the race --------------------------------------------------------------------------

    def _chain(self, facts: RequestFacts, plan: Plan) -> list[Candidate]:
        """The plan's candidates that can be tried now (none: the 503, recorded)."""
        workspace = facts.principal.workspace_id
        chain = usable(
            plan.targets,
            lambda pid: self.registry.adapter(workspace, pid),
            self.breakers,
            workspace,
            trio.current_time(),
        )
        if not chain:
            error = unavailable(plan.primary.provider_id)
            self.usage.failure(facts, plan.primary, error.status, error.code)
            raise error
        self.upstream.record_request(workspace, chain[0].target.provider_id)
        start_trail(facts, plan)
        return chain

    def _hedge(self, workspace: str) -> Callable[[Candidate], float | None]:
        return hedge_delay(
            self.health,
            workspace,
            self._configured_hedge(workspace),
            from_latency=self.hedge_from_latency,
        )

    def _alone(self, first: Candidate, plan: Plan, workspace: str) -> bool:
        """Whether the first candidate runs with nothing to race it (no hedge, no retry)."""
        return plan.retry.max_attempts == 1 and self._hedge(workspace)(first) is None

    async def _race(
        self,
        facts: RequestFacts,
        plan: Plan,
        chain: list[Candidate],
        attempt: Callable[[Candidate], Awaitable[T]],
        *,
        close: Callable[[T], Awaitable[None]] | None = None,
        tried: Attempt[Candidate] | None = None,
    ) -> Winner[Candidate, T]:
        workspace = facts.principal.workspace_id
        try:
            winner = await race(
                chain,
                attempt,
                is_retryable=retryable(plan.retryable_codes),
                hedge_delay=self._hedge(workspace),
                retry=plan.retry,
                close=close,
                tried=tried,
            )
        except RaceFailed as failed:
            raise self._chain_failed(facts, plan, failed) from None
        except trio.Cancelled:
            self.usage.failure(facts, plan.primary, *CLIENT_LEFT)
            raise
        self.book.attempts(workspace, winner.attempts)
        log_race(facts, winner.attempts)
        return winner

    def _configured_hedge(self, workspace: str) -> Callable[[str], float | None]:
        def configured(provider_id: str) -> float | None:
            entry = self.registry.get(workspace, provider_id)
            value = entry.record.settings.get("hedge_after_ms") if entry else None
            return float(value) if isinstance(value, int | float) else None

        return configured

    def _served(self, plan: Plan, winner: Winner[Candidate, Any], value: T) -> Served[T]:
        return Served(
            target=winner.candidate.target,
            value=value,
            primary=plan.primary,
            attempts=tuple(attempt_summary(winner.attempts)),
            retries=sum(1 for a in winner.attempts if a.try_number > 1),
        )

    def _chain_failed(self, facts: RequestFacts, plan: Plan, failed: RaceFailed) -> ApiError:
        """The failure the client sees when no attempt won: the deciding error, plus what
        the chain tried. An error that is not a provider's is a bug, raised as it is."""
        workspace = facts.principal.workspace_id
        self.book.attempts(workspace, failed.attempts)
        log_race(facts, failed.attempts)
        error = failed.error
        if not isinstance(error, ProviderError):
            raise error
        offered = available_models(self.catalog, self.active(workspace), plan.capability)
        mapped = with_fallback_fields(from_provider_error(error, available_models=offered), failed)
        # Filed under the provider that failed it (the request log, metrics, analytics).
        failing = deciding(failed) or plan.primary
        self.usage.failure(facts, failing, mapped.status, mapped.code)
        return mapped


def _attempt_attributes(target: Target) -> dict[str, object]:
    """An attempt span's attributes (OpenTelemetry's GenAI names where they exist)."""
    return {
        "gen_ai.provider.name": target.provider_id,
        "gen_ai.request.model": target.upstream_model,
        "gateway.model": target.model_id,
    }


async def _release(held: Held[Any]) -> None:
    held.release()


@attrs.frozen
class _FirstTry(Generic[S]):
    stream: Streaming[S] | None = None
    tried: Attempt[Candidate] | None = None
