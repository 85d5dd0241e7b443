"""Graceful shutdown: every request runs under a cancel scope the drain can give a deadline.

When the shutdown begins, Hypercorn stops accepting connections and closes idle ones; the
requests in flight may finish until the grace period ends. At that moment the drain's
deadline cancels whichever are still running, and the server answers each in a clean way
(`gateway.platform.asgi`): a 503 `service_unavailable` when nothing was sent yet, an
error event ending a stream. Hypercorn's own (harsher) deadline is set a little later
(`HYPERCORN_MARGIN_S`), so a client never sees a connection dropped without an answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import trio

from gateway.platform.errors import ApiError

HYPERCORN_MARGIN_S = 1.0
SHUTTING_DOWN = ApiError(
    503,
    "service_unavailable",
    "The gateway is shutting down; send the request again (another instance will take it).",
    type="server_error",
    retry_after=1,
    headers={"Retry-After": "1", "Connection": "close"},
)


class Drain:
    """The cancel scopes of the requests in flight, and the shutdown deadline if any."""

    def __init__(self) -> None:
        self._scopes: set[trio.CancelScope] = set()
        self._deadline = math.inf

    @property
    def in_flight(self) -> int:
        return len(self._scopes)

    @contextmanager
    def request(self) -> Iterator[trio.CancelScope]:
        """The scope one request runs in; it is cancelled at the shutdown deadline."""
        scope = self.enter()
        try:
            with scope:
                yield scope
        finally:
            self.leave(scope)

    def enter(self) -> trio.CancelScope:
        """A request's scope, counted in flight until `leave` (the fast path's form of
        `request`, without a generator per request)."""
        scope = trio.CancelScope(deadline=self._deadline)
        self._scopes.add(scope)
        return scope

    def leave(self, scope: trio.CancelScope) -> None:
        self._scopes.discard(scope)

    def close_at(self, deadline: float) -> None:
        """Begin the shutdown: requests still running at `deadline` are cancelled."""
        self._deadline = deadline
        for scope in self._scopes:
            scope.deadline = min(scope.deadline, deadline)
