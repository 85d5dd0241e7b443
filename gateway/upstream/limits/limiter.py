"""Admission of requests under each key's rpm, tpm, daily, monthly and concurrency limits.

Exactness: the gateway runs ONE process, and every piece of limit state lives in memory,
touched only from trio tasks of that process's single thread. `admit` checks every limit
and then takes from every counter without awaiting in between, so no other task can run
between the check and the take: two requests can never both take the last unit. Several
worker processes would each count alone; running more than one needs the counters moved
into a shared store, which this module deliberately does not do.

A refused request takes nothing (all limits are checked before any is taken). So a
request refused by one limit is never counted by another: the daily and monthly counts
hold admitted requests only, like the usage log they are loaded from (a refusal leaves no
usage record). Tokens are reserved when a request is admitted (prompt estimate plus
`max_tokens` or a default) and settled with the real count when it ends, so that
concurrent requests cannot overrun the token limit while their answers are still unknown.

Memory stays bounded: a key's windows hold at most one entry per admitted request (two
when a settlement charges extra after its reservation expired) in the last minute, and a
key whose windows are empty, with nothing in flight and nobody waiting, is dropped by a
sweep that runs at most once a minute; day and month counts are dropped when their month
is over (see `gateway.upstream.limits.periods`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal, Protocol

import attrs
import trio

from gateway.upstream.limits.headers import RateLimitExceeded, Snapshot, refusal, window_headers
from gateway.upstream.limits.periods import CountLoader, PeriodBook
from gateway.upstream.limits.policy import EffectiveLimits, effective_limits, reservation_tokens
from gateway.upstream.limits.upstream import UpstreamMeter
from gateway.upstream.limits.windows import (
    WINDOW_S,
    Entry,
    PeriodCount,
    SlidingLog,
    next_midnight,
    next_month_start,
)
from providers.types import Usage
from store.keys import ApiKeyRecord

Clock = Callable[[], float]
MAX_WAITERS_PER_KEY = 64


@attrs.define(eq=False)
class _KeyState:
    requests: SlidingLog = attrs.field(factory=SlidingLog)
    tokens: SlidingLog = attrs.field(factory=SlidingLog)
    inflight: int = 0
    waiters: int = 0
    _changed: trio.Event | None = None
    _limits: tuple[ApiKeyRecord, EffectiveLimits] | None = None

    def limits_of(self, key: ApiKeyRecord) -> EffectiveLimits:
        """`effective_limits(key)`, kept while the key's record is the same object (an
        edit replaces the record, so new limits apply to its next request)."""
        cached = self._limits
        if cached is not None and cached[0] is key:
            return cached[1]
        limits = effective_limits(key)
        self._limits = (key, limits)
        return limits

    def idle(self, now: float) -> bool:
        return (
            self.inflight == 0
            and self.waiters == 0
            and self.requests.is_empty(now)
            and self.tokens.is_empty(now)
        )

    def changed(self) -> trio.Event:
        """An event set the next time capacity frees (a release or a token refund)."""
        if self._changed is None:
            self._changed = trio.Event()
        return self._changed

    def notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None


@attrs.define(eq=False)
class Admission:
    """One admitted request's hold on its key's limits.

    `release()` gives the concurrency slot back (idempotent); use the admission as a
    context manager so that every path, cancellation included, releases it. `settle()`
    replaces the token reservation with the real count; a request released unsettled
    keeps its reservation charged.
    """

    _limiter: RateLimiter
    key: ApiKeyRecord
    reserved_tokens: int
    _state: _KeyState
    _reservation: Entry
    _settled: bool = False
    _released: bool = False
    usage: Usage | None = None  # what the request used, once settled

    @property
    def released(self) -> bool:
        return self._released

    def headers(self) -> dict[str, str]:
        """The rate-limit headers for this request's answer (figures as of now)."""
        return self._limiter.window_headers(self.key, self._state)

    def settle(self, usage: Usage) -> None:
        """Charge what the request really used (only the first call counts): its tokens
        replace the reservation in the tpm window; the whole metered usage is kept."""
        if self._settled:
            return
        self._settled = True
        self.usage = usage
        self._limiter._settle(self, self._state, self._reservation, max(0, usage.total_tokens))

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        self._state.inflight -= 1
        self._state.notify()

    def __enter__(self) -> Admission:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class Unlimited:
    """What a request holds when per-key limits are switched off (`rate_limits_enabled`):
    the `Admission` interface, taking and giving back nothing, adding no headers."""

    released = False

    def headers(self) -> dict[str, str]:
        return {}

    def settle(self, usage: Usage) -> None:
        return None

    def release(self) -> None:
        return None

    def __enter__(self) -> Unlimited:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


