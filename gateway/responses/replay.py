"""A streamed background response's events, kept so that a client may read them again.

A background response created with `stream: true` goes on when its client leaves; the
client comes back with `GET /v1/responses/{id}?stream=true&starting_after=N` and gets
every event after sequence number N, then the rest as they come. `EventLog` is that
memory: the background task adds each event as it is made, numbering them (never
waiting for a reader: a slow or gone client cannot hold the response back); readers
follow it with `follow`. It is bounded by bytes: past `max_bytes` the oldest events are
dropped, and a reader that asks for (or falls behind to) a dropped one is told so.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import orjson
import trio

from gateway.platform.errors import invalid_request
from streams.sse import encode_event

TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


class EventsGone(Exception):
    """The events a reader asked for are no longer kept (`EventLog.max_bytes`)."""


class EventLog:
    """The events of one streamed background response, as server-sent events, numbered
    by their `sequence_number` (from 0, one after another)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._events: deque[bytes] = deque()
        self._bytes = 0
        self._dropped = 0  # sequence number of the oldest kept event
        self._changed = trio.Event()
        self.finished = False
        self.ended = False  # a terminal event was added

    @property
    def next_sequence(self) -> int:
        return self._dropped + len(self._events)

    def add(self, event: dict[str, Any]) -> None:
        """Keep `event` as the next one (its `sequence_number` is set here) and wake the
        readers; a terminal event (`TERMINAL`) marks the log `ended`."""
        event["sequence_number"] = self.next_sequence
        self.ended = self.ended or event["type"] in TERMINAL
        self._keep(encode_event(event["type"], orjson.dumps(event)))
        self._wake()

    def _keep(self, frame: bytes) -> None:
        self._events.append(frame)
        self._bytes += len(frame)
        while self._bytes > self.max_bytes and len(self._events) > 1:
            self._bytes -= len(self._events.popleft())
            self._dropped += 1

    def close(self) -> None:
        """No event comes after those kept: readers end once they have read them."""
        self.finished = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def check(self, after: int) -> None:
        """A 400 when the events after `after` cannot all be given."""
        if after + 1 < self._dropped:
            raise invalid_request(
                f"The events up to {self._dropped - 1} are no longer kept; "
                f"'starting_after' must be at least {self._dropped - 1}.",
                param="starting_after",
                value=after,
            )

    def event(self, sequence: int) -> bytes:
        if sequence < self._dropped:
            raise EventsGone(sequence)
        return self._events[sequence - self._dropped]

    async def changed(self) -> None:
        await self._changed.wait()

    def follow(self, after: int) -> Follower:
        return Follower(self, after)


class Follower:
    """The events after `after`, then each new one until the log is finished: an async
    iterator of SSE frames (a class, not a generator: the body that sends it owns
    nothing that needs closing). A reader that fell behind the kept events gets one
    `error` event and ends. Cancelling the reader (its client left) touches nothing of
    the log or the response."""

    def __init__(self, log: EventLog, after: int) -> None:
        self._log, self._next, self._ended = log, after + 1, False

    def __aiter__(self) -> Follower:
        return self

    async def __anext__(self) -> bytes:
        log = self._log
        while not self._ended:
            if self._next < log.next_sequence:
                return self._take()
            if log.finished:
                break
            await log.changed()
        raise StopAsyncIteration

    def _take(self) -> bytes:
        try:
            frame = self._log.event(self._next)
        except EventsGone:
            self._ended = True
            return _gone(self._next)
        self._next += 1
        return frame


def _gone(sequence: int) -> bytes:
    event = {
        "type": "error",
        "code": "events_not_kept",
        "message": f"This reader fell behind: event {sequence} is no longer kept. "
        "Retrieve the response, or stream it again from a later 'starting_after'.",
        "param": None,
        "sequence_number": sequence,
    }
    return encode_event("error", orjson.dumps(event))
