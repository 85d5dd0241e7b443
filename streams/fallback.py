"""The vocabulary of a fallback chain: what each attempt did, how a candidate is retried,
and how a chain that produced nothing fails.

These are pure values, free of I/O and of trio, so that routing code, error bodies and
tests can build and read them without running a race. The racing itself lives in
`streams.race`: a plain ordered fallback chain is `race()` without a hedge delay, so there
is one implementation of the chain, staggered or not.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

C = TypeVar("C")


class Outcome(enum.Enum):
    """How one attempt ended."""

    WON = "won"
    """It produced the first result of the race; its resource went to the caller."""
    FAILED = "failed"
    """It raised before producing a result; `Attempt.error` holds the exception."""
    CANCELLED = "cancelled"
    """It was cancelled (it lost the race, another attempt failed for good, or the caller
    cancelled), or it produced a result after the race was decided and was closed unused."""
    NOT_STARTED = "not_started"
    """The race was decided before this candidate's turn came."""


@dataclass(frozen=True, slots=True)
class Attempt(Generic[C]):
    """One try of one candidate, as the race saw it.

    `index` is the candidate's position in the chain; `try_number` counts from 1 (retries
    of the same candidate are 2, 3, ...; 0 for a candidate that never started). Times are
    `trio.current_time()` values. For the winner `ended_at` is when it produced its first
    result, not when the caller later closed it. `error` is the failure for FAILED, and for
    a CANCELLED loser the exception its closing raised, if any.
    """

    candidate: C
    index: int
    try_number: int
    outcome: Outcome
    started_at: float | None = None
    ended_at: float | None = None
    error: Exception | None = None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often one candidate is tried before the chain moves on, and how long it waits.

    Only failures the race's `is_retryable` accepts are retried. The wait before try
    n+1 is `initial_delay * multiplier ** (n - 1)`, capped at `max_delay`. The default
    policy tries once.
    """

    max_attempts: int = 1
    initial_delay: float = 0.0
    multiplier: float = 2.0
    max_delay: float = math.inf

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.initial_delay < 0 or self.max_delay < 0:
            raise ValueError("retry delays must not be negative")
        if self.multiplier < 1:
            raise ValueError(f"multiplier must be at least 1, not {self.multiplier}")

    def delay_before(self, try_number: int) -> float:
        """Seconds to wait before try `try_number` (2 for the first retry)."""
        if try_number < 2:
            return 0.0
        return min(self.initial_delay * self.multiplier ** (try_number - 2), self.max_delay)


NO_RETRY = RetryPolicy()


class RaceFailed(Exception):
    """No attempt produced a result. `attempts` says what was tried, in start order
    (candidates that never started come last, in chain order); `error` is the failure
    that decided it; it is also the `__cause__`."""

    def __init__(self, message: str, attempts: Sequence[Attempt[Any]], error: Exception) -> None:
        super().__init__(message)
        self.attempts: tuple[Attempt[Any], ...] = tuple(attempts)
        self.error = error

    @property
    def errors(self) -> tuple[Exception, ...]:
        """Every attempt's failure, in the order the attempts started."""
        return tuple(
            a.error for a in self.attempts if a.outcome is Outcome.FAILED and a.error is not None
        )


class AllAttemptsFailed(RaceFailed):
    """Every candidate failed retryably and used up its retries; `error` is the last failure
    (the way trio's `open_tcp_stream` reports every refused address together)."""


class RaceAborted(RaceFailed):
    """An attempt failed with an error that is not retryable (a bad request, say): the race
    stopped at once, cancelling the other attempts. `error` is that failure."""
