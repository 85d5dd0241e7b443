"""The one upstream engine every endpoint family calls: race a plan, report the outcome.

A family validates its input, plans its candidates (`gateway.upstream.plan`) and hands
the engine one operation: `call` for an answer that arrives whole, `open_stream` for one
that streams. The engine keeps the candidates whose provider is active and whose circuit
lets requests through (none: 503 `provider_unavailable`), races them through
`streams.race` with the caller's deadline per attempt, the plan's retries and the
provider's hedge delay, feeds every attempt into provider health and the breakers, and
maps the deciding failure to the spec's error with the chain's fallback fields.

Usage records: a request the engine could not serve (no candidate, every attempt failed,
or the client went away while it waited) leaves its record here, so a family writes one
only for the answer it serves (`gateway.upstream.usage.record_usage`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from types import TracebackType
from typing import Any, Generic, TypeVar

import attrs
import trio

from gateway.platform.errors import ApiError, from_provider_error, provider_unavailable
from gateway.platform.state import AppState
from gateway.upstream.accounting import account
from gateway.upstream.chain import (
    Candidate,
    attempt_summary,
    deadline_exceeded,
    logged,
    record_attempts,
    retryable,
    usable,
    with_fallback_fields,
)
from gateway.upstream.facts import RaceOrigin, RequestFacts
from gateway.upstream.plan import Plan, hedge_delay
from gateway.upstream.resolve import UNAVAILABLE_RETRY_AFTER_S, Target, available_models
from gateway.upstream.usage import record_usage
from providers.base import Provider
from providers.errors import ProviderError
from providers.types import Usage
from streams.fallback import Attempt, Outcome, RaceFailed
from streams.race import AttemptFactory, Race, Winner, from_call, race

T = TypeVar("T")
S = TypeVar("S")
Operation = Callable[[Provider, Target], Awaitable[T]]
Opener = Callable[[Provider, Target], AbstractAsyncContextManager[S]]


@attrs.frozen
class Served(Generic[T]):
    """What won the race: the target that served, its value, and the chain's record."""

    target: Target
    value: T
    primary: Target
    attempts: tuple[Mapping[str, object], ...]
    retries: int  # tries beyond a candidate's first

    @property
    def fell_back(self) -> bool:
        return self.target != self.primary


async def call(
    state: AppState,
    facts: RequestFacts,
    plan: Plan,
    operation: Operation[T],
    *,
    timeout_s: float,
) -> Served[T]:
    """Race the plan until one candidate's `operation` returns; each attempt has
    `timeout_s` (running out is a retryable `provider_timeout`).

    Raises the mapped `ApiError` when no candidate served. Cancellation (the client went
    away) closes every upstream request, writes a 499 record and propagates.
    """

    async def attempt(candidate: Candidate) -> T:
        try:
            with trio.fail_after(timeout_s):
                return await operation(candidate.adapter, candidate.target)
        except trio.TooSlowError:
            raise deadline_exceeded(candidate.target.provider_id, timeout_s) from None

    contest = _contest(state, facts, plan, _traced(state, from_call(attempt)))
    try:
        async with contest as winner:
            value: T = winner.value
    except RaceFailed as failed:
        raise _chain_failed(state, facts, plan, failed) from None
    except trio.Cancelled:
        _record_failure(state, facts, plan, 499, "client_disconnected")
        raise
    return _served(state, facts, plan, winner, value)


def open_stream(
    state: AppState,
    facts: RequestFacts,
    plan: Plan,
    opener: Opener[S],
    *,
    timeout_s: float,
) -> StreamOpening[S]:
    """`async with open_stream(state, facts, plan, opener, timeout_s=...) as served:`
    (see `StreamOpening`)."""
    return StreamOpening(state, facts, plan, opener, timeout_s=timeout_s)


class StreamOpening(Generic[S]):
    """Race the plan until one candidate's `opener` has been entered (an async context
    manager whose entry opens the stream and reads up to its first result, all within
    `timeout_s`); the winner stays open for the block and is closed when it ends, on
    every path, cancellation included. Failures before the first result fall back as in
    `call`; what happens after is the family's to report.
    """

    def __init__(
        self,
        state: AppState,
        facts: RequestFacts,
        plan: Plan,
        opener: Opener[S],
        *,
        timeout_s: float,
    ) -> None:
        self._state, self._facts, self._plan = state, facts, plan

        def attempt(candidate: Candidate) -> AbstractAsyncContextManager[S]:
            opened = opener(candidate.adapter, candidate.target)
            return _Deadlined(opened, candidate.target.provider_id, timeout_s)

        self._attempt: AttemptFactory[Candidate, S] = _traced(state, attempt)
        self._contest: Race[Candidate, S] | None = None

    async def __aenter__(self) -> Served[S]:
        state, facts, plan = self._state, self._facts, self._plan
        self._contest = _contest(state, facts, plan, self._attempt)
        try:
            winner = await self._contest.__aenter__()
        except RaceFailed as failed:
            raise _chain_failed(state, facts, plan, failed) from None
        except trio.Cancelled:
            _record_failure(state, facts, plan, 499, "client_disconnected")
            raise
        return _served(state, facts, plan, winner, winner.value)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._contest is not None
        return await self._contest.__aexit__(exc_type, exc, tb)


