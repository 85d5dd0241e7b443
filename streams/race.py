"""Race a chain of candidates: first success wins, the losers are cancelled and closed.

This is trio's happy-eyeballs connect (`trio.open_tcp_stream`) made generic. Candidates
(opaque objects: providers, model routes, ...) start in chain order; the next one starts
when the current one has failed retryably, or, if a hedge delay is set for the current
one, when that delay has passed without a result. The first attempt to produce its result
wins and every other attempt is cancelled and closed. Without hedge delays this is the
plain ordered fallback chain.

An attempt is an async function of a candidate that opens something and waits for its
first result (an upstream stream and its first content chunk, or a whole call). Like
`open_tcp_stream`'s connection attempts it owns what it opened until it returns: if it
fails or is cancelled first, it closes it itself (an `async with` or a `try` inside it).
What it returns is a plain object; the race closes the value of an attempt that lost
(`close`, by default the value's `aclose()` when it has one) and hands the winner's out,
open, to the caller, who owns it from then on. A resource that needs a task to stay open
(a WebSocket with its reader) is held by a task in a nursery the caller owns
(`streams.held`), never by the race.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import trio

from streams.fallback import (
    NO_RETRY,
    AllAttemptsFailed,
    Attempt,
    Outcome,
    RaceAborted,
    RaceFailed,
    RetryPolicy,
)

C = TypeVar("C")
T = TypeVar("T")

AttemptFunction = Callable[[C], Awaitable[T]]
Closer = Callable[[T], Awaitable[None]]
HedgeDelay = float | Callable[[C], float | None] | None
Retry = RetryPolicy | Callable[[C], RetryPolicy] | None


@dataclass(frozen=True, slots=True)
class Winner(Generic[C, T]):
    """The attempt that won: its candidate, its position in the chain, the value it
    returned (open: the caller closes it) and the final record of every attempt."""

    candidate: C
    index: int
    value: T
    attempts: tuple[Attempt[C], ...]


async def race(
    candidates: Sequence[C],
    attempt: AttemptFunction[C, T],
    *,
    is_retryable: Callable[[Exception], bool],
    hedge_delay: HedgeDelay[C] = None,
    retry: Retry[C] = None,
    close: Closer[T] | None = None,
    tried: Attempt[C] | None = None,
) -> Winner[C, T]:
    """Race `candidates` in order and return the `Winner` once exactly one attempt has
    produced its result and every other attempt has been cancelled and closed, so
    `winner.attempts` is final.

    `hedge_delay` (seconds, or a function of the candidate; None means never) is how long
    the current attempt may stay silent before the next candidate starts alongside it.
    `retry` (a policy, or a function of the candidate) lets one candidate be tried again
    after a retryable failure, with backoff on the trio clock, before the chain moves on;
    the hedge timer of a candidate runs from its first try. An attempt that produces a
    result after the winner (even in the same instant) is closed unused (`close`); a
    failure to close it is noted in its record, never raised.

    `tried` is the failed try of the first candidate, made by the caller in its own task
    (a stream whose winner must stay entered there, as `race` itself tries a lone first
    candidate): the race goes on from the next candidate, or fails as the chain would.

    Raises `RaceAborted` as soon as an attempt fails with an error `is_retryable` rejects
    (the others are cancelled and closed first), and `AllAttemptsFailed` when every
    candidate failed; both carry every attempt's record. Exceptions that are not
    `Exception`s (cancellation, KeyboardInterrupt) are never caught.

    Cancellation: if the caller is cancelled while the race runs, every running attempt is
    cancelled, every value already produced (a winner's included) is closed, and
    `Cancelled` propagates. Closing runs in the cancelled context, so a value whose close
    must wait shields it, with a deadline, itself.
    """
    if not candidates:
        raise ValueError("race() needs at least one candidate")
    contest = _Contest(
        list(candidates),
        attempt,
        is_retryable,
        _per_candidate(hedge_delay),
        _retry_for(retry),
        close or _aclose,
    )
    if tried is not None:
        return await contest.run_after(tried)
    return await contest.run()


async def _aclose(value: Any) -> None:
    aclose = getattr(value, "aclose", None)
    if aclose is not None:
        await aclose()


def _per_candidate(hedge_delay: HedgeDelay[C]) -> Callable[[C], float | None]:
    if hedge_delay is None or isinstance(hedge_delay, int | float):
        constant = hedge_delay
        return lambda _: constant
    return hedge_delay


def _retry_for(retry: Retry[C]) -> Callable[[C], RetryPolicy]:
    if retry is None or isinstance(retry, RetryPolicy):
        policy = NO_RETRY if retry is None else retry
        return lambda _: policy
    return retry


@dataclass(eq=False)
class _Try(Generic[C]):
    """A mutable attempt record, frozen into an `Attempt` when the race is read."""

    candidate: C
    index: int
    try_number: int
    started_at: float
    outcome: Outcome = Outcome.CANCELLED
    ended_at: float | None = None
    error: Exception | None = None

    def freeze(self) -> Attempt[C]:
        return Attempt(
            self.candidate,
            self.index,
            self.try_number,
            self.outcome,
            self.started_at,
            self.ended_at,
            self.error,
        )


class _Contest(Generic[C, T]):
    """One run of `race`."""

    def __init__(
        self,
        candidates: list[C],
        attempt: AttemptFunction[C, T],
        is_retryable: Callable[[Exception], bool],
        hedge_delay: Callable[[C], float | None],
        retry: Callable[[C], RetryPolicy],
        close: Closer[T],
    ) -> None:
        self._candidates = candidates
        self._attempt = attempt
        self._is_retryable = is_retryable
        self._hedge_delay = hedge_delay
        self._retry = retry
        self._close = close
        self._tries: list[_Try[C]] = []
        self._started = 0  # candidates started so far (their index is below this)
        self._running = 0
        self._winner: tuple[int, C, T] | None = None
        self._fatal: Exception | None = None
        self._nursery: trio.Nursery | None = None

    async def run_after(self, tried: Attempt[C]) -> Winner[C, T]:
        """`run`, the first candidate having failed with `tried` outside the race."""
        assert tried.outcome is Outcome.FAILED and tried.error is not None
        started = tried.started_at or 0.0
        self._tries.append(
            _Try(tried.candidate, 0, 1, started, tried.outcome, tried.ended_at, tried.error)
        )
        self._started = 1
        self._first_failed(tried.error)
        return await self.run(inline=False)

    async def run(self, *, inline: bool = True) -> Winner[C, T]:
        try:
            if not (inline and self._may_try_inline() and await self._try_inline()):
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    await self._launch(nursery)
                # A caller cancelled while a loser finished closing is still cancelled:
                # the result it would get now is closed instead.
                await trio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            # Cancelled (or interrupted) after a result arrived: it is nobody's yet.
            if self._winner is not None:
                await self._close(self._winner[2])
            raise
        if self._winner is None:
            raise self._failure()
        index, candidate, value = self._winner
        return Winner(candidate, index, value, self._records())

    # -- the first candidate, inline ---------------------------------------------------

    def _may_try_inline(self) -> bool:
        """The first candidate alone, with nothing to race it (no hedge, no retry), needs no
        task of its own: most requests end there, so it is tried in the caller's task and
        a nursery is opened only if the chain has to move on."""
        first = self._candidates[0]
        return self._hedge_delay(first) is None and self._retry(first).max_attempts == 1

    async def _try_inline(self) -> bool:
        """True once the first candidate won; False when it failed retryably and another
        candidate is left to try. A non-retryable failure, or the last one, ends the race."""
        candidate = self._candidates[0]
        record = _Try(candidate, 0, 1, trio.current_time())
        self._tries.append(record)
        self._started = 1
        try:
            value = await self._attempt(candidate)
        except Exception as exc:
            record.outcome, record.error = Outcome.FAILED, exc
            record.ended_at = trio.current_time()
            self._first_failed(exc)
            return False
        finally:
            if record.ended_at is None:
                record.ended_at = trio.current_time()
        record.outcome = Outcome.WON
        self._winner = (0, candidate, value)
        return True

    def _first_failed(self, error: Exception) -> None:
        """After the first candidate's failure: the race ends (raised) when it is not
        retryable or no candidate is left; otherwise the chain goes on."""
        if not self._is_retryable(error):
            self._fatal = error
            raise self._failure() from None
        if len(self._candidates) == 1:
            raise self._failure() from None

    # -- the chain ---------------------------------------------------------------------

    async def _launch(self, nursery: trio.Nursery) -> None:
        """Start candidates in order, each after the previous gave up or went quiet; the
        decision (`_decide`) cancels this loop with every attempt."""
        for index in range(self._started, len(self._candidates)):
            candidate = self._candidates[index]
            gave_up = trio.Event()
            self._started = index + 1
            self._running += 1
            nursery.start_soon(self._try_candidate, index, candidate, gave_up)
            if index == len(self._candidates) - 1:
                return
            delay = self._hedge_delay(candidate)
            with trio.move_on_after(math.inf if delay is None else delay):
                await gave_up.wait()

    async def _try_candidate(self, index: int, candidate: C, gave_up: trio.Event) -> None:
        policy = self._retry(candidate)
        for try_number in range(1, policy.max_attempts + 1):
            if try_number > 1:
                await trio.sleep(policy.delay_before(try_number))
            error = await self._one_try(index, candidate, try_number)
            if error is None:
                return
            if not self._is_retryable(error):
                self._fatal = error
                self._decide()
                return
        gave_up.set()
        self._running -= 1
        if self._running == 0 and self._started == len(self._candidates):
            self._decide()  # every candidate gave up

    async def _one_try(self, index: int, candidate: C, try_number: int) -> Exception | None:
        """Run one attempt; returns its failure, or None when it won or lost."""
        record = _Try(candidate, index, try_number, trio.current_time())
        self._tries.append(record)
        try:
            value = await self._attempt(candidate)
        except Exception as exc:
            record.outcome, record.error = Outcome.FAILED, exc
            return exc
        finally:
            if record.ended_at is None:
                record.ended_at = trio.current_time()
        if self._winner is None and self._fatal is None:
            record.outcome = Outcome.WON
            self._winner = (index, candidate, value)
            self._decide()
            return None
        # It produced a result in the same instant as the winner, or later: closed unused.
        try:
            await self._close(value)
        except Exception as exc:
            record.error = exc
        return None

    def _decide(self) -> None:
        """The race is decided (a winner, a fatal error, or nothing left to try): stop
        launching and cancel every attempt still running."""
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()

    def _records(self) -> tuple[Attempt[C], ...]:
        started = [t.freeze() for t in self._tries]
        not_started = [
            Attempt(candidate, index, 0, Outcome.NOT_STARTED)
            for index, candidate in enumerate(self._candidates)
            if index >= self._started
        ]
        return (*started, *not_started)

    def _failure(self) -> RaceFailed:
        attempts = self._records()
        if self._fatal is not None:
            aborted = RaceAborted(
                f"attempt failed and is not retryable: {self._fatal!r}", attempts, self._fatal
            )
            aborted.__cause__ = self._fatal
            return aborted
        failures = [t for t in self._tries if t.error is not None and t.outcome is Outcome.FAILED]
        last = max(failures, key=lambda t: t.ended_at or 0.0).error
        assert last is not None
        exhausted = AllAttemptsFailed(
            f"all {len(self._candidates)} candidates failed; last error: {last!r}", attempts, last
        )
        exhausted.__cause__ = last
        return exhausted
