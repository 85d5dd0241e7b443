"""The NDJSON body of a streamed pipeline (a `gateway.platform.body.StreamBody`).

Entering it starts the pipeline in a nursery the body owns; the server reads one JSON
line per event from a bounded channel. Leaving it (the pipeline ended, or the client went
away) cancels the nursery, which cancels every stage and closes every upstream, then
runs `on_close` (settling the key's limits). Nothing it starts outlives the `async with`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType

import trio

from gateway.pipelines.flow import EVENT_BUFFER, Event
from gateway.pipelines.render import event_line
from streams.handoff import take

Runner = Callable[[trio.MemorySendChannel[Event]], Awaitable[object]]


class PipelineBody:
    content_type = "application/x-ndjson"

    def __init__(self, runner: Runner, on_close: Callable[[], None]) -> None:
        self._runner, self._on_close = runner, on_close
        self._send, self._receive = trio.open_memory_channel[Event](EVENT_BUFFER)
        self._manager: AbstractAsyncContextManager[trio.Nursery] | None = None
        self._nursery: trio.Nursery | None = None

    async def __aenter__(self) -> AsyncIterator[bytes]:
        self._manager = trio.open_nursery()
        self._nursery = await self._manager.__aenter__()
        self._nursery.start_soon(self._runner, self._send)
        return _Lines(self._receive)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._nursery is not None and self._manager is not None
        self._nursery.cancel_scope.cancel()
        self._receive.close()
        try:
            await self._manager.__aexit__(None, None, None)
        finally:
            self._on_close()
        return None


class _Lines:
    """The events as NDJSON lines (a class, not an async generator: nothing is left for
    the garbage collector)."""

    def __init__(self, receive: trio.MemoryReceiveChannel[Event]) -> None:
        self._receive = receive

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> bytes:
        try:
            event = await take(self._receive)
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None
        return event_line(event)
