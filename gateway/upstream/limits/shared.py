"""Per-key limits shared by every worker and node through a Redis-protocol server.

The in-memory `RateLimiter` is exact because one process owns its counters; several
processes need one owner too, and here it is the server: admission is one atomic script
(`lua.ADMIT`: check every limit, then take from every counter) and a request's end is
another (`lua.SETTLE`: the real token count replaces the reservation, the concurrency
slot is given back). The limits, their order, the 429 answers and the headers are the
same as in memory (`headers.refusal`, `headers.rate_limit_headers`).

A request's end must not wait for the network (the `Hold` interface is synchronous and
runs in `finally` paths), so settlements are queued per API key (bounded). The next
admission of the same key in this process carries its key's queue in its own script
(applied before the checks): under load most ends cost no round trip of their own. What
no admission has carried within `SETTLE_LINGER_S` is sent by the `settle_worker` tasks,
one script per key. If the queue is full, or the server is away, the slot is still freed
by its lease: each admitted request holds its concurrency slot for `lease_s`, renewed
every third of that while the request lives, so a crashed worker's slots expire within
`lease_s`.

The server unavailable (down, unreachable, slower than `timeout_s`): the policy
`fail_open` decides. Closed (the default): the request is refused with a 503
`limits_unavailable` and `Retry-After: 1`; open: it is admitted without limits (and
logged). Every command runs under `timeout_s`, so no request hangs on the server, and
the next request after the server returns reconnects.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from types import TracebackType

import attrs
import trio

from gateway.platform.errors import ApiError
from gateway.platform.resp import SERVER_FAILURES, RedisClient, Reply, Script
from gateway.upstream.limits import lua
from gateway.upstream.limits.headers import (
    LimitType,
    RateLimitExceeded,
    Snapshot,
    rate_limit_headers,
    refusal,
)
from gateway.upstream.limits.limiter import Unlimited
from gateway.upstream.limits.periods import CountLoader
from gateway.upstream.limits.policy import EffectiveLimits, effective_limits, reservation_tokens
from gateway.upstream.limits.windows import (
    day_start,
    month_start,
    next_midnight,
    next_month_start,
    utc_day,
    utc_month_of,
)
from providers.types import Usage
from store.keys import ApiKeyRecord

logger = logging.getLogger(__name__)

REFUSED: dict[int, LimitType] = {
    lua.MONTHLY: "monthly",
    lua.DAILY: "daily",
    lua.RPM: "rpm",
    lua.TPM: "tpm",
    lua.CONCURRENT: "concurrent",
}
SETTLE_QUEUE = 4096
SETTLE_BATCH = 64  # settlements sent in one call at most (their keys and arguments)
# How long an end waits for an admission of its key to carry it before a settle worker
# sends it. Other processes see the slot free this much later (at most); this process's
# own admissions of the key see it at once.
SETTLE_LINGER_S = 0.005
POLL_S = 0.05  # how often a queued request looks again for a concurrency slot
DAY_TTL_S = 2 * 86_400
MONTH_TTL_S = 32 * 86_400


def limits_unavailable() -> ApiError:
    """The 503 of the fail-closed policy: limits cannot be checked, so nothing is admitted."""
    return ApiError(
        503,
        "limits_unavailable",
        "Rate limits cannot be checked right now (the shared limit store is unreachable); "
        "retry shortly.",
        type="api_error",
        headers={"Retry-After": "1"},
        retry_after=1,
    )


class SharedUnavailable(Exception):
    """The shared server could not answer in time (down, unreachable, an error reply,
    slower than the deadline, or a reply the script does not give)."""


async def run_shared_script(
    client: RedisClient,
    script: Script,
    keys: list[str],
    args: list[bytes | str | int | float],
    *,
    timeout_s: float,
) -> Reply:
    """One script under `timeout_s`; every failure of the server becomes
    `SharedUnavailable`, for the caller's unavailable policy. Cancellation: the script
    ran whole on the server or not at all (its reply may be lost)."""
    try:
        with trio.fail_after(timeout_s):
            return await client.run_script(script, keys, args)
    except SERVER_FAILURES as exc:
        raise SharedUnavailable(str(exc) or type(exc).__name__) from exc


def admit_unchecked(exc: SharedUnavailable, *, fail_open: bool, log: str) -> None:
    """The unavailable policy of shared limits: closed (the default) raises the 503
    `limits_unavailable`; open returns, the caller admits without the limits, and `log`
    says so."""
    if not fail_open:
        raise limits_unavailable() from exc
    logger.warning("%s: %s", log, exc)


@attrs.frozen
class Settlement:
    """One request's end, for the settle workers: its real tokens (-1: unknown), and
    whether its concurrency slot is given back."""

    hold: SharedHold
    actual: int
    release: bool


@attrs.define(eq=False)
class SharedHold:
    """One admitted request's hold (the `Admission` interface; see the module docstring)."""

    _limiter: SharedLimiter
    key: ApiKeyRecord
    hold_id: str
    reserved_tokens: int
    snapshot: Snapshot
    usage: Usage | None = None
    _released: bool = False

    @property
    def released(self) -> bool:
        return self._released

    def headers(self) -> dict[str, str]:
        """The rate-limit headers, with the figures as of this request's admission."""
        return rate_limit_headers(self.snapshot)

    def settle(self, usage: Usage) -> None:
        if self.usage is not None:
            return
        self.usage = usage
        if self._released:  # settled after its release: the tokens alone
            self._limiter.enqueue(Settlement(self, max(0, usage.total_tokens), release=False))

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        actual = -1 if self.usage is None else max(0, self.usage.total_tokens)
        self._limiter.enqueue(Settlement(self, actual, release=True))

    def __enter__(self) -> SharedHold:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


