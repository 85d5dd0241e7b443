"""Connections to upstreams: a raw non-blocking socket for plain TCP, trio's SSLStream for TLS.

Trio's `SocketStream` costs two scheduler round trips per `send_all` and per
`receive_some` even when the kernel is ready (see `providers.sim.wire`, which found the
same on the server side). A plain-TCP connection is therefore a stdlib socket in
non-blocking mode: a send is tried at once and only waits (`wait_writable`) when the
kernel would block; a receive waits for readability first, because a client reads right
after sending, when the answer has rarely arrived yet. TLS goes through `trio.SSLStream`,
whose record layer dominates that cost anyway.

Every `Transport` closes synchronously, so a `finally` block, cancelled or not, closes
the socket at once without awaiting.
"""

from __future__ import annotations

import select
import socket
import ssl
from typing import Protocol

import attrs
import trio

from providers.upstream.errors import ConnectError, ConnectTimeout, ReadError, WriteError
from providers.upstream.guard import AddressPolicy, open_checked_tcp

RECEIVE_BYTES = 65536


@attrs.frozen(slots=True)
class Origin:
    """Where requests go: scheme, host and port, and the `Host` header naming them."""

    scheme: str
    host: str
    port: int
    authority: str

    @property
    def tls(self) -> bool:
        return self.scheme == "https"


class Transport(Protocol):
    """One open connection, owned by one task at a time."""

    async def send_all(self, data: bytes) -> None:
        """Write all of `data`; `WriteError` if the connection broke."""
        ...

    async def receive(self) -> bytes:
        """The next bytes; b"" once the peer closed its side; `ReadError` on a reset.

        Always a checkpoint; cancellation interrupts the wait without losing data."""
        ...

    def close(self) -> None:
        """Close at once (no TLS close_notify); idempotent."""
        ...

    def idle_usable(self) -> bool:
        """For a connection that sat idle in the pool: False when the peer closed it
        (or sent something unasked, which leaves the exchange out of step)."""
        ...


class SocketTransport:
    """A plain TCP connection on a non-blocking stdlib socket."""

    __slots__ = ("_idle_poll", "_sock")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        # The idle check's poll set, made once: a `poll(0)` per reuse, where a peeking
        # `recv` raised (and built) a `BlockingIOError` for every healthy connection.
        self._idle_poll = select.poll()
        self._idle_poll.register(sock, select.POLLIN)

    @classmethod
    def adopt(cls, stream: trio.SocketStream) -> SocketTransport:
        """Take the OS socket out of trio's stream (which trio already set TCP_NODELAY on)."""
        sock = socket.socket(fileno=stream.socket.detach())
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock)

    async def send_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                sent = self._sock.send(view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self._sock)
                continue
            except OSError as exc:
                raise WriteError(f"sending failed: {exc}") from exc
            view = view[sent:]

    async def receive(self) -> bytes:
        while True:
            await trio.lowlevel.wait_readable(self._sock)
            try:
                return self._sock.recv(RECEIVE_BYTES)
            except BlockingIOError:
                continue
            except OSError as exc:
                raise ReadError(f"receiving failed: {exc}") from exc

    def close(self) -> None:
        if self._sock.fileno() >= 0:
            trio.lowlevel.notify_closing(self._sock)
            self._sock.close()

    def idle_usable(self) -> bool:
        """Nothing to read (an end of file, bytes nobody asked for), no error or hang-up
        pending, and the socket still open."""
        return self._sock.fileno() >= 0 and not self._idle_poll.poll(0)


class TlsTransport:
    """A TLS connection: `trio.SSLStream` over a trio socket stream."""

    __slots__ = ("stream",)

    def __init__(self, stream: trio.SSLStream[trio.SocketStream]) -> None:
        self.stream = stream

    async def send_all(self, data: bytes) -> None:
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise WriteError(f"sending failed: {exc!r}") from exc

    async def receive(self) -> bytes:
        try:
            return bytes(await self.stream.receive_some(RECEIVE_BYTES))
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ReadError(f"receiving failed: {exc!r}") from exc

    def close(self) -> None:
        self.stream.transport_stream.socket.close()

    def idle_usable(self) -> bool:
        fileno = self.stream.transport_stream.socket.fileno()
        if fileno < 0:
            return False
        readable, _, _ = select.select([fileno], [], [], 0)
        return not readable


def tls_stream(
    tcp: trio.SocketStream, context: ssl.SSLContext, host: str
) -> trio.SSLStream[trio.SocketStream]:
    """The TLS layer over `tcp`: SNI and certificate checks name `host`.

    `https_compatible`: HTTP servers often close without a TLS close_notify, and the
    HTTP framing, not TLS, says whether the body was complete.
    """
    return trio.SSLStream(tcp, context, server_hostname=host, https_compatible=True)


async def connect(
    origin: Origin,
    ssl_context: ssl.SSLContext | None,
    connect_timeout: float,
    policy: AddressPolicy | None = None,
) -> Transport:
    """Open a connection to `origin` (TLS handshake included) within `connect_timeout`,
    to an address `policy` allows when there is one (`guard.open_checked_tcp`).

    Raises `ConnectTimeout` or `ConnectError`. Cancellation closes whatever was opened.
    """
    try:
        with trio.fail_after(connect_timeout):
            tcp = await open_tcp(origin.host, origin.port, policy)
            if ssl_context is None:
                return SocketTransport.adopt(tcp)
            return await _handshake(tls_stream(tcp, ssl_context, origin.host))
    except trio.TooSlowError as exc:
        raise ConnectTimeout(
            f"connecting to {origin.authority} took over {connect_timeout} s"
        ) from exc
    except (OSError, trio.BrokenResourceError) as exc:
        reason = exc.__cause__ or exc  # trio wraps TLS failures in BrokenResourceError
        raise ConnectError(f"could not connect to {origin.authority}: {reason!r}") from exc


async def open_tcp(host: str, port: int, policy: AddressPolicy | None) -> trio.SocketStream:
    """A TCP connection, to an address `policy` allows when there is one."""
    if policy is None:
        return await trio.open_tcp_stream(host, port)
    return await open_checked_tcp(policy, host, port)


async def _handshake(stream: trio.SSLStream[trio.SocketStream]) -> TlsTransport:
    transport = TlsTransport(stream)
    try:
        await stream.do_handshake()
    except BaseException:
        transport.close()
        raise
    return transport
