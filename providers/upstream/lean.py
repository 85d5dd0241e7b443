"""`LeanUpstream`: a small HTTP/1.1 keep-alive client on trio, for the gateway's hot path.

httpx's pool (httpcore's locks, shielded cleanup scopes, response models and nested
async generators) cost 0.9-1.9 ms of CPU per request under trio; a request here is one
`send` and, usually, one `recv` on a pooled socket, parsed by `providers.upstream.h1`.
HTTP/2 and proxies are out of scope: `HttpxUpstream` covers them.

Retrying a failed request
-------------------------
An upstream may close a keep-alive connection while it sits idle in the pool. Before
reuse, a connection is checked for a pending end-of-file (`Transport.idle_usable`);
that catches nearly every case. What is left is the race where the close crosses our
request on the wire. A request on a *reused* connection is then retried, once, on a
fresh connection, but only when no byte of an answer arrived and either sending it
failed (the upstream never got a whole request, so it acted on nothing) or its method
is idempotent. A POST whose bytes all left is never retried: the upstream may have
acted on it, and only the caller can decide whether to try again.

Streamed bodies
---------------
A `StreamedBody` (a spooled upload) goes out as its head, with the body's
`Content-Length`, then its pieces one at a time: the client holds one piece, never the
whole body. A retry re-reads the pieces from the start. The answer is read only once the
whole body is sent: an upstream that answers early and stops reading (an error for a
request it refuses) shows up as a write failure.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from contextlib import aclosing
from types import TracebackType

import trio

from providers.upstream.base import FixedHeaders, RequestBody, StreamedBody, UpstreamResponse
from providers.upstream.errors import ProtocolError, ReadError, WriteError
from providers.upstream.guard import AddressPolicy
from providers.upstream.h1 import (
    ResponseHead,
    ResponseReader,
    clean_target,
    head_prefix,
    length_line,
    render_head,
    render_request,
    whole_response,
)
from providers.upstream.pool import HostPool, parse_origin, split_url
from providers.upstream.traced import OUTGOING_TRACE, with_trace
from providers.upstream.transport import Origin, Transport, connect, open_tcp

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})


class LeanUpstream:
    """A pooled HTTP/1.1 client: one `HostPool` per (scheme, host, port).

    `max_connections_per_host` bounds the exchanges in flight to one origin (more
    callers wait their turn); `max_idle_per_host` bounds the connections kept open
    between exchanges, each for at most `keepalive_expiry` seconds. https verifies
    certificates with `ssl_context` (by default `ssl.create_default_context()`). With an
    `address_policy`, every new connection must reach an address it allows (checked
    once, when the connection opens: a pooled one costs no lookup); redirects are never
    followed.
    """

    def __init__(
        self,
        *,
        connect_timeout: float = 10.0,
        max_connections_per_host: int = 512,
        max_idle_per_host: int = 256,
        keepalive_expiry: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        address_policy: AddressPolicy | None = None,
    ) -> None:
        self._connect_timeout = connect_timeout
        self._policy = address_policy
        self._limit = max_connections_per_host
        self._max_idle = max_idle_per_host
        self._expiry = keepalive_expiry
        self._ssl_context = ssl_context
        self._pools: dict[tuple[str, str], HostPool] = {}
        self._closed = False

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], body: RequestBody = b""
    ) -> UpstreamResponse:
        """See `Upstream.request`. A body in memory goes out in one send and its answer
        is read whole in one loop (`_round_trip`); a streamed body through an exchange."""
        if not isinstance(body, bytes):
            return await self._streamed_request(method, url, headers, body)
        pool, data = self._rendered(method, url, headers, body)
        await pool.acquire()
        try:
            return await self._round_trip(pool, method, data)
        finally:
            pool.release()

    def stream(
        self, method: str, url: str, headers: Mapping[str, str], body: RequestBody = b""
    ) -> LeanStreamContext:
        """See `Upstream.stream`."""
        return LeanStreamContext(self, method, url, headers, body)

    async def open_tcp(self, host: str, port: int) -> trio.SocketStream:
        """See `Upstream.open_tcp`."""
        return await open_tcp(host, port, self._policy)

    async def aclose(self) -> None:
        """Close every idle connection now and each busy one when it is released."""
        self._closed = True
        for pool in self._pools.values():
            pool.close()

    def _rendered(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[HostPool, bytes]:
        """The pool of `url` and the request's bytes. `FixedHeaders` (an adapter's) keep
        their head per (method, URL), rendered on first use: a call then appends only its
        length and body. This task's trace headers, when it has some, make a head of
        their own (`traced`)."""
        if self._closed:
            raise RuntimeError("the upstream client is closed")
        if type(headers) is FixedHeaders and OUTGOING_TRACE.get() is None:
            rendered = headers.rendered.get((method, url))
            if rendered is None:
                rendered = headers.rendered[(method, url)] = _fixed_head(method, url, headers)
            origin, prefix = rendered
            pool = self._pools.get(origin) or self._pool_for(*origin)
            return pool, b"".join((prefix, length_line(method, len(body)), body))
        scheme, authority, target = split_url(url)
        pool = self._pool_for(scheme, authority)
        head = with_trace(headers)
        return pool, render_request(method, clean_target(target), pool.origin.authority, head, body)

    def _streamed_head(
        self, method: str, url: str, headers: Mapping[str, str], length: int
    ) -> tuple[HostPool, bytes]:
        """The pool of `url` and the head of a streamed body of `length` bytes."""
        if self._closed:
            raise RuntimeError("the upstream client is closed")
        scheme, authority, target = split_url(url)
        pool = self._pool_for(scheme, authority)
        head = with_trace(headers)
        return pool, render_head(method, clean_target(target), pool.origin.authority, head, length)

    async def _round_trip(self, pool: HostPool, method: str, data: bytes) -> UpstreamResponse:
        """`data` sent and its answer read whole, on an idle connection or a new one; a
        reused connection's failure is retried once on a new one when safe (the module)."""
        transport = pool.take_idle()
        if transport is not None:
            reader = ResponseReader(method)
            try:
                return await _whole_answer(pool, transport, reader, data)
            except (WriteError, ReadError, ProtocolError) as exc:
                if not _may_retry(exc, method, reader):
                    raise
        transport = await self._connect(pool)
        return await _whole_answer(pool, transport, ResponseReader(method), data)

    async def _streamed_request(
        self, method: str, url: str, headers: Mapping[str, str], body: StreamedBody
    ) -> UpstreamResponse:
        """A whole answer to a streamed body (a spooled upload), read through an exchange."""
        exchange = await self.open_exchange(method, url, headers, body)
        try:
            content = await exchange.read_rest()
        finally:
            exchange.release()
        return UpstreamResponse(exchange.head.status, exchange.head.headers, content)

    def pool(self, url: str) -> HostPool:
        """The pool of `url`'s origin, created on first use."""
        scheme, authority, _ = split_url(url)
        return self._pool_for(scheme, authority)

    async def open_exchange(
        self, method: str, url: str, headers: Mapping[str, str], body: RequestBody
    ) -> Exchange:
        """Send a request and return once its response head has arrived.

        The caller owns the result and must `release()` it. Cancellation closes the
        connection and frees its slot.
        """
        streamed: StreamedBody | None = None
        if isinstance(body, bytes):
            pool, data = self._rendered(method, url, headers, body)
        else:
            streamed = body
            pool, data = self._streamed_head(method, url, headers, body.length)
        await pool.acquire()
        try:
            return await self._exchange_in(pool, method, data, streamed)
        except BaseException:
            pool.release()
            raise

    async def _exchange_in(
        self, pool: HostPool, method: str, data: bytes, streamed: StreamedBody | None
    ) -> Exchange:
        transport = pool.take_idle()
        if transport is not None:
            reader = ResponseReader(method)
            try:
                head = await _send(transport, reader, data, streamed)
                return Exchange(pool, transport, reader, head)
            except (WriteError, ReadError, ProtocolError) as exc:
                if not _may_retry(exc, method, reader):
                    raise
        transport = await self._connect(pool)
        reader = ResponseReader(method)
        head = await _send(transport, reader, data, streamed)
        return Exchange(pool, transport, reader, head)

    async def _connect(self, pool: HostPool) -> Transport:
        origin = pool.origin
        return await connect(origin, self._ssl_for(origin), self._connect_timeout, self._policy)

    def _pool_for(self, scheme: str, authority: str) -> HostPool:
        pool = self._pools.get((scheme, authority))
        if pool is None:
            origin = parse_origin(scheme, authority)
            pool = HostPool(origin, self._limit, self._max_idle, self._expiry)
            self._pools[(scheme, authority)] = pool
        return pool

    def _ssl_for(self, origin: Origin) -> ssl.SSLContext | None:
        if not origin.tls:
            return None
        if self._ssl_context is None:
            self._ssl_context = ssl.create_default_context()
        return self._ssl_context


