"""Agent counters shared by every worker and node through a Redis-protocol server.

`MemoryCounters` is exact for one process because check-and-take runs with no await in
between; several processes need one owner of the counters, and here it is the server:
admission is one atomic script (`lua.ADMIT`: every agent limit checked in the order of
`gateway.agents.gate.check`, then the estimate and the request taken), a request's end
another (`lua.SETTLE`: the real amounts replace the estimate). Refusals are built from
the figures the script returns, by the same pure `check`, so their bodies are the
in-memory ones.

A request's end must not wait for the network (holds are released in `finally` paths),
so settlements go through a bounded channel to `settle_worker`. A reservation is leased
for `lease_s`, renewed every third of it while the request lives (`renew_leases`); one whose
worker crashed is given back when its lease ends. The first script for an agent, a day,
a month or a session seeds the server's figures from the usage log (`Loader`), so the
server restarting empty hands out no fresh budget either.

The server unavailable: as for the key limits, 503 `limits_unavailable` (fail closed),
or admitted without agent limits when `fail_open`.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable

import attrs
import trio

from gateway.agents import lua
from gateway.agents.book import AgentBook
from gateway.agents.counters import Amounts, Figures, Reservation, period_keys
from gateway.agents.limits import Limits
from gateway.platform.config import Settings
from gateway.platform.resp import SERVER_FAILURES, RedisClient, Reply, Script
from gateway.upstream.limits.shared import (
    SharedUnavailable,
    admit_unchecked,
    limits_unavailable,
    run_shared_script,
)

logger = logging.getLogger(__name__)

SETTLE_QUEUE = 4096
SETTLED = "\ns"  # the suffix of a session's settled cost in the `ses` hash
# Order of the limits in the script's arguments.
LIMIT_ORDER = (
    "requests_per_minute",
    "concurrent_sessions",
    "cost_per_session",
    "cost_daily",
    "cost_monthly",
    "audio_minutes_daily",
    "ocr_pages_daily",
    "embedding_tokens_daily",
    "audio_minutes_monthly",
    "ocr_pages_monthly",
)
# What seeding reads from the usage log: (today, this month, the session) for an agent.
Loader = Callable[[str, str], Awaitable[tuple[Amounts, Amounts, float]]]


@attrs.frozen
class Settlement:
    reservation: Reservation
    actual: Amounts


@attrs.define(eq=False)
class SharedAgentCounters:
    client: RedisClient
    loader: Loader
    prefix: str = "gw:"
    timeout_s: float = 2.0
    lease_s: float = 30.0
    idle_s: float = 300.0
    fail_open: bool = False
    wall: Callable[[], float] = time.time
    _send: trio.MemorySendChannel[Settlement] = attrs.field(init=False)
    _receive: trio.MemoryReceiveChannel[Settlement] = attrs.field(init=False)
    _live: dict[str, Reservation] = attrs.field(factory=dict, init=False)
    dropped: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[Settlement](SETTLE_QUEUE)

    async def take(
        self, agent_id: str, key_id: str, session: str, limits: Limits, amounts: Amounts
    ) -> tuple[Figures, Reservation | None, str]:
        """Check every limit and take the request if none refuses, atomically: the
        figures before, the reservation (None when refused), and the refusing limit's
        name (`ok`). Raises the 503 when the server is unavailable and the policy is
        closed; with `fail_open`, admits with a reservation that settles nowhere.
        Cancellation: the script ran whole (and its lease will end) or not at all."""
        hold_id = secrets.token_hex(8)
        try:
            status, figures = await self._admit(
                agent_id, key_id, session, limits, amounts, take=True, hold_id=hold_id
            )
        except SharedUnavailable as exc:
            log = "shared agent counters unavailable, admitting"
            admit_unchecked(exc, fail_open=self.fail_open, log=log)
            day, month = period_keys(self.wall())
            unlimited = Reservation(agent_id, session, amounts, day, month, done=True)
            return _empty(day, month), unlimited, "ok"
        if status != "ok":
            return figures, None, status
        reservation = Reservation(
            agent_id, session, amounts, figures.day, figures.month, hold_id=hold_id
        )
        self._live[hold_id] = reservation
        return figures, reservation, status

    async def current(self, agent_id: str, key_id: str, session: str) -> Figures:
        """The figures now (nothing is taken); 503 when the server is unavailable."""
        try:
            _, figures = await self._admit(
                agent_id, key_id, session, {}, Amounts(), take=False, hold_id=""
            )
        except SharedUnavailable as exc:
            raise limits_unavailable() from exc
        return figures

    async def _admit(
        self,
        agent_id: str,
        key_id: str,
        session: str,
        limits: Limits,
        amounts: Amounts,
        *,
        take: bool,
        hold_id: str,
    ) -> tuple[str, Figures]:
        day, month = period_keys(self.wall())
        args = self._args(day, month, session, limits, amounts, take, hold_id)
        reply = await self._call(lua.ADMIT, self._keys(agent_id, day, month), [*args, "", "", ""])
        if _status(reply) == "seed":
            daily, monthly, session_cost = await self.loader(key_id, session)
            seeds = [_csv(daily), _csv(monthly), repr(session_cost)]
            reply = await self._call(lua.ADMIT, self._keys(agent_id, day, month), [*args, *seeds])
        return _status(reply), figures_of(reply, day, month)

    def _args(
        self,
        day: str,
        month: str,
        session: str,
        limits: Limits,
        amounts: Amounts,
        take: bool,
        hold_id: str,
    ) -> list[bytes | str | int | float]:
        values = [limits.get(name) for name in LIMIT_ORDER]
        return [
            day,
            month,
            session,
            int(self.idle_s * 1000),
            int(self.lease_s * 1000),
            "1" if take else "0",
            hold_id,
            *(-1 if value is None else repr(float(value)) for value in values),
            *(repr(x) for x in _units(amounts)),
        ]

    def _keys(self, agent_id: str, day: str, month: str) -> list[str]:
        base = f"{self.prefix}agt:{{{agent_id}}}"
        names = ("req", "ref", f"day:{day}", f"month:{month}", "ses", "seen", "infl", "res")
        return [f"{base}:{name}" for name in names]

    async def _call(
        self, script: Script, keys: list[str], args: list[bytes | str | int | float]
    ) -> Reply:
        return await run_shared_script(self.client, script, keys, args, timeout_s=self.timeout_s)

    async def sessions(self, agent_id: str) -> dict[str, tuple[float, int, bool]]:
        """Each session the server knows: (cost settled, requests in flight, active).
        Three reads, not one snapshot: a listing for people, not for admission."""
        day, month = period_keys(self.wall())
        keys = self._keys(agent_id, day, month)
        try:
            with trio.fail_after(self.timeout_s):
                costs = await self.client.execute("HGETALL", keys[4])
                seen = await self.client.execute("ZRANGE", keys[5], 0, -1, "WITHSCORES")
                held = await self.client.execute("HGETALL", keys[7])
        except SERVER_FAILURES as exc:
            raise limits_unavailable() from exc
        return _session_rows(costs, seen, held, self.wall() * 1000 - self.idle_s * 1000)

    # -- ends of requests --------------------------------------------------------------------

    def settle(self, reservation: Reservation, actual: Amounts) -> None:
        """Queue the settlement (never waits); only the first call counts."""
        if reservation.done:
            return
        reservation.done = True
        self._live.pop(reservation.hold_id, None)
        try:
            self._send.send_nowait(Settlement(reservation, actual))
        except trio.WouldBlock:
            self.dropped += 1  # its lease gives the estimate back; the actual is lost
            logger.warning("agent settlement queue full; a settlement was dropped")

    async def settle_worker(self) -> None:
        """Send settlements, one at a time. Cancellation: the one being sent may be lost
        (its lease gives the estimate back)."""
        async for item in self._receive.clone():
            await self._settle(item)

    async def settle_pending(self) -> None:
        while True:
            try:
                item = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                return
            await self._settle(item)

    async def _settle(self, item: Settlement) -> None:
        r = item.reservation
        day, month = period_keys(self.wall())
        args: list[bytes | str | int | float] = [
            day,
            month,
            r.hold_id,
            *(repr(x) for x in _units(item.actual)),
            r.session,
        ]
        try:
            await self._call(lua.SETTLE, self._keys(r.agent_id, day, month), args)
        except SharedUnavailable as exc:
            self.dropped += 1
            logger.warning("could not settle an agent request on the shared counters: %s", exc)

    async def renew_leases(self) -> None:
        """Once: extend the lease of every reservation of this process in flight."""
        live = list(self._live.values())
        if not live:
            return
        keys: list[str] = []
        args: list[bytes | str | int | float] = [int(self.lease_s * 1000)]
        for r in live:
            mine = self._keys(r.agent_id, r.day, r.month)
            keys += [mine[6], mine[5]]
            args += [r.hold_id, r.session]
        try:
            await self._call(lua.RENEW, keys, args)
        except SharedUnavailable as exc:
            logger.warning("could not renew agent reservations in flight: %s", exc)

    @property
    def live(self) -> int:
        return len(self._live)


def _pairs(reply: Reply) -> list[tuple[str, str]]:
    """A flat reply (HGETALL, ZRANGE WITHSCORES) as (name, value) pairs."""
    if not isinstance(reply, list):
        return []
    items = [x.decode(errors="replace") for x in reply if isinstance(x, bytes)]
    return list(zip(items[::2], items[1::2], strict=True))


def _session_rows(
    costs: Reply, seen: Reply, held: Reply, active_after_ms: float
) -> dict[str, tuple[float, int, bool]]:
    settled = {
        name[: -len(SETTLED)]: float(value)
        for name, value in _pairs(costs)
        if name.endswith(SETTLED)
    }
    last = {name: float(score) for name, score in _pairs(seen)}
    in_flight: dict[str, int] = {}
    for _, raw in _pairs(held):
        session = str(json.loads(raw).get("session", ""))
        in_flight[session] = in_flight.get(session, 0) + 1
    names = set(settled) | set(last) | set(in_flight)
    return {
        name: (
            settled.get(name, 0.0),
            in_flight.get(name, 0),
            in_flight.get(name, 0) > 0 or last.get(name, -1.0) > active_after_ms,
        )
        for name in names
    }


def _units(amounts: Amounts) -> tuple[float, float, float, float]:
    return (amounts.cost, amounts.audio_minutes, amounts.ocr_pages, amounts.embedding_tokens)


def _csv(amounts: Amounts) -> str:
    return ",".join(repr(float(x)) for x in _units(amounts))


def _status(reply: Reply) -> str:
    if not isinstance(reply, list) or not reply or not isinstance(reply[0], bytes):
        raise SharedUnavailable(f"unexpected reply from the agent script: {reply!r}")
    return reply[0].decode()


def figures_of(reply: Reply, day: str, month: str) -> Figures:
    """The script's figures (see `lua.ADMIT`)."""
    assert isinstance(reply, list)
    v = [float(x.decode()) if isinstance(x, bytes) else float(0) for x in reply[1:]]
    if len(v) != 24:
        raise SharedUnavailable(f"unexpected figures from the agent script: {reply!r}")
    daily, daily_settled, monthly, monthly_settled = (
        Amounts(*v[0:4]),
        Amounts(*v[4:8]),
        Amounts(*v[8:12]),
        Amounts(*v[12:16]),
    )
    return Figures(
        day=day,
        month=month,
        daily=daily,
        monthly=monthly,
        daily_settled=daily_settled,
        monthly_settled=monthly_settled,
        session_cost=v[16],
        session_cost_settled=v[17],
        session_active=v[18] == 1,
        active_sessions=int(v[19]),
        requests_last_minute=int(v[20]),
        first_request_expires_in=v[21] / 1000,
        rpm_refusals=int(v[22]),
        in_flight=int(v[23]),
    )


def _empty(day: str, month: str) -> Figures:
    nothing = Amounts()
    return Figures(day, month, nothing, nothing, nothing, nothing, 0, 0, False, 0, 0, 0, 0, 0)


def shared_agent_counters(
    settings: Settings, client: RedisClient, book: AgentBook
) -> SharedAgentCounters:
    """The shared counters of the settings' server, seeded from `book`'s usage log."""
    return SharedAgentCounters(
        client,
        book.spent_for,
        prefix=settings.redis_prefix,
        timeout_s=settings.redis_timeout_s,
        lease_s=settings.redis_lease_s,
        idle_s=settings.agent_session_idle_s,
        fail_open=settings.redis_fail_open,
    )
