"""Circuit breakers: stop sending requests to a provider/model that keeps failing.

A breaker per (workspace, provider, model) is a small state machine, kept as a table in
the manner of h11's: pure, clock passed in, no I/O.

    CLOSED    --failure, threshold reached--> OPEN
    OPEN      --cooldown elapsed (on ask)-----> HALF_OPEN   (one probe may go)
    HALF_OPEN --probe succeeded--------------> CLOSED
    HALF_OPEN --probe failed-----------------> OPEN        (cooldown starts again)

Only failures that are the provider's fault count (timeouts, 5xx, refused
connections); a client's bad request never opens a circuit.
"""

from __future__ import annotations

import enum
from collections.abc import ItemsView, Mapping

import attrs

FAILURE_THRESHOLD = 5
COOLDOWN_S = 30.0


class State(enum.Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Event(enum.Enum):
    SUCCESS = "success"
    FAILURE = "failure"
    TRIPPED = "tripped"  # a failure that reaches the threshold
    COOLED = "cooled"  # the cooldown has elapsed


TRANSITIONS: Mapping[tuple[State, Event], State] = {
    (State.CLOSED, Event.SUCCESS): State.CLOSED,
    (State.CLOSED, Event.FAILURE): State.CLOSED,
    (State.CLOSED, Event.TRIPPED): State.OPEN,
    (State.OPEN, Event.COOLED): State.HALF_OPEN,
    (State.OPEN, Event.SUCCESS): State.CLOSED,  # a hedged/in-flight call came back well
    (State.OPEN, Event.FAILURE): State.OPEN,
    (State.OPEN, Event.TRIPPED): State.OPEN,
    (State.HALF_OPEN, Event.SUCCESS): State.CLOSED,
    (State.HALF_OPEN, Event.FAILURE): State.OPEN,
    (State.HALF_OPEN, Event.TRIPPED): State.OPEN,
}


@attrs.define
class Breaker:
    threshold: int = FAILURE_THRESHOLD
    cooldown_s: float = COOLDOWN_S
    state: State = State.CLOSED
    failures: int = 0
    opened_at: float = 0.0
    probing: bool = False

    def allows(self, now: float) -> bool:
        """May a request go now? In HALF_OPEN only one probe at a time goes."""
        if self.state is State.OPEN and now - self.opened_at >= self.cooldown_s:
            self._fire(Event.COOLED, now)
        if self.state is State.CLOSED:
            return True
        if self.state is State.HALF_OPEN and not self.probing:
            self.probing = True
            return True
        return False

    def record(self, ok: bool, now: float) -> None:
        if ok:
            self.failures = 0
            self._fire(Event.SUCCESS, now)
            return
        self.failures += 1
        tripped = self.state is State.HALF_OPEN or self.failures >= self.threshold
        self._fire(Event.TRIPPED if tripped else Event.FAILURE, now)

    def trip(self, now: float, remaining_s: float) -> None:
        """Opened elsewhere (another worker or node, `gateway.upstream.shared_breakers`):
        open now, for the `remaining_s` of that opening's cooldown. An open breaker keeps
        the later of its own and that one."""
        opened_at = now - max(0.0, self.cooldown_s - remaining_s)
        if self.state is State.OPEN:
            self.opened_at = max(self.opened_at, opened_at)
            return
        self._fire(Event.TRIPPED, now)
        self.opened_at = opened_at

    def reset(self, now: float) -> None:
        """Closed elsewhere (a probe succeeded on another worker or node)."""
        self.failures = 0
        self._fire(Event.SUCCESS, now)

    @property
    def clean(self) -> bool:
        """Closed with no failure counted: a success here tells the others nothing."""
        return self.state is State.CLOSED and self.failures == 0

    def retry_in(self, now: float) -> float:
        """Seconds until an open breaker lets a probe through."""
        if self.state is not State.OPEN:
            return 0.0
        return max(0.0, self.cooldown_s - (now - self.opened_at))

    def _fire(self, event: Event, now: float) -> None:
        new = TRANSITIONS[(self.state, event)]
        if new is State.OPEN and self.state is not State.OPEN:
            self.opened_at = now
        if new is not State.HALF_OPEN:
            self.probing = False
        self.state = new


@attrs.define
class BreakerBook:
    """The breakers of every (workspace, provider, model) seen; bounded by what is configured."""

    threshold: int = FAILURE_THRESHOLD
    cooldown_s: float = COOLDOWN_S
    _breakers: dict[tuple[str, str, str], Breaker] = attrs.field(factory=dict)

    def breaker(self, workspace_id: str, provider_id: str, model: str) -> Breaker:
        key = (workspace_id, provider_id, model)
        found = self._breakers.get(key)
        if found is None:
            found = self._breakers[key] = Breaker(self.threshold, self.cooldown_s)
        return found

    def state(self, workspace_id: str, provider_id: str, model: str) -> State:
        found = self._breakers.get((workspace_id, provider_id, model))
        return found.state if found else State.CLOSED

    def items(self) -> ItemsView[tuple[str, str, str], Breaker]:
        """Every breaker by (workspace, provider, model), for the metrics scrape."""
        return self._breakers.items()

    def forget_provider(self, workspace_id: str, provider_id: str) -> None:
        for key in [k for k in self._breakers if k[:2] == (workspace_id, provider_id)]:
            del self._breakers[key]
