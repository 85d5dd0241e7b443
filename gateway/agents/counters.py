"""What every agent has spent and holds in flight: the one place agent counters live.

The interface is three verbs, so that a shared backend (a Redis-protocol server) can
replace this in-memory one: `current` (the figures now), `reserve` (take a request's
estimate and its slot), `settle` (replace the estimate by what the request really used,
or by nothing when it ended without an answer). In memory, `gate` reads `current` and
calls `reserve` with no await in between, which is what makes check-and-take atomic in
one trio thread; a shared backend must do both in one server-side step.

Cost and the metered units are counted per UTC day and month (settled plus reserved, so
concurrent requests see each other's estimates), cost also per session. A session is
active while it has a request in flight or made one within `idle_s`. Requests and rpm
refusals are kept for the last minute (monotonic clock). Spending loaded from the usage
log (`baseline`) seeds the day and month when an agent is first seen by this process,
and a session's cost when the session is first seen (`seed_session`).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime

import attrs
import trio

WINDOW_S = 60.0
MAX_SESSIONS_PER_AGENT = 10_000
Clock = Callable[[], float]


@attrs.frozen
class Amounts:
    """Quantities agent limits count: USD, audio minutes, OCR pages, embedding tokens."""

    cost: float = 0.0
    audio_minutes: float = 0.0
    ocr_pages: float = 0.0
    embedding_tokens: float = 0.0

    def __add__(self, other: Amounts) -> Amounts:
        return Amounts(
            self.cost + other.cost,
            self.audio_minutes + other.audio_minutes,
            self.ocr_pages + other.ocr_pages,
            self.embedding_tokens + other.embedding_tokens,
        )

    def __sub__(self, other: Amounts) -> Amounts:
        return Amounts(
            self.cost - other.cost,
            self.audio_minutes - other.audio_minutes,
            self.ocr_pages - other.ocr_pages,
            self.embedding_tokens - other.embedding_tokens,
        )


@attrs.frozen
class Figures:
    """One agent (and one of its sessions) now. `*_settled` excludes what is in flight."""

    day: str
    month: str
    daily: Amounts
    monthly: Amounts
    daily_settled: Amounts
    monthly_settled: Amounts
    session_cost: float
    session_cost_settled: float
    session_active: bool
    active_sessions: int
    requests_last_minute: int
    first_request_expires_in: float  # seconds until the minute's oldest request leaves it
    rpm_refusals: int
    in_flight: int


@attrs.define(eq=False)
class _Session:
    settled: float = 0.0
    reserved: float = 0.0
    in_flight: int = 0
    last_seen: float = 0.0


@attrs.define(eq=False)
class _Tally:
    day: str
    month: str
    daily: Amounts = Amounts()
    monthly: Amounts = Amounts()
    daily_reserved: Amounts = Amounts()
    monthly_reserved: Amounts = Amounts()
    sessions: dict[str, _Session] = attrs.field(factory=dict)
    requests: deque[float] = attrs.field(factory=deque)
    refusals: deque[float] = attrs.field(factory=deque)
    in_flight: int = 0


@attrs.define(eq=False)
class Reservation:
    """One admitted request's hold: settle it once, then it is done."""

    agent_id: str
    session: str
    estimate: Amounts
    day: str
    month: str
    done: bool = False
    hold_id: str = ""  # its name on the shared counters (`gateway.agents.shared`)


def period_keys(wall: float) -> tuple[str, str]:
    moment = datetime.fromtimestamp(wall, UTC)
    return moment.strftime("%Y-%m-%d"), moment.strftime("%Y-%m")


