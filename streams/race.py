"""Race a chain of candidates: first success wins, the losers are cancelled and closed.

This is trio's happy-eyeballs connect (`trio.open_tcp_stream`) made generic. Candidates
(opaque objects: providers, model routes, ...) start in chain order; the next one starts
when the current one has failed retryably, or, if a hedge delay is set for the current
one, when that delay has passed without a result. The first attempt to produce its first
result wins and every other attempt is cancelled and closed. Without hedge delays this
is the plain ordered fallback chain.

An attempt is an async context manager: entering it opens something and waits for its
first result (an upstream stream and its first content chunk, or a whole call); exiting
it closes what it opened. The race enters each attempt in that attempt's own task and
exits it in the same task, so attempts may hold cancel scopes or nurseries. The winner's
task keeps its context open until the caller's `async with race(...)` block ends; that
is why the race is a class-based async context manager rather than a function that
returns an open resource (and not an async generator: PEP 789).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Generic, Protocol, TypeVar

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
R = TypeVar("R", bound="SupportsAclose")

AttemptFactory = Callable[[C], AbstractAsyncContextManager[T]]
HedgeDelay = float | Callable[[C], float | None] | None
Retry = RetryPolicy | Callable[[C], RetryPolicy] | None


class SupportsAclose(Protocol):
    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Winner(Generic[C, T]):
    """The attempt that won: its candidate, its position in the chain, the value its
    context manager yielded (still open; it closes when the `async with` block ends) and
    the final record of every attempt of the race."""

    candidate: C
    index: int
    value: T
    attempts: tuple[Attempt[C], ...]


def race(
    candidates: Sequence[C],
    attempt: AttemptFactory[C, T],
    *,
    is_retryable: Callable[[Exception], bool],
    hedge_delay: HedgeDelay[C] = None,
    retry: Retry[C] = None,
) -> Race[C, T]:
    """Race `candidates` in order; use as `async with race(...) as winner:`.

    `attempt(candidate)` returns an async context manager whose entry opens the resource
    and waits for its first result, and whose exit closes it. `hedge_delay` (seconds, or a
    function of the candidate; None means never) is how long the current attempt may stay
    silent before the next candidate starts alongside it. `retry` (a policy, or a function
    of the candidate) lets one candidate be tried again after a retryable failure, with
    backoff on the trio clock, before the chain moves on; the hedge timer of a candidate
    runs from its first try.

    Entering the block returns a `Winner` once exactly one attempt has produced a result
    and every other attempt has been cancelled and closed, so `winner.attempts` is final.
    An attempt that produces a result after the winner (even in the same instant) is
    closed unused. The winner's resource stays open until the block ends; the caller
    owns it for that long. The block runs inside the race's nursery, whose only task by
    then is the winner's, waiting to close it; an exception raised by the block reaches
    the caller as raised, not wrapped in an ExceptionGroup. A failure to close the winner
    is raised after the block (or noted on the block's own exception).

    Raises `RaceAborted` as soon as an attempt fails with an error `is_retryable` rejects
    (the others are cancelled and closed first), and `AllAttemptsFailed` when every
    candidate failed; both carry every attempt's record. Exceptions that are not
    `Exception`s (cancellation, KeyboardInterrupt) are never caught.

    Cancellation: if the caller is cancelled (a client disconnect) while the race runs,
    every running attempt is cancelled and closed before `Cancelled` propagates; if it is
    cancelled inside the block, the winner is cancelled and closed when the block exits.
    Closing runs in the cancelled context, so an attempt whose close must wait should
    shield it, with a deadline, itself.
    """
    if not candidates:
        raise ValueError("race() needs at least one candidate")
    return Race(
        list(candidates), attempt, is_retryable, _per_candidate(hedge_delay), _retry_for(retry)
    )


def from_call(call: Callable[[C], Awaitable[T]]) -> AttemptFactory[C, T]:
    """An attempt that is one whole call (a non-streamed request): it leaves nothing open."""
    return lambda candidate: _Called(call, candidate)


def from_opener(open_: Callable[[C], Awaitable[R]]) -> AttemptFactory[C, R]:
    """An attempt that opens an object with `aclose()`, closed when the attempt ends."""
    return lambda candidate: _Opened(open_, candidate)


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


class _Called(Generic[C, T]):
    def __init__(self, call: Callable[[C], Awaitable[T]], candidate: C) -> None:
        self._call = call
        self._candidate = candidate

    async def __aenter__(self) -> T:
        return await self._call(self._candidate)

    async def __aexit__(self, *exc_info: object) -> None:
        return None


class _Opened(Generic[C, R]):
    def __init__(self, open_: Callable[[C], Awaitable[R]], candidate: C) -> None:
        self._open = open_
        self._candidate = candidate
        self._resource: R | None = None

    async def __aenter__(self) -> R:
        self._resource = await self._open(self._candidate)
        return self._resource

    async def __aexit__(self, *exc_info: object) -> None:
        if self._resource is not None:
            await self._resource.aclose()


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


@dataclass(eq=False)
class _Slot(Generic[C]):
    """One candidate's task: its own cancel scope, so losers go and the winner stays."""

    candidate: C
    index: int
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    gave_up: trio.Event = field(default_factory=trio.Event)
    finished: trio.Event = field(default_factory=trio.Event)


class Race(Generic[C, T]):
    """The async context manager `race()` returns; single use."""

    def __init__(
        self,
        candidates: list[C],
        attempt: AttemptFactory[C, T],
        is_retryable: Callable[[Exception], bool],
        hedge_delay: Callable[[C], float | None],
        retry: Callable[[C], RetryPolicy],
    ) -> None:
        self._candidates = candidates
        self._attempt = attempt
        self._is_retryable = is_retryable
        self._hedge_delay = hedge_delay
        self._retry = retry
        self._slots: list[_Slot[C]] = []
        self._tries: list[_Try[C]] = []
        self._launching = trio.CancelScope()
        self._settled = trio.Event()  # a winner, a fatal error, or every candidate gave up
        self._released = trio.Event()  # the caller's block is over: close the winner
        self._all_started = False
        self._running = 0
        self._winner: tuple[_Slot[C], T] | None = None
        self._fatal: Exception | None = None
        self._close_error: Exception | None = None
        self._nursery_manager: AbstractAsyncContextManager[trio.Nursery] | None = None
        self._entered = False
        self._first_index = 0  # candidates before it were tried inline, without a task
        self._inline: AbstractAsyncContextManager[T] | None = None

    @property
    def attempts(self) -> tuple[Attempt[C], ...]:
        """The attempt records so far: final once entering the race returned or raised,
        including when the caller was cancelled (a client disconnect still gets logged)."""
        return self._records()

    async def __aenter__(self) -> Winner[C, T]:
        if self._entered:
            raise RuntimeError("a race can be entered only once")
        self._entered = True
        if self._may_try_inline():
            won = await self._try_inline()
            if won is not None:
                return won
        self._nursery_manager = manager = trio.open_nursery()
        nursery = await manager.__aenter__()
        try:
            await self._launch(nursery)
            await self._settled.wait()
            for slot in self._slots:
                if self._winner is None or slot is not self._winner[0]:
                    await slot.finished.wait()
        except BaseException as exc:
            # The caller was cancelled (or interrupted): the nursery cancels and closes
            # every attempt, then re-raises.
            await manager.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        if self._winner is None:
            await manager.__aexit__(None, None, None)
            raise self._failure()
        slot, value = self._winner
        return Winner(slot.candidate, slot.index, value, self._records())

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if self._inline is not None:
            await self._close_inline(exc)
            return False
        assert self._nursery_manager is not None
        self._released.set()
        # The block's own exception is not fed to the nursery: the caller gets it as it
        # was raised, not wrapped in an ExceptionGroup. Closing the winner is all that is
        # left in the nursery.
        await self._nursery_manager.__aexit__(None, None, None)
        if self._close_error is not None:
            if exc is None:
                raise self._close_error
            exc.add_note(f"closing the winning attempt also failed: {self._close_error!r}")
        return False

    # -- the first candidate, inline ---------------------------------------------------

    def _may_try_inline(self) -> bool:
        """The first candidate alone, with nothing to race it (no hedge, no retry), needs no
        task of its own: most requests end there, so it is tried in the caller's task and
        a nursery is opened only if the chain has to move on."""
        first = self._candidates[0]
        return self._hedge_delay(first) is None and self._retry(first).max_attempts == 1

    async def _try_inline(self) -> Winner[C, T] | None:
        """The winner, or None when the first candidate failed retryably (the race goes on
        with the next); a non-retryable failure ends the race here."""
        candidate = self._candidates[0]
        record = _Try(candidate, 0, 1, trio.current_time())
        self._tries.append(record)
        attempt = self._attempt(candidate)
        try:
            value = await attempt.__aenter__()
        except Exception as exc:
            record.outcome, record.error = Outcome.FAILED, exc
            record.ended_at = trio.current_time()
            self._first_index = 1
            if not self._is_retryable(exc):
                self._fatal = exc
                raise self._failure() from None
            if len(self._candidates) == 1:
                raise self._failure() from None
            return None
        except BaseException:
            record.ended_at = trio.current_time()  # cancelled: the attempt closed itself
            raise
        record.outcome, record.ended_at = Outcome.WON, trio.current_time()
        self._inline = attempt
        self._settled.set()
        return Winner(candidate, 0, value, self._records())

    async def _close_inline(self, exc: BaseException | None) -> None:
        assert self._inline is not None
        try:
            await self._inline.__aexit__(None, None, None)
        except Exception as close_error:
            if exc is None:
                raise
            exc.add_note(f"closing the winning attempt also failed: {close_error!r}")

    async def _launch(self, nursery: trio.Nursery) -> None:
        """Start candidates in order, each after the previous gave up or went quiet."""
        with self._launching:
            for index, candidate in enumerate(self._candidates):
                if index < self._first_index:
                    continue
                if self._settled.is_set():
                    break
                slot = _Slot(candidate, index)
                self._slots.append(slot)
                self._running += 1
                nursery.start_soon(self._run_slot, slot)
                if index == len(self._candidates) - 1:
                    break
                delay = self._hedge_delay(candidate)
                with trio.move_on_after(math.inf if delay is None else delay):
                    await slot.gave_up.wait()
        self._all_started = True
        self._settle_if_exhausted()

    async def _run_slot(self, slot: _Slot[C]) -> None:
        try:
            with slot.scope:
                await self._try_candidate(slot)
        finally:
            slot.finished.set()

    async def _try_candidate(self, slot: _Slot[C]) -> None:
        policy = self._retry(slot.candidate)
        for try_number in range(1, policy.max_attempts + 1):
            if try_number > 1:
                await trio.sleep(policy.delay_before(try_number))
            error = await self._one_try(slot, try_number)
            if error is None or self._settled.is_set():
                return
            if not self._is_retryable(error):
                self._fatal = error
                self._settle()
                return
        slot.gave_up.set()
        self._running -= 1
        self._settle_if_exhausted()

    async def _one_try(self, slot: _Slot[C], try_number: int) -> Exception | None:
        """Run one attempt; the winner holds its context open until released.

        Returns the attempt's failure, or None when it won or was closed as a loser.
        """
        record = _Try(slot.candidate, slot.index, try_number, trio.current_time())
        self._tries.append(record)
        produced = False
        try:
            async with self._attempt(slot.candidate) as value:
                produced = True
                if self._claim(slot, record, value):
                    await self._released.wait()
        except Exception as exc:
            if record.outcome is Outcome.WON:
                self._close_error = exc
            elif produced:
                record.error = exc  # a loser whose closing failed: noted, not raised
            else:
                record.outcome, record.error = Outcome.FAILED, exc
                return exc
        finally:
            if record.ended_at is None:
                record.ended_at = trio.current_time()
        return None

    def _claim(self, slot: _Slot[C], record: _Try[C], value: T) -> bool:
        if self._settled.is_set():
            return False  # it produced a result in the same instant as the winner, or later
        record.outcome, record.ended_at = Outcome.WON, trio.current_time()
        self._winner = (slot, value)
        self._settle()
        return True

    def _settle(self) -> None:
        """The race is decided: stop launching and cancel every attempt but the winner."""
        self._settled.set()
        self._launching.cancel()
        for slot in self._slots:
            if self._winner is None or slot is not self._winner[0]:
                slot.scope.cancel()

    def _settle_if_exhausted(self) -> None:
        if self._all_started and self._running == 0:
            self._settled.set()

    def _records(self) -> tuple[Attempt[C], ...]:
        started = [t.freeze() for t in self._tries]
        not_started = [
            Attempt(candidate, index, 0, Outcome.NOT_STARTED)
            for index, candidate in enumerate(self._candidates)
            if index >= self._first_index + len(self._slots)
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