class Hold(Protocol):
    """What an admitted request holds, whichever limits admitted it: an `Admission`,
    `Unlimited`, or a hold that wraps one (an agent's, `gateway.agents.hold`)."""

    @property
    def released(self) -> bool: ...

    def headers(self) -> dict[str, str]: ...

    def settle(self, usage: Usage) -> None: ...

    def release(self) -> None: ...

    def __enter__(self) -> Hold: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@attrs.define(eq=False)
class RateLimiter:
    """The limits of every key, in memory (see the module docstring for why that is exact).

    `clock` is monotonic seconds (trio's clock, so tests can use `autojump_clock`); `wall`
    is Unix time, used for the UTC day and month and for the reset times shown to clients.
    `count_loader` gives a key's requests of today and of this month when its daily or
    monthly limit is first needed; with None the counts start at zero.
    """

    count_loader: CountLoader | None = None
    clock: Clock = trio.current_time
    wall: Clock = time.time
    max_waiters_per_key: int = MAX_WAITERS_PER_KEY
    upstream: UpstreamMeter = attrs.field(init=False)
    _periods: PeriodBook = attrs.field(init=False)
    _keys: dict[str, _KeyState] = attrs.field(factory=dict, init=False)
    _last_sweep: float | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        self.upstream = UpstreamMeter(self.clock)
        self._periods = PeriodBook(self.count_loader, self.wall)

    @property
    def waiting(self) -> int:
        """Requests waiting for capacity (strategy `queue`), across every key: the queue
        depth the analytics realtime page shows."""
        return sum(state.waiters for state in self._keys.values())

    # -- admitting ---------------------------------------------------------------------------

    def _limits(self, key: ApiKeyRecord) -> EffectiveLimits:
        state = self._keys.get(key.id)
        return effective_limits(key) if state is None else state.limits_of(key)

    def estimate(self, key: ApiKeyRecord, prompt_tokens: int, max_tokens: int | None) -> int:
        """The tokens to reserve for a request (see `policy.reservation_tokens`)."""
        return reservation_tokens(self._limits(key), prompt_tokens, max_tokens)

    async def acquire(self, key: ApiKeyRecord, estimated_tokens: int) -> Admission:
        """Admit now or raise `RateLimitExceeded` (a 429 `ApiError`).

        Cancellation: the only wait is the first load of the key's day and month counts; a
        cancelled call has taken nothing.
        """
        await self.load_counts(key)
        return self.admit(key, estimated_tokens)

    async def wait_for_capacity(
        self, key: ApiKeyRecord, estimated_tokens: int, max_wait_s: float
    ) -> Admission:
        """Admit as soon as the limits allow, within `max_wait_s`; else raise the 429.

        Waiting wakes exactly when capacity can have freed: at the moment the blocking
        window entry expires, or when a request of this key releases its slot or refunds
        tokens. It gives up at once when waiting cannot help within the deadline (daily or
        monthly limit, a request larger than the token limit, or too many waiters on this
        key).
        Waiters are not served in arrival order. Cancellation: nothing has been taken.
        """
        deadline = self.clock() + max_wait_s
        await self.load_counts(key)
        try:
            return self.admit(key, estimated_tokens)
        except RateLimitExceeded as first:
            refused = first
        state = self._keys.setdefault(key.id, _KeyState())
        if state.waiters >= self.max_waiters_per_key:
            raise refused
        state.waiters += 1
        try:
            while self._worth_waiting(refused, deadline):
                wake_at = deadline if refused.retry_at is None else min(deadline, refused.retry_at)
                with trio.move_on_at(wake_at):
                    await state.changed().wait()
                await self.load_counts(key)  # a new month may have dropped the counts
                try:
                    return self.admit(key, estimated_tokens)
                except RateLimitExceeded as again:
                    refused = again
            raise refused
        finally:
            state.waiters -= 1

    def _worth_waiting(self, refused: RateLimitExceeded, deadline: float) -> bool:
        if self.clock() >= deadline:
            return False
        if refused.limit_type == "concurrent":
            return True
        return refused.retry_at is not None and refused.retry_at <= deadline

    def admit(self, key: ApiKeyRecord, estimated_tokens: int) -> Admission:
        """Check every limit, then take from every counter, with no await in between.

        Raises `RateLimitExceeded` having taken nothing. With a `count_loader`, a key with a
        daily or monthly limit needs `load_counts` first (`acquire` does it).
        """
        now = self.clock()
        state = self._keys.get(key.id) or _KeyState()
        limits = state.limits_of(key)
        # Before the sweep: moved on to today, the key's counts are not swept as past ones.
        periods = self._periods.current(key.id, limited=limits.counts_periods)
        self._maybe_sweep(now)
        refused = self._check(key, state, periods, limits, estimated_tokens, now)
        if refused is not None:
            raise refused
        state.requests.take(1, now)
        reservation = state.tokens.take(estimated_tokens, now)
        state.inflight += 1
        if periods is not None:
            periods.daily += 1
            periods.monthly += 1
        self._keys[key.id] = state
        return Admission(self, key, estimated_tokens, state, reservation)

    def _check(
        self,
        key: ApiKeyRecord,
        state: _KeyState,
        periods: PeriodCount | None,
        limits: EffectiveLimits,
        estimated_tokens: int,
        now: float,
    ) -> RateLimitExceeded | None:
        """The first limit this request would break (monthly, daily, rpm, tpm, concurrent),
        if any. The month comes first: when both it and the day are spent, the day's reset
        would not admit the request, so the answer names the month's."""
        if periods is not None:
            spent = self._spent_period(key, periods, limits, now)
            if spent is not None:
                return spent
        request_at = state.requests.free_at(1, limits.rpm, now)
        if request_at != now:
            return self._timed("rpm", key, request_at, now)
        tokens_at = state.tokens.free_at(estimated_tokens, limits.tpm, now)
        if tokens_at != now:
            return self._timed("tpm", key, tokens_at, now, requested=estimated_tokens)
        if state.inflight >= limits.concurrent:
            return refusal("concurrent", self.snapshot(key), wait_s=None, retry_at=None)
        return None

    def _spent_period(
        self, key: ApiKeyRecord, periods: PeriodCount, limits: EffectiveLimits, now: float
    ) -> RateLimitExceeded | None:
        """The 429 of the monthly or daily limit when it is spent; the retry is at the
        start of the next UTC month or day."""
        wall = self.wall()
        if limits.monthly is not None and periods.monthly >= limits.monthly:
            wait = next_month_start(wall) - wall
            return refusal("monthly", self.snapshot(key), wait_s=wait, retry_at=now + wait)
        if limits.daily is not None and periods.daily >= limits.daily:
            wait = next_midnight(wall) - wall
            return refusal("daily", self.snapshot(key), wait_s=wait, retry_at=now + wait)
        return None

    def _timed(
        self,
        limit_type: Literal["rpm", "tpm"],
        key: ApiKeyRecord,
        free_at: float | None,
        now: float,
        requested: int | None = None,
    ) -> RateLimitExceeded:
        wait = None if free_at is None else free_at - now
        return refusal(
            limit_type,
            self.snapshot(key),
            wait_s=wait,
            retry_at=free_at,
            requested=requested,
        )

    def _settle(
        self, admission: Admission, state: _KeyState, reservation: Entry, actual: int
    ) -> None:
        """Replace a reservation by the real count: in place while the reservation is still
        in its window; else a charge beyond it is taken now (a refund no longer matters)."""
        reserved, now = reservation.amount, self.clock()
        if state.tokens.adjust(reservation, actual, now):
            if actual < reserved:
                state.notify()
            return
        extra = actual - admission.reserved_tokens
        if extra > 0:
            live = self._keys.setdefault(admission.key.id, state)
            live.tokens.take(extra, now)

    # -- the day and month counts -----------------------------------------------------------

    async def load_counts(self, key: ApiKeyRecord) -> None:
        """Make sure the day and month counts of a key with a daily or monthly limit are in
        memory (read from the usage log once per key and month; concurrent callers share
        one read). Cancellation: a cancelled load leaves nothing loaded, and the next caller
        loads again."""
        if self._limits(key).counts_periods:
            await self._periods.load(key.id)

    # -- figures -----------------------------------------------------------------------------

    async def current(self, key: ApiKeyRecord) -> Snapshot:
        """The key's figures now, its day and month counts loaded first (nothing is
        taken)."""
        await self.load_counts(key)
        return self.snapshot(key)

    def snapshot(self, key: ApiKeyRecord) -> Snapshot:
        """The key's figures now (nothing is taken)."""
        now, wall = self.clock(), self.wall()
        state = self._keys.get(key.id) or _KeyState()
        counted = self._periods.figures(key.id)
        return Snapshot(
            limits=effective_limits(key),
            now=wall,
            requests_used=state.requests.used(now),
            requests_reset_at=wall + (state.requests.reset_at(now) - now),
            tokens_used=state.tokens.used(now),
            tokens_reset_at=wall + (state.tokens.reset_at(now) - now),
            inflight=state.inflight,
            daily_used=None if counted is None else counted[0],
            daily_reset_at=next_midnight(wall),
            monthly_used=None if counted is None else counted[1],
            monthly_reset_at=next_month_start(wall),
        )

    def window_headers(self, key: ApiKeyRecord, state: _KeyState) -> dict[str, str]:
        """The rate-limit headers of an admitted request: `rate_limit_headers` of its
        `snapshot`, from the per-minute windows alone (every answer shows them; the day
        and the month, which take date arithmetic, are not in the headers)."""
        now, wall = self.clock(), self.wall()
        limits = state.limits_of(key)
        requests_reset_in = state.requests.reset_at(now) - now
        return window_headers(
            limits,
            requests_remaining=max(0, limits.rpm - state.requests.used(now)),
            requests_reset_in=requests_reset_in,
            requests_reset_at=wall + requests_reset_in,
            tokens_remaining=max(0, limits.tpm - state.tokens.used(now)),
            tokens_reset_in=state.tokens.reset_at(now) - now,
            inflight=state.inflight,
        )

    # -- memory ------------------------------------------------------------------------------

    def _maybe_sweep(self, now: float) -> None:
        if self._last_sweep is None or now - self._last_sweep >= WINDOW_S:
            self._last_sweep = now
            self.sweep()

    def sweep(self) -> None:
        """Drop idle keys, the day and month counts of past months, and idle upstream
        counters."""
        now = self.clock()
        for key_id in [k for k, s in self._keys.items() if s.idle(now)]:
            del self._keys[key_id]
        self._periods.sweep()
        self.upstream.sweep()

    def tracked(self) -> tuple[int, int]:
        """How many keys have windows, and how many have day and month counts (for tests,
        metrics)."""
        return len(self._keys), len(self._periods)