@attrs.define(eq=False)
class SharedLimiter:
    """Exact per-key limits on a Redis-protocol server (see the module docstring)."""

    client: RedisClient
    count_loader: CountLoader | None = None
    prefix: str = "gw:"
    timeout_s: float = 2.0
    lease_s: float = 30.0
    fail_open: bool = False
    wall: Callable[[], float] = time.time
    _bell: trio.MemorySendChannel[None] = attrs.field(init=False)
    _rung: trio.MemoryReceiveChannel[None] = attrs.field(init=False)
    _pending: dict[str, list[Settlement]] = attrs.field(factory=dict, init=False)
    _queued: int = attrs.field(default=0, init=False)
    _live: dict[str, SharedHold] = attrs.field(factory=dict, init=False)
    dropped: int = attrs.field(default=0, init=False)
    waiting: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        # A doorbell: one ring wakes a settle worker, however many ends were queued.
        self._bell, self._rung = trio.open_memory_channel[None](1)

    # -- admitting ---------------------------------------------------------------------------

    def estimate(self, key: ApiKeyRecord, prompt_tokens: int, max_tokens: int | None) -> int:
        return reservation_tokens(effective_limits(key), prompt_tokens, max_tokens)

    async def acquire(self, key: ApiKeyRecord, estimated_tokens: int) -> SharedHold | Unlimited:
        """Admit now, or raise the 429 of the first spent limit (503 when the server is
        unavailable and the policy is closed). Cancellation: nothing has been taken (a
        cancelled script either ran whole, and its lease expires, or not at all)."""
        try:
            return await self._admit(key, estimated_tokens)
        except SharedUnavailable as exc:
            return self._unavailable(exc)

    async def wait_for_capacity(
        self, key: ApiKeyRecord, estimated_tokens: int, max_wait_s: float
    ) -> SharedHold | Unlimited:
        """Admit as soon as the limits allow within `max_wait_s`, else raise the 429.

        Other processes free capacity without telling this one, so a waiter looks again
        when the blocking entry leaves its window, or every `POLL_S` for a concurrency
        slot. It gives up at once when waiting cannot help within the deadline.
        Cancellation: nothing has been taken."""
        deadline = trio.current_time() + max_wait_s
        try:
            while True:
                try:
                    return await self._admit(key, estimated_tokens)
                except RateLimitExceeded as refused:
                    wake_at = self._wake_at(refused, deadline)
                    if wake_at is None:
                        raise
                self.waiting += 1  # the realtime page's queue depth
                try:
                    await trio.sleep_until(wake_at)
                finally:
                    self.waiting -= 1
        except SharedUnavailable as exc:
            return self._unavailable(exc)

    @staticmethod
    def _wake_at(refused: RateLimitExceeded, deadline: float) -> float | None:
        now = trio.current_time()
        if now >= deadline:
            return None
        if refused.limit_type == "concurrent":
            return min(deadline, now + POLL_S)
        if refused.retry_at is None or refused.retry_at > deadline:
            return None
        return refused.retry_at

    async def current(self, key: ApiKeyRecord) -> Snapshot:
        """The key's figures now (nothing is taken); raises the 503 when the server is
        unavailable, whatever the policy (there is nothing to show)."""
        try:
            reply = await self._script(key, 0, take=False)
        except SharedUnavailable as exc:
            raise limits_unavailable() from exc
        return self._snapshot(key, reply)

    async def _admit(self, key: ApiKeyRecord, estimated_tokens: int) -> SharedHold:
        hold_id = secrets.token_hex(8)
        # At most one batch rides on a request's own script; the workers send the rest.
        carried = self._take(key.id, most=SETTLE_BATCH)
        try:
            reply = await self._script(
                key, estimated_tokens, take=True, hold_id=hold_id, carried=carried
            )
        except BaseException:
            self._lost(carried, "the admission carrying them failed")
            raise
        status, wait_ms = int(reply[0]), int(reply[1])
        snap = self._snapshot(key, reply)
        if status == lua.OK:
            hold = SharedHold(self, key, hold_id, estimated_tokens, snap)
            self._live[hold_id] = hold
            return hold
        raise self._refusal(REFUSED[status], snap, wait_ms, estimated_tokens)

    def _refusal(
        self, limit_type: LimitType, snap: Snapshot, wait_ms: int, requested: int
    ) -> RateLimitExceeded:
        wait_s: float | None = None if wait_ms < 0 else wait_ms / 1000
        if limit_type == "monthly":
            wait_s = next_month_start(snap.now) - snap.now
        elif limit_type == "daily":
            wait_s = next_midnight(snap.now) - snap.now
        retry_at = None if wait_s is None else trio.current_time() + wait_s
        return refusal(
            limit_type,
            snap,
            wait_s=wait_s,
            retry_at=retry_at,
            requested=requested if limit_type == "tpm" else None,
        )

    async def _script(
        self,
        key: ApiKeyRecord,
        need: int,
        *,
        take: bool,
        hold_id: str = "",
        carried: list[Settlement] | None = None,
    ) -> list[int]:
        """Run ADMIT (or its read-only form), applying the `carried` ends of the key's
        requests first; seeds the day and month counts from the local usage log when the
        server has none for the key (the ends were applied by the first call)."""
        limits = effective_limits(key)
        reply = await self._admit_call(key, limits, need, take, hold_id, None, carried or [])
        if int(reply[0]) == lua.NEEDS_SEED:
            seeds = await self._seeds(key.id)
            reply = await self._admit_call(key, limits, need, take, hold_id, seeds, [])
        return reply

    async def _admit_call(
        self,
        key: ApiKeyRecord,
        limits: EffectiveLimits,
        need: int,
        take: bool,
        hold_id: str,
        seeds: tuple[int, int] | None,
        carried: list[Settlement],
    ) -> list[int]:
        day = utc_day(self.wall())
        args: list[bytes | str | int | float] = [
            limits.rpm,
            limits.tpm,
            limits.concurrent,
            -1 if limits.daily is None else limits.daily,
            -1 if limits.monthly is None else limits.monthly,
            need,
            hold_id,
            int(self.lease_s * 1000),
            "1" if limits.counts_periods else "0",
            "" if seeds is None else seeds[0],
            "" if seeds is None else seeds[1],
            DAY_TTL_S,
            MONTH_TTL_S,
            "1" if take else "0",
        ]
        for item in carried:
            args += _settle_args(item)
        base = self._base(key.id)
        keys = [*self._keys(key.id), f"{base}:day:{day}", f"{base}:month:{utc_month_of(day)}"]
        reply = await self._call(lua.ADMIT, keys, args)
        if not isinstance(reply, list) or len(reply) != 10:
            raise SharedUnavailable(f"unexpected reply from the limit script: {reply!r}")
        return [int(item) if isinstance(item, int) else 0 for item in reply]

    async def _seeds(self, key_id: str) -> tuple[int, int]:
        if self.count_loader is None:
            return 0, 0
        today = utc_day(self.wall())
        counts = await self.count_loader(key_id, day_start(today), month_start(utc_month_of(today)))
        return counts.daily, counts.monthly

    def _snapshot(self, key: ApiKeyRecord, reply: list[int]) -> Snapshot:
        limits = effective_limits(key)
        now = reply[2] / 1000
        counted = limits.counts_periods
        return Snapshot(
            limits=limits,
            now=now,
            requests_used=reply[3],
            requests_reset_at=reply[4] / 1000,
            tokens_used=reply[5],
            tokens_reset_at=reply[6] / 1000,
            inflight=reply[7],
            daily_used=reply[8] if counted else None,
            daily_reset_at=next_midnight(now),
            monthly_used=reply[9] if counted else None,
            monthly_reset_at=next_month_start(now),
        )

    def _unavailable(self, exc: SharedUnavailable) -> Unlimited:
        log = "shared limits unavailable, admitting without limits"
        admit_unchecked(exc, fail_open=self.fail_open, log=log)
        return Unlimited()

    # -- the server --------------------------------------------------------------------------

    def _base(self, key_id: str) -> str:
        return f"{self.prefix}lim:{{{key_id}}}"

    def _keys(self, key_id: str) -> list[str]:
        base = self._base(key_id)
        return [f"{base}:req", f"{base}:tok", f"{base}:amt", f"{base}:infl"]

    async def _call(
        self, script: Script, keys: list[str], args: list[bytes | str | int | float]
    ) -> Reply:
        return await run_shared_script(self.client, script, keys, args, timeout_s=self.timeout_s)

    # -- ends of requests --------------------------------------------------------------------

    def enqueue(self, settlement: Settlement) -> None:
        if settlement.release:
            self._live.pop(settlement.hold.hold_id, None)
        if self._queued >= SETTLE_QUEUE:
            self.dropped += 1  # the lease frees the slot; the reservation stays charged
            return
        self._pending.setdefault(settlement.hold.key.id, []).append(settlement)
        self._queued += 1
        with contextlib.suppress(trio.WouldBlock):  # already rung: a worker takes it too
            self._bell.send_nowait(None)

    def _take(self, key_id: str, most: int | None = None) -> list[Settlement]:
        """The key's queued ends (the first `most` of them), now this caller's to send."""
        queued = self._pending.get(key_id, [])
        if most is None or len(queued) <= most:
            items = self._pending.pop(key_id, [])
        else:
            items, self._pending[key_id] = queued[:most], queued[most:]
        self._queued -= len(items)
        return items

    def _take_all(self) -> list[list[Settlement]]:
        """Every queued end, per key, in groups of at most `SETTLE_BATCH`."""
        groups: list[list[Settlement]] = []
        for key_id in list(self._pending):
            items = self._take(key_id)
            groups += [items[i : i + SETTLE_BATCH] for i in range(0, len(items), SETTLE_BATCH)]
        return groups

    async def settle_worker(self) -> None:
        """Send queued ends until cancelled: once rung, wait `SETTLE_LINGER_S` (an
        admission of the key may carry them meanwhile), then send what is left, one
        script per API key (run several for throughput). Cancellation: the batch being
        sent may be lost (the leases free the slots)."""
        async for _ in self._rung.clone():
            await trio.sleep(SETTLE_LINGER_S)
            for items in self._take_all():
                await self._settle(items)

    async def settle_pending(self) -> None:
        """Send what is queued now (on the way out)."""
        for items in self._take_all():
            await self._settle(items)

    async def _settle(self, items: list[Settlement]) -> None:
        """The settlements of one API key in one script; a failed call is dropped and
        logged: the leases still free the slots, and the reservations stay charged until
        they leave the window."""
        keys: list[str] = []
        args: list[bytes | str | int | float] = []
        for item in items:
            keys += self._keys(item.hold.key.id)[1:]
            args += _settle_args(item)
        try:
            await self._call(lua.SETTLE, keys, args)
        except SharedUnavailable as exc:
            self._lost(items, str(exc))

    def _lost(self, items: list[Settlement], why: str) -> None:
        if items:
            self.dropped += len(items)
            logger.warning("could not settle %d requests on the shared limits: %s", len(items), why)

    async def renew_leases(self) -> None:
        """Once: extend the lease of every request of this process still in flight."""
        holds = list(self._live.values())
        if not holds:
            return
        keys = [self._keys(hold.key.id)[3] for hold in holds]
        args: list[bytes | str | int | float] = [int(self.lease_s * 1000)]
        args += [hold.hold_id for hold in holds]
        try:
            await self._call(lua.RENEW, keys, args)
        except SharedUnavailable as exc:
            logger.warning("could not renew the leases of requests in flight: %s", exc)

    @property
    def live(self) -> int:
        """Requests of this process holding a slot (for tests and metrics)."""
        return len(self._live)


def _settle_args(item: Settlement) -> list[bytes | str | int | float]:
    """One end's five arguments, as `lua.SETTLE` and `lua.ADMIT` read them."""
    hold = item.hold
    release = "1" if item.release else "0"
    return [hold.hold_id, item.actual, hold.reserved_tokens, release, hold.hold_id + ":x"]
