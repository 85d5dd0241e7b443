"""A client WebSocket whose TCP (or TLS) stream we own: trio-websocket over a stream
opened and closed here.

trio-websocket's `open_websocket_url` opens the stream itself and, in 0.12, leaves it
open in two cases a vendor produces routinely: a refused handshake (its reader task
raises `ConnectionRejected` without closing the stream) and a close started by the
server (its `aclose` returns at once once a close reason is set). Opening the stream
with `async with` here closes it on every path; the library still does the handshake
and the framing (`wrap_client_stream`).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import attrs
import trio
from trio_websocket import ConnectionRejected, WebSocketConnection, wrap_client_stream

from providers.upstream.traced import OUTGOING_TRACE

CLOSE_WAIT_S = 2.0  # the close handshake after a whole session (shielded cleanup)


@attrs.frozen
class SocketAddress:
    """Where a `ws://` or `wss://` URL points."""

    host: str
    port: int
    resource: str  # path and query
    tls: bool

    @property
    def host_header(self) -> str:
        return self.host if self.port in (80, 443) else f"{self.host}:{self.port}"


def socket_address(url: str) -> SocketAddress:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"not a WebSocket URL: {url!r}")
    tls = parts.scheme == "wss"
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return SocketAddress(parts.hostname, parts.port or (443 if tls else 80), resource, tls)


OpenTcp = Callable[[str, int], Awaitable[trio.SocketStream]]


async def _connect(
    address: SocketAddress, open_tcp: OpenTcp
) -> trio.SocketStream | trio.SSLStream[trio.SocketStream]:
    tcp = await open_tcp(address.host, address.port)
    if not address.tls:
        return tcp
    context = ssl.create_default_context()
    return trio.SSLStream(tcp, context, server_hostname=address.host, https_compatible=True)


@asynccontextmanager
async def open_socket(
    url: str,
    headers: list[tuple[bytes, bytes]],
    *,
    max_message_size: int,
    open_tcp: OpenTcp = trio.open_tcp_stream,
) -> AsyncIterator[WebSocketConnection]:
    """A connected WebSocket for the block, over a TCP connection from `open_tcp` (an
    adapter passes its upstream client's `open_tcp`, so that the socket goes only where
    the address policy allows, as its HTTP calls do).

    Raises `OSError` when the host cannot be reached and `ConnectionRejected` (status,
    headers, body) when the server answers the handshake with HTTP. An error raised in
    the block comes out as it was (not in an exception group). After a block that ends
    normally the close handshake gets `CLOSE_WAIT_S`; after an error or a cancellation
    the stream is closed at once. The caller's deadline bounds everything else.

    The handshake carries this task's trace headers (`traceparent`, `tracestate`), as
    every HTTP call of the upstream client does (`providers.upstream.traced`).
    """
    address = socket_address(url)
    stream = await _connect(address, open_tcp)
    async with stream:
        failure: Exception | None = None
        try:
            async with trio.open_nursery() as nursery:
                socket = await wrap_client_stream(
                    nursery,
                    stream,
                    address.host_header,
                    address.resource,
                    extra_headers=_with_trace(headers),
                    max_message_size=max_message_size,
                )
                try:
                    yield socket
                except Exception as exc:
                    failure = exc  # re-raised outside the nursery: no exception group
                else:
                    with trio.move_on_after(CLOSE_WAIT_S) as cleanup:
                        cleanup.shield = True
                        await socket.aclose()
                nursery.cancel_scope.cancel()  # the reader task
        except BaseExceptionGroup as group:
            rejected, _ = group.split(ConnectionRejected)
            if rejected is None:
                raise  # a cancellation (or a bug) travels on as it is
            first = rejected.exceptions[0]
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        if failure is not None:
            raise failure


def _with_trace(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    extra = OUTGOING_TRACE.get()
    if not extra:
        return headers
    return [*headers, *((name.encode(), value.encode()) for name, value in extra.items())]