@attrs.define(eq=False)
class MemoryCounters:
    """The counters of every agent in this process (see the module docstring)."""

    idle_s: float = 300.0
    clock: Clock = trio.current_time
    wall: Clock = time.time
    _tallies: dict[str, _Tally] = attrs.field(factory=dict)
    _period_cache: tuple[int, str, str] = (-1, "", "")

    def known(self, agent_id: str) -> bool:
        return agent_id in self._tallies

    def baseline(self, agent_id: str, daily: Amounts, monthly: Amounts) -> None:
        """Seed an agent first seen by this process with what the usage log holds."""
        if agent_id in self._tallies:
            return
        day, month = self._periods()
        self._tallies[agent_id] = _Tally(day, month, daily=daily, monthly=monthly)

    def knows_session(self, agent_id: str, session: str) -> bool:
        tally = self._tallies.get(agent_id)
        return tally is not None and session in tally.sessions

    def seed_session(self, agent_id: str, session: str, settled: float) -> None:
        """Seed a session first seen by this process with its cost in the usage log; the
        seeded session is not active until it makes a request."""
        tally = self._tally(agent_id)
        if session not in tally.sessions:
            tally.sessions[session] = _Session(settled=settled, last_seen=-math.inf)

    def current(self, agent_id: str, session: str) -> Figures:
        tally = self._tally(agent_id)
        now = self.clock()
        _trim(tally.requests, now)
        _trim(tally.refusals, now)
        found = tally.sessions.get(session)
        return Figures(
            day=tally.day,
            month=tally.month,
            daily=tally.daily + tally.daily_reserved,
            monthly=tally.monthly + tally.monthly_reserved,
            daily_settled=tally.daily,
            monthly_settled=tally.monthly,
            session_cost=0.0 if found is None else found.settled + found.reserved,
            session_cost_settled=0.0 if found is None else found.settled,
            session_active=found is not None and self._active(found, now),
            active_sessions=sum(1 for s in tally.sessions.values() if self._active(s, now)),
            requests_last_minute=len(tally.requests),
            first_request_expires_in=tally.requests[0] + WINDOW_S - now if tally.requests else 0.0,
            rpm_refusals=len(tally.refusals),
            in_flight=tally.in_flight,
        )

    def sessions(self, agent_id: str) -> dict[str, tuple[float, int, bool]]:
        """Each known session: (cost settled, requests in flight, active)."""
        tally, now = self._tally(agent_id), self.clock()
        return {
            name: (s.settled, s.in_flight, self._active(s, now))
            for name, s in tally.sessions.items()
        }

    def reserve(self, agent_id: str, session: str, estimate: Amounts) -> Reservation:
        """Take one request, its slot in the session and its estimate."""
        tally, now = self._tally(agent_id), self.clock()
        tally.requests.append(now)
        tally.daily_reserved += estimate
        tally.monthly_reserved += estimate
        tally.in_flight += 1
        entry = tally.sessions.get(session)
        if entry is None:
            self._forget_idle_sessions(tally, now)
            entry = tally.sessions[session] = _Session()
        entry.reserved += estimate.cost
        entry.in_flight += 1
        entry.last_seen = now
        return Reservation(agent_id, session, estimate, tally.day, tally.month)

    def settle(self, reservation: Reservation, actual: Amounts) -> None:
        """Replace the estimate by `actual` (only the first call counts). A request that
        straddles midnight is charged to the period it ends in."""
        if reservation.done:
            return
        reservation.done = True
        tally, now = self._tally(reservation.agent_id), self.clock()
        if tally.day == reservation.day:
            tally.daily_reserved -= reservation.estimate
        if tally.month == reservation.month:
            tally.monthly_reserved -= reservation.estimate
        tally.daily += actual
        tally.monthly += actual
        tally.in_flight -= 1
        entry = tally.sessions.setdefault(reservation.session, _Session())
        entry.reserved -= reservation.estimate.cost
        entry.settled += actual.cost
        entry.in_flight = max(0, entry.in_flight - 1)
        entry.last_seen = now

    def refused_for_rpm(self, agent_id: str) -> int:
        """Count an rpm refusal; the refusals in the last minute (for abuse detection)."""
        tally, now = self._tally(agent_id), self.clock()
        tally.refusals.append(now)
        _trim(tally.refusals, now)
        return len(tally.refusals)

    def forget(self, agent_id: str) -> None:
        self._tallies.pop(agent_id, None)

    def _tally(self, agent_id: str) -> _Tally:
        """The agent's tally, moved on to today and this month."""
        day, month = self._periods()
        tally = self._tallies.get(agent_id)
        if tally is None:
            tally = self._tallies[agent_id] = _Tally(day, month)
        if tally.month != month:
            tally.month, tally.monthly, tally.monthly_reserved = month, Amounts(), Amounts()
        if tally.day != day:
            tally.day, tally.daily, tally.daily_reserved = day, Amounts(), Amounts()
        return tally

    def _periods(self) -> tuple[str, str]:
        """Today's and this month's keys, formatted once a day (a month changes only
        when a day does), not three times a request."""
        wall = self.wall()
        number = int(wall // 86_400)
        if self._period_cache[0] != number:
            self._period_cache = (number, *period_keys(wall))
        return self._period_cache[1], self._period_cache[2]

    def _active(self, session: _Session, now: float) -> bool:
        return session.in_flight > 0 or now - session.last_seen < self.idle_s

    def _forget_idle_sessions(self, tally: _Tally, now: float) -> None:
        """Bound memory: once an agent has many sessions, the inactive ones are dropped."""
        if len(tally.sessions) < MAX_SESSIONS_PER_AGENT:
            return
        for name in [n for n, s in tally.sessions.items() if not self._active(s, now)]:
            del tally.sessions[name]


def _trim(log: deque[float], now: float) -> None:
    while log and log[0] <= now - WINDOW_S:
        log.popleft()
