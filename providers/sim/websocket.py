"""WebSocket answers of the simulator: an upgrade request handed to trio-websocket.

The simulator reads every request with its own HTTP/1.1 codec, so by the time a handler
accepts an upgrade the handshake's head has been consumed. `ReplayStream` gives it back:
a `trio.abc.Stream` over the connection that first replays the head, so trio-websocket's
server side (`wrap_server_stream`, wsproto underneath) performs the real handshake and
framing. The vendor module then speaks its protocol over a `WebSocketConnection`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

import trio
from trio_websocket import ConnectionClosed, wrap_server_stream

from providers.sim.core import SimUpgrade, StreamCut
from providers.sim.http11 import ParsedRequest, RequestParser
from providers.sim.wire import Connection, PeerGone

if TYPE_CHECKING:
    from providers.sim.server import SimStats

CLOSE_GRACE_S = 1.0  # the close handshake with a client still there


class ReplayStream(trio.abc.Stream):
    """The client connection as a trio stream whose first bytes are `replay`.

    Closing it only stops reading: the socket belongs to the server's connection
    handler, which closes it once the WebSocket session is over.
    """

    def __init__(self, conn: Connection, replay: bytes) -> None:
        self._conn = conn
        self._replay = replay
        self._closed = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self._closed:
            raise trio.ClosedResourceError("the stream is closed")
        try:
            await self._conn.send_all(bytes(data))
        except PeerGone as exc:
            raise trio.BrokenResourceError(str(exc)) from None

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._replay:
            data, self._replay = self._replay, b""
            await trio.lowlevel.checkpoint()
            return data
        if self._closed:
            await trio.lowlevel.checkpoint()
            return b""
        data = await self._conn.receive()
        if not data:
            self._conn.peer_closed = True
        return data

    async def aclose(self) -> None:
        self._closed = True
        await trio.lowlevel.checkpoint()


def request_head(parsed: ParsedRequest) -> bytes:
    """The handshake request as it came, rebuilt from its parsed parts."""
    target = parsed.path + (f"?{urlencode(dict(parsed.query))}" if parsed.query else "")
    lines = [f"{parsed.method} {target} HTTP/1.1"]
    lines += [f"{name}: {value}" for name, value in parsed.headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def is_upgrade(parsed: ParsedRequest) -> bool:
    return parsed.headers.get("upgrade", "").lower() == "websocket"


async def serve_upgrade(
    conn: Connection, parsed: ParsedRequest, leftover: bytes, upgrade: SimUpgrade
) -> bool:
    """Complete the handshake and run the session; True when it ended without the
    client going away first (False: the client closed or dropped the socket mid-session).

    A session that raises `StreamCut` drops the connection with no close frame (the
    caller counts the cut). The connection is not reused afterwards. Cancellation (server
    shutdown) ends the session and the reader task at once.
    """
    stream = ReplayStream(conn, request_head(parsed) + leftover)
    completed = False
    cut: StreamCut | None = None
    async with trio.open_nursery() as nursery:
        request = await wrap_server_stream(nursery, stream)
        socket = await request.accept()
        try:
            await upgrade.session(socket)
            completed = True
        except (ConnectionClosed, trio.BrokenResourceError):
            pass  # the client left mid-session
        except StreamCut as exc:
            cut = exc  # raised outside the nursery: not wrapped in an exception group
        if completed:
            with trio.move_on_after(CLOSE_GRACE_S) as cleanup:
                cleanup.shield = True
                await socket.aclose()
        nursery.cancel_scope.cancel()
    if cut is not None:
        raise cut
    return completed


async def run_upgrade(
    conn: Connection,
    parser: RequestParser,
    parsed: ParsedRequest,
    answer: SimUpgrade,
    stats: SimStats,
) -> None:
    """Run an accepted WebSocket session, counted in `stats` like a stream: completed,
    the client gone, or cut on purpose."""
    stats.streams_started += 1
    try:
        completed = await serve_upgrade(conn, parsed, parser.take_buffered(), answer)
    except StreamCut:
        stats.connections_cut += 1
        return
    except trio.Cancelled:
        if conn.peer_closed:
            stats.client_disconnects += 1
        raise
    if completed:
        stats.streams_completed += 1
    else:
        stats.client_disconnects += 1