class _Deadlined(Generic[S]):
    """An attempt's opener whose entry must finish within `timeout_s`: an upstream that
    never sends its answer's head is as late as one that sends no first result."""

    def __init__(
        self, opened: AbstractAsyncContextManager[S], provider_id: str, timeout_s: float
    ) -> None:
        self._opened, self._provider_id, self._timeout_s = opened, provider_id, timeout_s
        self._held = AsyncExitStack()

    async def __aenter__(self) -> S:
        # The deadline's scope stays entered, lifted, until the opener is left: an opener
        # may hold a nursery for the block (a WebSocket's reader task), which must nest
        # inside every scope that was entered before it.
        async with AsyncExitStack() as stack:
            deadline = stack.enter_context(trio.move_on_after(self._timeout_s))
            value = await stack.enter_async_context(self._opened)
            deadline.deadline = math.inf
            self._held = stack.pop_all()
            return value
        raise deadline_exceeded(self._provider_id, self._timeout_s)  # the deadline passed

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._held.__aexit__(exc_type, exc, tb)


def unavailable(provider_id: str | None) -> ApiError:
    """The spec's 503 when no provider that could serve the request can be tried."""
    return provider_unavailable(
        provider_id,
        "Every provider that could serve this request is failing; try again shortly.",
        UNAVAILABLE_RETRY_AFTER_S,
    )


def _contest(
    state: AppState, facts: RequestFacts, plan: Plan, attempt: AttemptFactory[Candidate, T]
) -> Race[Candidate, T]:
    workspace = facts.principal.workspace_id
    chain = usable(
        plan.targets,
        lambda pid: state.registry.adapter(workspace, pid),
        state.breakers,
        workspace,
        trio.current_time(),
    )
    if not chain:
        error = unavailable(plan.primary.provider_id)
        _record_failure(state, facts, plan, error.status, error.code)
        raise error
    state.limits.upstream.record_request(workspace, chain[0].target.provider_id)
    _start_trail(facts, plan)
    return race(
        chain,
        attempt,
        is_retryable=retryable(plan.retryable_codes),
        hedge_delay=hedge_delay(
            state.health,
            workspace,
            _configured_hedge(state, workspace),
            from_latency=state.settings.hedge_from_latency,
        ),
        retry=plan.retry,
    )


def _traced(state: AppState, factory: AttemptFactory[Candidate, T]) -> AttemptFactory[Candidate, T]:
    """Each attempt in a span of its own when tracing is on; `factory` itself otherwise."""
    if state.tracing is None:
        return factory
    return state.tracing.traced_attempts(factory, _attempt_attributes)


def _attempt_attributes(candidate: Candidate) -> dict[str, object]:
    target = candidate.target
    return {
        "gen_ai.provider.name": target.provider_id,
        "gen_ai.request.model": target.upstream_model,
        "gateway.model": target.model_id,
    }


def _start_trail(facts: RequestFacts, plan: Plan) -> None:
    """Mark where the race starts within the request (its attempts' offsets are measured
    from the request's arrival), and the model asked for when the family named none."""
    trail = facts.trail
    trail.race_origin = RaceOrigin(
        trio.current_time(), (time.perf_counter() - facts.started) * 1000
    )
    if trail.model_requested is None:
        trail.model_requested = plan.primary.model_id


def _log_race(facts: RequestFacts, attempts: Sequence[Attempt[Candidate]]) -> None:
    """The race's attempts, and the time to the first result (the winner's first chunk,
    or its whole answer), into the call's trail for its usage record."""
    origin = facts.trail.race_origin
    if origin is None:
        return
    facts.trail.attempts = logged(attempts, origin)
    for attempt in attempts:
        if attempt.outcome is Outcome.WON and attempt.ended_at is not None:
            facts.trail.ttft_ms = origin.offset_ms(attempt.ended_at)


def _configured_hedge(state: AppState, workspace: str) -> Callable[[str], float | None]:
    def configured(provider_id: str) -> float | None:
        entry = state.registry.get(workspace, provider_id)
        value = entry.record.settings.get("hedge_after_ms") if entry else None
        return float(value) if isinstance(value, int | float) else None

    return configured


def _served(
    state: AppState, facts: RequestFacts, plan: Plan, winner: Winner[Candidate, Any], value: T
) -> Served[T]:
    record_attempts(state, facts.principal.workspace_id, winner.attempts)
    _log_race(facts, winner.attempts)
    return Served(
        target=winner.candidate.target,
        value=value,
        primary=plan.primary,
        attempts=tuple(attempt_summary(winner.attempts)),
        retries=sum(1 for a in winner.attempts if a.try_number > 1),
    )


def _chain_failed(state: AppState, facts: RequestFacts, plan: Plan, failed: RaceFailed) -> ApiError:
    """The failure the client sees when no attempt won: the deciding error, plus what the
    chain tried. An error that is not a provider's is a bug, raised as it is."""
    record_attempts(state, facts.principal.workspace_id, failed.attempts)
    _log_race(facts, failed.attempts)
    error = failed.error
    if not isinstance(error, ProviderError):
        raise error
    active = state.registry.active_ids(facts.principal.workspace_id)
    offered = available_models(state.catalog, active, plan.capability)
    mapped = with_fallback_fields(from_provider_error(error, available_models=offered), failed)
    _record_failure(state, facts, plan, mapped.status, mapped.code, _deciding(failed))
    return mapped


def _deciding(failed: RaceFailed) -> Target | None:
    """The target whose failure decided the race (the provider a failed request's record
    names): the attempt that raised the race's error."""
    for attempt in failed.attempts:
        if attempt.error is failed.error:
            target: Target = attempt.candidate.target
            return target
    return None


def _record_failure(
    state: AppState,
    facts: RequestFacts,
    plan: Plan,
    status: int,
    code: str,
    target: Target | None = None,
) -> None:
    """The record of a call no provider served: under the provider that failed it, or
    the plan's first when none was tried."""
    target = target or plan.primary
    accounting = account(
        state.catalog, target.info, Usage(), latency_ms=facts.elapsed_ms(), task_type=None
    )
    record_usage(state, facts, target, accounting, status=status, error_code=code)
