"""The upstream HTTP interface the adapters talk through: one call, one stream, one close.

Shaped like httpx's one-method transports: `providers.http` needs nothing but a whole
answer (`request`) and a streamed one (`stream`), so any client offering these two (the
lean HTTP/1.1 pool, httpx for HTTP/2 or proxies, a test double) can serve every adapter.
Implementations raise only `providers.upstream.errors` exceptions and take no timeouts
but their connect timeout: the caller sets deadlines.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeAlias

import attrs
import trio


@attrs.frozen(slots=True)
class UpstreamResponse:
    """A whole answer; header names are lower-case, repeated headers joined by ", "."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class FixedHeaders(Mapping[str, str]):
    """Request headers that never change: an adapter's, made once per (provider,
    endpoint, key). Being immutable, what a client derives from them can be kept with
    them: `LeanUpstream` keeps each (method, URL)'s rendered request head in `rendered`,
    so a call on the hot path appends only its `Content-Length` and body. Any client
    reads them as the plain mapping they are."""

    __slots__ = ("_items", "rendered")

    def __init__(self, items: Mapping[str, str]) -> None:
        self._items = dict(items)
        # Filled by the client that renders them (`LeanUpstream`), keyed by (method, URL).
        self.rendered: dict[tuple[str, str], Any] = {}

    def __getitem__(self, name: str) -> str:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"FixedHeaders({sorted(self._items)})"  # names only: values hold keys


class StreamedBody(Protocol):
    """A request body sent in pieces, never held whole (a spooled upload).

    Its `length` is known before the first byte is sent, so it goes out with a
    `Content-Length` (no chunked encoding, which some vendors refuse). Each call of
    `pieces()` starts again from the beginning: a retried, fallen-back or hedged request
    re-reads the body, never a half-consumed iterator. The client closes the pieces
    (`aclose`) when it stops early.
    """

    @property
    def length(self) -> int: ...

    def pieces(self) -> AsyncGenerator[bytes, None]: ...


# What a request carries: bytes in memory (every JSON call, the hot path) or a streamed body.
RequestBody: TypeAlias = bytes | StreamedBody


class UpstreamStream(Protocol):
    """An answer whose body is still arriving: an async iterator of byte pieces.

    Implementations are classes (`__aiter__` returns self), not async generators, so
    a reader that stops early leaves nothing for the garbage collector to finalise.
    The body ends with the iteration; a broken transfer raises `ReadError` or
    `ProtocolError`.
    """

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def complete(self) -> bool:
        """The whole body has arrived: reading the rest of it will not wait (False
        when unknown)."""
        ...

    def __aiter__(self) -> UpstreamStream: ...

    async def __anext__(self) -> bytes: ...

    async def read(self) -> bytes:
        """The rest of the body, whole."""
        ...


class Upstream(Protocol):
    """A pooled HTTP client shared by every adapter of the app."""

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], body: RequestBody = b""
    ) -> UpstreamResponse:
        """Send a request and read its whole answer.

        Cancellation closes the connection in use (it is never returned to the pool).
        """
        ...

    def stream(
        self, method: str, url: str, headers: Mapping[str, str], body: RequestBody = b""
    ) -> AbstractAsyncContextManager[UpstreamStream]:
        """Send a request and hold its answer open while the body is read.

        Entering returns once the status and headers have arrived. Leaving, by any path,
        gives the connection back to the pool only when the body was read to its end and
        the upstream allows keep-alive; otherwise the connection is closed at once, so an
        abandoned stream (a client disconnect, a lost race) reaches the upstream at once.
        """
        ...

    async def open_tcp(self, host: str, port: int) -> trio.SocketStream:
        """A TCP connection for a protocol of its own (a WebSocket adapter's), to an
        address this client's address policy allows, as its own connections are.
        `OSError` when it cannot be opened (`guard.RefusedAddress` when it was refused);
        the caller's deadline bounds it."""
        ...

    async def aclose(self) -> None:
        """Close every pooled connection; connections in use close when released."""
        ...
