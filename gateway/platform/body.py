"""The one streamed-body protocol, framework-free, for every answer that is not sent whole.

A `StreamBody` is an async context manager: entering it starts whatever produces the
frames (a reader task in a nursery the body owns, filling a bounded channel) and returns
an async iterator of `bytes`; exiting it stops that work and closes what it read from, on
every path, cancellation included. The server enters the body *before* it sends the
response head, so a body that cannot start is still an ordinary HTTP error, and nothing
the body owns outlives the `async with` that entered it.

Chat's SSE body (`gateway.chat.body`) implements it; `RelayBody` relays any async
iterator of bytes (chunked audio, file downloads, NDJSON) through the same shape. The
plain-ASGI fast path (`gateway.platform.asgi`) and Quart (`gateway.platform.web.
stream_response`) both send it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Protocol

import attrs
import trio

from gateway.platform.jsonio import JsonAnswer

RELAY_BUFFER = 16  # frames between a relay's reader and the client, at most
CLOSE_DEADLINE_S = 2.0


class StreamBody(Protocol):
    """What a streamed answer's body is: see the module docstring."""

    @property
    def content_type(self) -> str: ...

    async def __aenter__(self) -> AsyncIterator[bytes]: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None: ...


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


class RelayBody:
    """Relays `source` (an async iterator of bytes) through a bounded channel.

    The reader task lives in the body's own nursery (entered in `__aenter__`, exited in
    `__aexit__`), so a slow client applies backpressure up to `buffer` frames and a client
    that leaves cancels the reader and closes `source` (its `aclose`, shielded for at most
    `CLOSE_DEADLINE_S`). A failure of `source` ends the iteration with that exception.
    """

    def __init__(
        self, source: AsyncIterator[bytes], *, content_type: str, buffer: int = RELAY_BUFFER
    ) -> None:
        self.content_type = content_type
        self._source = source
        self._send, self._receive = trio.open_memory_channel[bytes | BaseException](buffer)
        self._nursery_manager: AbstractAsyncContextManager[trio.Nursery] | None = None
        self._nursery: trio.Nursery | None = None

    async def __aenter__(self) -> AsyncIterator[bytes]:
        self._nursery_manager = trio.open_nursery()
        self._nursery = await self._nursery_manager.__aenter__()
        self._nursery.start_soon(self._pump)
        return self._frames()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._nursery is not None and self._nursery_manager is not None
        self._nursery.cancel_scope.cancel()
        self._receive.close()
        try:
            await self._nursery_manager.__aexit__(None, None, None)
        finally:
            with trio.move_on_after(CLOSE_DEADLINE_S, shield=True):
                aclose = getattr(self._source, "aclose", None)
                if aclose is not None:
                    await aclose()
        return None

    async def _pump(self) -> None:
        async with self._send:
            try:
                async for frame in self._source:
                    await self._send.send(frame)
            except trio.BrokenResourceError:
                return  # the body is closed: nobody reads any more
            except Exception as exc:  # handed to the reader, who raises it
                with contextlib.suppress(trio.BrokenResourceError):
                    await self._send.send(exc)

    def _frames(self) -> AsyncIterator[bytes]:
        return _Frames(self._receive)


class _Frames:
    """The receiving side as an iterator of frames; a relayed failure is raised here.
    (A class, not an async generator: nothing is left for the garbage collector.)"""

    def __init__(self, receive: trio.MemoryReceiveChannel[bytes | BaseException]) -> None:
        self._receive = receive

    def __aiter__(self) -> _Frames:
        return self

    async def __anext__(self) -> bytes:
        try:
            item = await self._receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None
        if isinstance(item, BaseException):
            raise item
        return item