def _fixed_head(method: str, url: str, headers: FixedHeaders) -> tuple[tuple[str, str], bytes]:
    """A `FixedHeaders` request's origin key and its head up to the body's length."""
    scheme, authority, target = split_url(url)
    host = parse_origin(scheme, authority).authority
    return (scheme, authority), head_prefix(method, clean_target(target), host, headers)


async def _whole_answer(
    pool: HostPool, transport: Transport, reader: ResponseReader, data: bytes
) -> UpstreamResponse:
    """Send `data` and read its answer whole in one loop over the reads; the connection
    goes back to `pool` when it may carry another request. Any failure closes it."""
    try:
        await transport.send_all(data)
        received = await transport.receive()
        head = whole_response(reader.method, received)
        if head is not None:  # the usual answer: whole in the first read
            reusable = head.keep_alive
            body = received[len(received) - int(head.headers["content-length"]) :]
        else:
            head, body = await _read_rest(transport, reader, received)
            reusable = reader.reusable
    except BaseException:
        transport.close()
        raise
    if reusable:
        pool.put_back(transport)
    else:
        transport.close()
    return UpstreamResponse(head.status, head.headers, body)


async def _read_rest(
    transport: Transport, reader: ResponseReader, received: bytes
) -> tuple[ResponseHead, bytes]:
    """The answer's head and body through the incremental reader, from the first read
    (`received`) on."""
    while True:
        if received:
            reader.feed(received)
        else:
            reader.feed_eof()
        answer = reader.take_whole()
        if answer is not None:
            return answer
        received = await transport.receive()


