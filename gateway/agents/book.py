"""The agents the gateway has seen, in memory: each one's record, effective limits and
counters, loaded from the store once and kept in step by the management API.

Admission reads an agent from here for every request, so the record and the
organisation's limits are cached; a change (patch, suspension, deletion) replaces or
drops the entry. The first sight of an agent also seeds its counters with today's and
this month's spending from the usage log (after flushing the write-behind log), so a
restart never hands out a fresh budget; a session's cost is read back from the usage log
when the session is first seen (`seed_session`). Concurrent first sights share one load.
With several processes, a change made in one drops the others' copies (`on_change`,
`gateway.agents.agent_events`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import attrs
import trio

from gateway.agents.counters import Amounts, Figures, MemoryCounters, Reservation
from gateway.agents.limits import Limits, effective, organization_ceilings
from store import agents as agent_store
from store.agents import AgentRecord, Spent
from store.db import Database

if TYPE_CHECKING:
    from gateway.agents.shared import SharedAgentCounters

NOTICE_QUEUE = 1000
EVERY_AGENT = "*"


@attrs.frozen
class Loaded:
    record: AgentRecord
    limits: Limits
    ceilings: Limits


@attrs.frozen
class Notice:
    """An agent's spending changed: the alert worker checks its thresholds."""

    agent_id: str
    session: str


@attrs.define(eq=False)
class AgentBook:
    db: Database
    flush: Callable[[], Awaitable[None]]
    counters: MemoryCounters = attrs.field(factory=MemoryCounters)
    # The counters on a Redis-protocol server when several processes count (None: one
    # process, `counters` in memory).
    shared: SharedAgentCounters | None = None
    _loaded: dict[str, Loaded] = attrs.field(factory=dict)
    _loading: dict[str, trio.Event] = attrs.field(factory=dict)
    # Told of every change made here (`gateway.agents.agent_events` broadcasts it).
    on_change: Callable[[str], None] | None = None
    _send: trio.MemorySendChannel[Notice] = attrs.field(init=False)
    notices: trio.MemoryReceiveChannel[Notice] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._send, self.notices = trio.open_memory_channel[Notice](NOTICE_QUEUE)

    async def get(self, agent_id: str) -> Loaded | None:
        """The agent with its limits (None once deleted). Cancellation: a cancelled load
        leaves nothing cached and wakes the waiters, who load again."""
        while True:
            found = self._loaded.get(agent_id)
            if found is not None:
                return found
            pending = self._loading.get(agent_id)
            if pending is None:
                break
            await pending.wait()
        done = self._loading[agent_id] = trio.Event()
        try:
            return await self._load(agent_id)
        finally:
            del self._loading[agent_id]
            done.set()

    async def _load(self, agent_id: str) -> Loaded | None:
        record = await self.db.run(lambda d: agent_store.get(d, agent_id))
        if record is None:
            return None
        return await self.refresh(record)

    async def _seed(self, record: AgentRecord) -> None:
        """Seed the counters of an agent this process has not counted yet (the shared
        counters seed themselves)."""
        if self.shared is not None or self.counters.known(record.id):
            return
        await self.flush()
        daily, monthly = await self._spent(record.key_id)
        self.counters.baseline(record.id, daily, monthly)

    async def seed_session(self, loaded: Loaded, session: str) -> None:
        """Read back a session's cost the first time this process sees it (after
        flushing the write-behind log), so a restart never hands a session a fresh
        `cost_per_session`. Concurrent first sights may both read; the first seeds."""
        agent_id, key_id = loaded.record.id, loaded.record.key_id
        if self.counters.knows_session(agent_id, session):
            return
        await self.flush()
        cost = await self.db.run(lambda d: agent_store.session_spent(d, key_id, session))
        self.counters.seed_session(agent_id, session, cost)

    async def spent_for(self, key_id: str, session: str) -> tuple[Amounts, Amounts, float]:
        """What the usage log holds for an agent's key: today, this month, the session
        (seeding the shared counters)."""
        await self.flush()
        daily, monthly = await self._spent(key_id)
        cost = await self.db.run(lambda d: agent_store.session_spent(d, key_id, session))
        return daily, monthly, cost

    async def _with_limits(self, record: AgentRecord) -> Loaded:
        org = record.organization_id
        stored = await self.db.run(lambda d: agent_store.organization_limits(d, org))
        ceilings = organization_ceilings(stored)
        return Loaded(record, effective(record.limits, ceilings), ceilings)

    async def _spent(self, key_id: str) -> tuple[Amounts, Amounts]:
        now = datetime.fromtimestamp(self.counters.wall(), UTC)
        day = now.replace(hour=0, minute=0, second=0, microsecond=0)
        month = day.replace(day=1)
        daily, monthly = await self.db.run(
            lambda d: (
                agent_store.spent_since(d, key_id, day),
                agent_store.spent_since(d, key_id, month),
            )
        )
        return _amounts(daily), _amounts(monthly)

    async def refresh(self, record: AgentRecord) -> Loaded:
        """Cache the agent as stored (after a change, or on first sight)."""
        await self._seed(record)
        loaded = await self._with_limits(record)
        self._loaded[record.id] = loaded
        return loaded

    async def changed(self, record: AgentRecord) -> Loaded:
        """Cache the agent as just changed here (limits, suspension) and tell the other
        processes, which drop their copy."""
        loaded = await self.refresh(record)
        self._announce(record.id)
        return loaded

    def forget_limits(self) -> None:
        """Drop every cached agent (an organisation's limits changed): each is read
        again, with its limits, at its next request; the counters stay. The other
        processes are told to do the same."""
        self.drop_all()
        self._announce(EVERY_AGENT)

    def forget(self, agent_id: str) -> None:
        self._loaded.pop(agent_id, None)
        self.counters.forget(agent_id)
        self._announce(agent_id)

    def drop(self, agent_id: str) -> None:
        """Another process changed the agent: read it again at its next request."""
        self._loaded.pop(agent_id, None)

    def drop_all(self) -> None:
        self._loaded.clear()

    async def figures(self, loaded: Loaded, session: str) -> Figures:
        """The agent's figures now (shared ones when several processes count)."""
        if self.shared is not None:
            return await self.shared.current(loaded.record.id, loaded.record.key_id, session)
        await self.seed_session(loaded, session)
        return self.counters.current(loaded.record.id, session)

    async def session_rows(self, agent_id: str) -> dict[str, tuple[float, int, bool]]:
        """Each known session: (cost settled, requests in flight, active)."""
        if self.shared is not None:
            return await self.shared.sessions(agent_id)
        return self.counters.sessions(agent_id)

    def settle(self, reservation: Reservation, actual: Amounts) -> None:
        """Replace a reservation by what the request spent (never waits)."""
        if self.shared is not None and reservation.hold_id:
            self.shared.settle(reservation, actual)
        else:
            self.counters.settle(reservation, actual)

    def _announce(self, agent_id: str) -> None:
        if self.on_change is not None:
            self.on_change(agent_id)

    def notify(self, agent_id: str, session: str) -> None:
        """Tell the alert worker; a full queue drops the notice (the next one re-checks
        every threshold, so a crossing is late rather than lost)."""
        with contextlib.suppress(trio.WouldBlock):
            self._send.send_nowait(Notice(agent_id, session))


def _amounts(spent: Spent) -> Amounts:
    return Amounts(
        cost=spent.cost,
        audio_minutes=spent.audio_seconds / 60,
        ocr_pages=float(spent.pages),
        embedding_tokens=float(spent.embedding_tokens),
    )
