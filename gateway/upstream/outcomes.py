"""What a race's attempts leave behind: provider health, the circuit breakers, the
metrics' first-result observers, and the call's trail for its usage record.

The engine (`gateway.upstream.engine`) races; this module books the race's outcome. A lone
first candidate that answers (most requests) is booked by `RaceBook.won` directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import attrs
import trio

from gateway.platform.errors import ApiError, from_provider_error, provider_unavailable
from gateway.upstream.chain import Candidate, logged, span_ms
from gateway.upstream.circuit import BreakerBook, State
from gateway.upstream.facts import RaceOrigin, RequestFacts
from gateway.upstream.health import HealthBook
from gateway.upstream.plan import Plan
from gateway.upstream.resolve import UNAVAILABLE_RETRY_AFTER_S, Target
from gateway.upstream.shared_breakers import Report, SharedBreakers
from providers.errors import ProviderError
from streams.fallback import Attempt, Outcome, RaceFailed

FirstResultObserver = Callable[[str, float], None]


@attrs.frozen
class RaceBook:
    """Feeds each attempt into provider health and its circuit breaker.

    Losers cancelled by a faster candidate say nothing about their provider; failures that
    are the client's fault (a bad request) do not count against it either.
    """

    breakers: BreakerBook
    health: HealthBook
    shared_breakers: SharedBreakers | None
    on_first_result: tuple[FirstResultObserver, ...]

    def attempts(self, workspace: str, attempts: Sequence[Attempt[Candidate]]) -> None:
        now = trio.current_time()
        for attempt in attempts:
            target = attempt.candidate.target
            ms = float(span_ms(attempt) or 0)
            if attempt.outcome is Outcome.WON:
                self.won(workspace, target, ms, now)
            elif attempt.outcome is Outcome.FAILED and _providers_fault(attempt.error):
                assert isinstance(attempt.error, ProviderError)
                self.failed(workspace, target, attempt.error, ms, now)

    def won(self, workspace: str, target: Target, ms: float, now: float) -> None:
        """A winning attempt that took `ms` to its first result."""
        breaker = self.breakers.breaker(workspace, target.provider_id, target.upstream_model)
        self.health.record(workspace, target.provider_id, ok=True, latency_ms=ms)
        self.health.record_first_result(workspace, target.provider_id, ms)
        for observe in self.on_first_result:
            observe(target.provider_id, ms)
        shared = self.shared_breakers
        if shared is not None and not breaker.clean:  # the healthy path sends nothing
            shared.report(Report(workspace, target.provider_id, target.upstream_model, True))
        breaker.record(True, now)

    def failed(
        self, workspace: str, target: Target, error: ProviderError, ms: float, now: float
    ) -> None:
        breaker = self.breakers.breaker(workspace, target.provider_id, target.upstream_model)
        kind = from_provider_error(error).code  # the spec's code, e.g. provider_timeout
        self.health.record(workspace, target.provider_id, ok=False, latency_ms=ms, error_type=kind)
        probe = breaker.state is State.HALF_OPEN
        breaker.record(False, now)
        if self.shared_breakers is not None:
            report = Report(workspace, target.provider_id, target.upstream_model, False, probe)
            self.shared_breakers.report(report)


def start_trail(facts: RequestFacts, plan: Plan) -> None:
    """Mark where the race starts within the request (its attempts' offsets are measured
    from the request's arrival), and the model asked for when the family named none."""
    trail = facts.trail
    elapsed_ms = (time.perf_counter() - facts.started) * 1000
    trail.race_origin = RaceOrigin(trio.current_time(), elapsed_ms)
    if trail.model_requested is None:
        trail.model_requested = plan.primary.model_id


def log_race(facts: RequestFacts, attempts: Sequence[Attempt[Candidate]]) -> None:
    """The race's attempts, and the time to the first result (the winner's first chunk,
    or its whole answer), into the call's trail for its usage record."""
    origin = facts.trail.race_origin
    if origin is None:
        return
    facts.trail.attempts = logged(attempts, origin)
    for attempt in attempts:
        if attempt.outcome is Outcome.WON and attempt.ended_at is not None:
            facts.trail.ttft_ms = origin.offset_ms(attempt.ended_at)


def deciding(failed: RaceFailed) -> Target | None:
    """The target whose failure decided the race: the attempt that raised its error."""
    for attempt in failed.attempts:
        if attempt.error is failed.error:
            target: Target = attempt.candidate.target
            return target
    return None


def unavailable(provider_id: str | None) -> ApiError:
    """The spec's 503 when no provider that could serve the request can be tried."""
    return provider_unavailable(
        provider_id,
        "Every provider that could serve this request is failing; try again shortly.",
        UNAVAILABLE_RETRY_AFTER_S,
    )


def _providers_fault(error: Exception | None) -> bool:
    return isinstance(error, ProviderError) and error.retryable