def _may_retry(exc: Exception, method: str, reader: ResponseReader) -> bool:
    """Whether a failure on a reused connection may be retried (see the module docstring)."""
    if reader.started:
        return False
    return isinstance(exc, WriteError) or method in IDEMPOTENT_METHODS


async def _send(
    transport: Transport, reader: ResponseReader, data: bytes, streamed: StreamedBody | None
) -> ResponseHead:
    """Send a request (`data`, then `streamed`'s pieces if any) and read its response
    head; any failure closes `transport`."""
    try:
        await transport.send_all(data)
        if streamed is not None:
            await _send_pieces(transport, streamed)
        head = reader.take_head()
        while head is None:
            received = await transport.receive()
            if received:
                reader.feed(received)
            else:
                reader.feed_eof()
            head = reader.take_head()
        return head
    except BaseException:
        transport.close()
        raise


async def _send_pieces(transport: Transport, body: StreamedBody) -> None:
    """Send `body` from its start, one piece at a time; a body whose pieces do not add
    up to its declared length would desynchronise the connection: `WriteError`."""
    sent = 0
    async with aclosing(body.pieces()) as pieces:
        async for piece in pieces:
            sent += len(piece)
            if sent > body.length:
                break
            await transport.send_all(piece)
    if sent != body.length:
        raise WriteError(f"the body produced {sent} bytes, not the {body.length} declared")


class Exchange:
    """One response being read off a leased connection; `release()` ends the lease."""

    __slots__ = ("_pool", "_transport", "head", "reader")

    def __init__(
        self, pool: HostPool, transport: Transport, reader: ResponseReader, head: ResponseHead
    ) -> None:
        self._pool = pool
        self._transport: Transport | None = transport
        self.reader = reader
        self.head = head

    async def next_piece(self) -> bytes:
        """The next body bytes; b"" once the body is complete.

        `ReadError` on a reset, `ProtocolError` when the body is cut short.
        """
        transport = self._transport
        if transport is None:
            raise ReadError("the response was already released")
        reader = self.reader
        while True:
            piece = reader.take_body()
            if piece or reader.done:
                return piece
            received = await transport.receive()
            if received:
                reader.feed(received)
            else:
                reader.feed_eof()

    async def read_rest(self) -> bytes:
        """The rest of the body."""
        parts: list[bytes] = []
        while piece := await self.next_piece():
            parts.append(piece)
        return b"".join(parts)

    def release(self) -> None:
        """Back to the pool if the response was read whole and keep-alive allows, else
        close the connection at once. Idempotent."""
        transport, self._transport = self._transport, None
        if transport is None:
            return
        if self._finish_buffered():
            self._pool.put_back(transport)
        else:
            transport.close()
        self._pool.release()

    def _finish_buffered(self) -> bool:
        """Whether the connection may be reused. A reader that stopped just short of the
        end (the last chunk already buffered) still leaves a reusable connection."""
        try:
            self.reader.take_body()
        except ProtocolError:
            return False
        return self.reader.reusable


class LeanStream:
    """A streamed response: an async iterator of body pieces (a class, not a generator)."""

    __slots__ = ("_exchange", "headers", "status")

    def __init__(self, exchange: Exchange) -> None:
        self._exchange = exchange
        self.status = exchange.head.status
        self.headers: Mapping[str, str] = exchange.head.headers

    @property
    def complete(self) -> bool:
        """The whole response has been received (its end included)."""
        return self._exchange.reader.done

    def __aiter__(self) -> LeanStream:
        return self

    async def __anext__(self) -> bytes:
        piece = await self._exchange.next_piece()
        if not piece:
            raise StopAsyncIteration
        return piece

    async def read(self) -> bytes:
        return await self._exchange.read_rest()


class LeanStreamContext:
    """What `LeanUpstream.stream` returns: opens the exchange, releases it on exit."""

    __slots__ = ("_args", "_exchange", "_upstream")

    def __init__(
        self,
        upstream: LeanUpstream,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: RequestBody,
    ) -> None:
        self._upstream = upstream
        self._args = (method, url, headers, body)
        self._exchange: Exchange | None = None

    async def __aenter__(self) -> LeanStream:
        self._exchange = await self._upstream.open_exchange(*self._args)
        return LeanStream(self._exchange)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._exchange is not None:
            self._exchange.release()
