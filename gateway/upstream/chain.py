"""A chain of upstream candidates raced by `streams.race`, whatever the endpoint.

Chat, embeddings and rerank all fall back the same way: the candidates whose provider is
active and whose circuit lets requests through, tried in order (or raced, with hedging);
timeouts, throttling and 5xx move on, other failures stop. This module holds what they
share: the candidate, which failures are retryable and what the attempts are reported
as (the engine, `gateway.upstream.engine`, feeds them into provider health and the
breakers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from gateway.platform.errors import ApiError, from_provider_error
from gateway.upstream.circuit import BreakerBook
from gateway.upstream.facts import RaceOrigin
from gateway.upstream.resolve import Target
from providers.base import Provider
from providers.errors import ProviderError, UpstreamTimeout
from store.request_log import LoggedAttempt
from streams.fallback import Attempt, Outcome, RaceFailed


@attrs.frozen
class Candidate:
    target: Target
    adapter: Provider


def usable(
    targets: Sequence[Target],
    adapter_of: Callable[[str], Provider | None],
    breakers: BreakerBook,
    workspace_id: str,
    now: float,
) -> list[Candidate]:
    """Targets whose provider is active and whose circuit lets a request through."""
    chain = []
    for target in targets:
        adapter = adapter_of(target.provider_id)
        if adapter is None:
            continue
        if not breakers.breaker(workspace_id, target.provider_id, target.upstream_model).allows(
            now
        ):
            continue
        chain.append(Candidate(target, adapter))
    return chain


def retryable(codes: Sequence[str]) -> Callable[[Exception], bool]:
    """Timeouts, throttling and 5xx always move on; `codes` (the spec's error codes, from
    `service.retry.retryable_errors`) add more."""
    extra = frozenset(codes)

    def check(exc: Exception) -> bool:
        if not isinstance(exc, ProviderError):
            return False
        return exc.retryable or from_provider_error(exc).code in extra

    return check


def deadline_exceeded(provider_id: str, seconds: float) -> UpstreamTimeout:
    """The retryable failure of an attempt that ran out of its deadline."""
    return UpstreamTimeout(
        provider_id,
        f"The provider did not answer within {seconds:g} s.",
        timeout_ms=int(seconds * 1000),
    )


def tried_several(failed: RaceFailed) -> bool:
    tried = {a.index for a in failed.attempts if a.outcome is not Outcome.NOT_STARTED}
    return len(tried) > 1


def with_fallback_fields(error: ApiError, failed: RaceFailed) -> ApiError:
    """The spec's fallback fields on the error of a chain where every attempt failed."""
    if tried_several(failed):
        tried = [a for a in failed.attempts if a.outcome is not Outcome.NOT_STARTED]
        error.extra |= {
            "fallback_attempted": True,
            "fallback_provider": tried[-1].candidate.target.provider_id,
            "fallback_result": "failed",
            "attempts": attempt_summary(failed.attempts),
        }
    return error


def attempt_summary(attempts: Sequence[Attempt[Candidate]]) -> list[dict[str, object]]:
    """The attempts as the `_gateway` and error bodies report them."""
    summary = []
    for attempt in attempts:
        if attempt.outcome is Outcome.NOT_STARTED:
            continue
        error = attempt.error
        summary.append(
            {
                "provider": attempt.candidate.target.provider_id,
                "model": attempt.candidate.target.model_id,
                "try": attempt.try_number,
                "outcome": attempt.outcome.value,
                "error": from_provider_error(error).code
                if isinstance(error, ProviderError)
                else None,
                "latency_ms": span_ms(attempt),
            }
        )
    return summary


def logged(attempts: Sequence[Attempt[Candidate]], origin: RaceOrigin) -> tuple[LoggedAttempt, ...]:
    """The attempts that started, as the request log keeps them (`store.request_log`)."""
    kept = []
    for attempt in attempts:
        if attempt.started_at is None:
            continue
        ended = attempt.ended_at
        target = attempt.candidate.target
        kept.append(
            LoggedAttempt(
                provider=target.provider_id,
                model=target.model_id,
                try_number=attempt.try_number,
                start_ms=origin.offset_ms(attempt.started_at),
                duration_ms=None
                if ended is None
                else round((ended - attempt.started_at) * 1000, 3),
                outcome=attempt.outcome.value,
                error=_error_code(attempt.error),
            )
        )
    return tuple(kept)


def _error_code(error: Exception | None) -> str | None:
    if error is None:
        return None
    if isinstance(error, ProviderError):
        return from_provider_error(error).code
    return type(error).__name__


def span_ms(attempt: Attempt[Candidate]) -> int | None:
    if attempt.started_at is None or attempt.ended_at is None:
        return None
    return int((attempt.ended_at - attempt.started_at) * 1000)
