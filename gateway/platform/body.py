"""The one streamed-body protocol, framework-free, for every answer that is not sent whole.

A `StreamBody` says its content type and opens with `async with body.open() as frames:`:
entering starts whatever produces the frames (a reader task in a nursery the body owns,
filling a bounded channel) and gives an async iterator of `bytes`; leaving stops that work
and closes what it read from, on every path, cancellation included. `open` is one
`@asynccontextmanager` per body: its resources are owned in one place, never entered by
hand. The server enters the body *before* it sends the response head, so a body that
cannot start is still an ordinary HTTP error, and nothing the body owns outlives the
`async with` that entered it.

Chat's SSE body (`gateway.chat.body`) implements it; `TaskBody` sends what a producer
task of its own makes (a streamed voice pipeline's NDJSON events); `InlineBody` relays an
async iterator of bytes in the sending task itself, with no reader task: streamed speech,
whose first bytes are already read when the head goes out (the race waited for them). The
plain-ASGI fast path (`gateway.platform.asgi`) and Quart (`gateway.platform.web.
stream_response`) both send it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Generic, Protocol, TypeVar

import attrs
import trio

from gateway.platform.jsonio import JsonAnswer
from streams.handoff import take
from streams.held import background

FRAME_BUFFER = 16  # frames between a body's producer task and the client, at most
CLOSE_DEADLINE_S = 2.0
T = TypeVar("T")


class StreamBody(Protocol):
    """What a streamed answer's body is: see the module docstring."""

    @property
    def content_type(self) -> str: ...

    def open(self) -> AbstractAsyncContextManager[AsyncIterator[bytes]]: ...


def frames_ready(frames: AsyncIterator[bytes]) -> bool:
    """Whether `frames` holds its next frame already, bytes to send at once (an iterator
    with a true `ready` attribute says so): the head may then leave in one write with it."""
    return getattr(frames, "ready", False) is True


def frames_ended(frames: AsyncIterator[bytes]) -> bool:
    """Whether the frame just taken from `frames` was its last (an iterator with a true
    `ended` attribute says so; any other is known to end only when it stops): that frame
    may then leave in one write with the end of the body."""
    return getattr(frames, "ended", False) is True


@attrs.frozen
class StreamAnswer:
    """A streamed answer: its body (not yet entered), headers and status."""

    body: StreamBody
    headers: Mapping[str, str]
    status: int = 200


Answer = JsonAnswer | StreamAnswer
# What a route's handler returns: a context whose entry plans and answers the request and
# whose exit releases everything the answer held (limits, upstream connections).
Answering = AbstractAsyncContextManager[Answer]


class TaskBody(Generic[T]):
    """A body whose frames a producer task makes, in a nursery the body owns.

    `produce(send)` is started when the body is entered and puts items into a bounded
    channel (`buffer` items: a slow client holds the producer back), closing `send` when
    it is done; the server reads each item as the frame `render(item)`. Leaving the body
    cancels the producer (the client left, or everything was sent), waits for it, then
    runs `on_close` on every path. A streamed voice pipeline is one (its events rendered
    as NDJSON lines, its limits settled on close).
    """

    def __init__(
        self,
        produce: Callable[[trio.MemorySendChannel[T]], Awaitable[object]],
        render: Callable[[T], bytes],
        *,
        content_type: str,
        buffer: int = FRAME_BUFFER,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.content_type = content_type
        self._produce, self._render, self._on_close = produce, render, on_close
        self._buffer = buffer

    @asynccontextmanager
    async def open(self) -> AsyncIterator[AsyncIterator[bytes]]:
        send, receive = trio.open_memory_channel[T](self._buffer)
        try:
            async with background() as nursery:
                nursery.start_soon(self._produce, send)
                try:
                    yield _Frames(receive, self._render)
                finally:
                    nursery.cancel_scope.cancel()
                    receive.close()
        finally:
            if self._on_close is not None:
                await self._on_close()


class InlineBody:
    """Relays `source` in the task that sends the answer, `first` (already read) before it.

    Streamed speech uses it: the race that chose the vendor has read its first bytes, so
    they leave right behind the head, with no reader task to start and no channel to pass
    them through (a producer task cost the first byte a scheduler round trip, counted in
    `tests/gateway/platform/test_inline_body.py`). Backpressure is the sending itself: the
    next piece is read once the previous one is sent. A client that leaves cancels the
    sender, which leaves this body, which closes `source` (shielded, at most
    `CLOSE_DEADLINE_S`); a failure of `source` is raised by the iteration.
    """

    def __init__(
        self, source: AsyncIterator[bytes], *, content_type: str, first: bytes = b""
    ) -> None:
        self.content_type = content_type
        self._source, self._first = source, first

    @asynccontextmanager
    async def open(self) -> AsyncIterator[AsyncIterator[bytes]]:
        try:
            yield _Inline(self._source, self._first)
        finally:
            with trio.move_on_after(CLOSE_DEADLINE_S, shield=True):
                aclose = getattr(self._source, "aclose", None)
                if aclose is not None:
                    await aclose()


class _Inline:
    """`first`, then what `source` gives (a class, not an async generator: nothing is
    left for the garbage collector, and the body closes `source`)."""

    def __init__(self, source: AsyncIterator[bytes], first: bytes) -> None:
        self._source, self._first = source, first

    def __aiter__(self) -> _Inline:
        return self

    async def __anext__(self) -> bytes:
        if self._first:
            first, self._first = self._first, b""
            return first
        return await anext(self._source)


class _Frames(Generic[T]):
    """The receiving side as an iterator of rendered frames; taking an item that is
    waiting costs no scheduler round trip (`streams.handoff`). (A class, not an async
    generator: nothing is left for the garbage collector.)"""

    def __init__(self, receive: trio.MemoryReceiveChannel[T], render: Callable[[T], bytes]) -> None:
        self._receive, self._render = receive, render

    def __aiter__(self) -> _Frames[T]:
        return self

    async def __anext__(self) -> bytes:
        try:
            item = await take(self._receive)
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None
        return self._render(item)
