"""Socket I/O for the simulator: an accept loop and a non-blocking connection wrapper.

Trio's `SocketStream` costs two scheduler round trips per `send_all` and per
`receive_some` even when the kernel is ready, which is most of the simulator's time
at benchmark rates. Here a connection is a plain non-blocking stdlib socket: a send
is tried at once and only waits (`wait_writable`) when the kernel would block; a
receive waits for readability first (see `Connection.receive`).
"""

from __future__ import annotations

import errno
import logging
import socket
import struct
from collections.abc import Awaitable, Callable

import trio

log = logging.getLogger(__name__)

RECEIVE_BYTES = 65536
_ACCEPT_CAPACITY_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
_ACCEPT_RETRY_SECONDS = 0.1


class PeerGone(Exception):
    """The client reset or closed the connection while we were writing to it."""


class Connection:
    """One accepted client socket, non-blocking, owned by one handler task."""

    __slots__ = ("peer_closed", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.peer_closed = False  # set by whoever reads the end of the client's bytes

    async def receive(self) -> bytes:
        """The next bytes from the client; b"" once it has closed its side.

        Always a checkpoint. It waits for readability *before* reading: a server reads
        after answering, when the client has rarely sent anything yet, and a read
        that fails costs a syscall and an exception. A reset connection also reads as
        b"": between requests the difference does not matter. Cancellation interrupts
        the wait without losing data.
        """
        while True:
            await trio.lowlevel.wait_readable(self.sock)
            try:
                return self.sock.recv(RECEIVE_BYTES)
            except BlockingIOError:
                continue
            except OSError:
                return b""

    async def send_all(self, data: bytes) -> None:
        """Write all of `data`; raises `PeerGone` if the client went away."""
        view = memoryview(data)
        while view:
            try:
                sent = self.sock.send(view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.sock)
                continue
            except OSError as exc:
                raise PeerGone(str(exc)) from None
            view = view[sent:]

    def reset_on_close(self) -> None:
        """Make `close` reset the connection (RST) instead of a graceful FIN."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def close(self) -> None:
        trio.lowlevel.notify_closing(self.sock)
        self.sock.close()


def adopt(trio_sock: trio.socket.SocketType) -> Connection:
    """Take the OS socket out of trio's wrapper into a non-blocking `Connection`."""
    sock = socket.socket(fileno=trio_sock.detach())
    sock.setblocking(False)
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return Connection(sock)


async def accept_loop(
    listener: trio.SocketListener,
    handler: Callable[[Connection], Awaitable[None]],
    nursery: trio.Nursery,
) -> None:
    """Accept connections forever, starting `handler` for each in `nursery`.

    Running out of file descriptors or memory pauses accepting briefly instead of
    failing, as `trio.serve_listeners` does. Cancellation closes the listener.
    """
    async with listener:
        while True:
            try:
                trio_sock, _ = await listener.socket.accept()
            except OSError as exc:
                if exc.errno not in _ACCEPT_CAPACITY_ERRNOS:
                    raise
                log.error("simulator accept failed (%s); retrying", errno.errorcode[exc.errno])
                await trio.sleep(_ACCEPT_RETRY_SECONDS)
                continue
            nursery.start_soon(handler, adopt(trio_sock))
