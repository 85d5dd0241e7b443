"""Client connections: what one connection may do to the server, and how many there are.

`GuardedConnection` is Hypercorn's trio `TCPServer` (checked against Hypercorn 0.18.0) with
these changes, each for a way a client could hurt the process or hold it:

- Containment: an exception from the connection's tasks (its reader, its request's task)
  ends that connection and is logged; it never reaches the server's nursery, where it would
  end the process. Cancellation passes through.
- The send race (docs/upstream/hypercorn-send-eof-race.md): Hypercorn sends the EOF of a
  closing connection without its send lock, so a send under the lock from another task
  (the parser's own 400 to a body cut short, racing the application's answer) raised
  `trio.BusyResourceError`, which ended the process. The close now takes the lock: it
  waits for a write in progress instead of colliding with it or cutting it.
- A stalled reader: a write the client does not take within `send_stall_timeout_s`, or
  one cancelled by the shutdown's deadline, closes the connection (Hypercorn shields each
  write without a deadline, so a client that stops reading held its connection, and a
  graceful shutdown, for ever).
- A connection the client closed ends at once (Hypercorn kept it, its task and socket
  until the keep-alive timeout).
- The request head has `header_timeout_s`: from the connection's opening for its first
  request, and from the first byte of each later one (between requests the keep-alive
  timeout applies). A head begun and not finished in time is answered 408; a connection
  that sent nothing is closed.

`ConnectionGate` counts the open connections: past `max_connections` (or
`max_connections_per_address` from one address) a new connection is answered 503
`too_many_connections` and closed (`refuse`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import attrs
import h11
import trio
from hypercorn.config import Config
from hypercorn.events import Closed, Event, RawData, Updated
from hypercorn.trio.tcp_server import MAX_RECV, TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import AppWrapper, ConnectionState, LifespanState
from hypercorn.utils import parse_socket_addr

from gateway.platform.config import Settings
from gateway.platform.errors import ApiError
from gateway.platform.request_link import LinkedTaskGroup
from gateway.platform.wire_errors import (
    GuardedProtocolWrapper,
    header_timeout,
    too_many_connections,
    wire_answer,
)

logger = logging.getLogger(__name__)

# A refused connection: the time it gets to send its request head and read the 503, and
# how many are refused at once (past that, a new one is closed without an answer).
REFUSAL_DEADLINE_S = 1.0
REFUSALS_AT_ONCE = 256
REFUSAL_HEAD_BYTES = 16 * 1024
REFUSAL_LOG_EVERY_S = 60.0
MIN_IDLE_CHECK_S = 1.0


@attrs.frozen
class ConnectionLimits:
    """What one client connection may hold (see `Settings` and docs/connections.md)."""

    header_timeout_s: float = 20.0
    send_stall_timeout_s: float = 120.0
    max_connections: int = 0  # 0: what the descriptor limit affords (`listen`)
    max_connections_per_address: int = 0  # 0: no cap per address

    @classmethod
    def of(cls, settings: Settings) -> ConnectionLimits:
        return cls(
            header_timeout_s=settings.header_timeout_s,
            send_stall_timeout_s=settings.send_stall_timeout_s,
            max_connections=settings.max_connections,
            max_connections_per_address=settings.max_connections_per_address,
        )


class ConnectionGate:
    """The open connections, in all and by client address, against the limits."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open = 0
        self.refusing = 0
        self._by_address: dict[str, int] = {}
        self._refused_unlogged = 0
        self._logged_at = -math.inf

    def refusal(self, address: str) -> ApiError | None:
        """Why a new connection from `address` is refused, or None to serve it."""
        error = self._over_cap(address)
        if error is not None:
            self._note_refusal(error)
        return error

    def _over_cap(self, address: str) -> ApiError | None:
        limits = self.limits
        if self.open >= limits.max_connections:
            return too_many_connections(limits.max_connections, per_address=False)
        cap = limits.max_connections_per_address
        if cap and self._by_address.get(address, 0) >= cap:
            return too_many_connections(cap, per_address=True)
        return None

    def _note_refusal(self, error: ApiError) -> None:
        """Log refusals, at most one line every `REFUSAL_LOG_EVERY_S` (a flood of
        connections must not become a flood of log lines)."""
        self._refused_unlogged += 1
        now = time.monotonic()
        if now - self._logged_at >= REFUSAL_LOG_EVERY_S:
            logger.warning(
                "connections refused: %d since the last report (%s)",
                self._refused_unlogged,
                error.message,
            )
            self._refused_unlogged = 0
            self._logged_at = now

    @contextmanager
    def held(self, address: str) -> Iterator[None]:
        """Count one connection from `address` for the duration of the block."""
        self.open += 1
        self._by_address[address] = self._by_address.get(address, 0) + 1
        try:
            yield
        finally:
            self.open -= 1
            left = self._by_address[address] - 1
            if left:
                self._by_address[address] = left
            else:
                del self._by_address[address]


async def refuse(stream: trio.SocketStream, error: ApiError, gate: ConnectionGate) -> None:
    """Answer `error` on a connection that will not be served, and close it.

    The request head is read first, as much of it as comes within `REFUSAL_DEADLINE_S`,
    and the connection is drained after the answer (within as long again): closing a
    socket with unread data resets it, and the client could lose the answer. Past
    `REFUSALS_AT_ONCE` refusals in progress the connection is closed at once.
    """
    async with stream:
        if gate.refusing >= REFUSALS_AT_ONCE:
            return
        gate.refusing += 1
        try:
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                with trio.move_on_after(REFUSAL_DEADLINE_S):
                    await _read_head(stream)
                with trio.move_on_after(REFUSAL_DEADLINE_S):
                    await stream.send_all(wire_answer(error))
                    await stream.send_eof()
                    while await stream.receive_some(MAX_RECV):
                        pass
        finally:
            gate.refusing -= 1


async def _read_head(stream: trio.SocketStream) -> None:
    """Until the end of a request head, the client's EOF, or `REFUSAL_HEAD_BYTES`."""
    tail, received = b"", 0
    while received < REFUSAL_HEAD_BYTES:
        chunk = await stream.receive_some(MAX_RECV)
        if not chunk:
            return
        received += len(chunk)
        tail = tail[-3:] + chunk
        if b"\r\n\r\n" in tail:
            return


class GuardedConnection(TCPServer):
    """One client connection (see the module docstring for what changes)."""

    def __init__(
        self,
        app: AppWrapper,
        config: Config,
        context: WorkerContext,
        state: LifespanState,
        stream: trio.SocketStream,
        limits: ConnectionLimits,
    ) -> None:
        super().__init__(app, config, context, state, stream)  # type: ignore[arg-type]
        self.limits = limits
        self._served_a_request = False
        self._idle = True
        self._idle_since = trio.current_time()
        self._head_began_at: float | None = None  # first byte of the awaited request head
        self._idle_scope: trio.CancelScope | None = None
        # How often the idle task looks at most (`_next_check`): at least a second apart,
        # so a keep-alive of 0 does not spin it while a request is served.
        wait = min(limits.header_timeout_s, config.keep_alive_timeout)
        self._check_every = max(wait, MIN_IDLE_CHECK_S)
        self._became_idle: trio.Event | None = None  # awaited only while shutting down
        self._joining = 0  # how many next writes wait to leave with the one after them
        self._held = b""

    async def run(self) -> None:
        try:
            await self._serve()
        except* Exception as failure:
            logger.error("a client connection failed and was closed", exc_info=failure)

    async def _serve(self) -> None:
        """`TCPServer.run` for a plain (not TLS) socket, with our protocol wrapper."""
        stream = self.stream
        try:
            client = parse_socket_addr(stream.socket.family, stream.socket.getpeername())
            server = parse_socket_addr(stream.socket.family, stream.socket.getsockname())
            async with LinkedTaskGroup(self._join_next_write) as task_group:
                self._task_group = task_group
                self.protocol = GuardedProtocolWrapper(
                    self.app,
                    self.config,
                    self.context,
                    task_group,
                    ConnectionState(self.state),
                    False,
                    client,
                    server,
                    self.protocol_send,
                    "http/1.1",
                )
                await self.protocol.initiate()
                await self.idle_task.restart(self._task_group, self._idle_timeout)
                await self._read_data()
                # The client closed (or the connection broke): nothing is idle any more.
                # Hypercorn left the idle task running, so a closed connection kept its
                # task, socket and (here) its place under the cap until the timeout.
                await self.idle_task.stop()
        except OSError:
            pass
        finally:
            try:
                await self._close()
            finally:
                self._let_go()

    def _let_go(self) -> None:
        """Break the cycles a finished connection is in, so that refcounting frees it (its
        h11 state, buffers, socket and ~30 objects) as it ends. Its protocol and its task
        group each hold a bound method of it (`protocol_send`, `_join_next_write`); left
        so, every closed connection waited for a full collection, which after
        `settle_heap` comes thousands of connections later: the hot path's gateway held
        222 dead connections 3 s after a bench round, and the heap kept their high-water
        (issue 37, bench/README.md "Memory, by process")."""
        vars(self).pop("protocol", None)
        vars(self).pop("_task_group", None)

    async def protocol_send(self, event: Event) -> None:
        if isinstance(event, RawData):
            await self._write(event.data)
            return
        if self._held or self._joining:  # whatever happens next, held bytes go first,
            self._joining = 0  # and no join outlives its answer
            await self._write(b"")
        if isinstance(event, Updated):  # the idle task stays; its deadline moves
            self._note_idle(event.idle)
            return
        await super().protocol_send(event)

    def _join_next_write(self) -> None:
        """Hold the next write for the one after it (`RequestLink.join_next_write`);
        called twice, the next two (a head and a stream's whole body before its end)."""
        self._joining += 1

    async def _write(self, data: bytes) -> None:
        if self._joining:
            self._joining -= 1
            self._held += data
            return
        if self._held:
            data, self._held = self._held + data, b""
        if data:  # the end of a body of known length is no bytes: no write
            await self._send_raw(data)

    async def _send_raw(self, data: bytes) -> None:
        """Write under the send lock, for at most `send_stall_timeout_s`. A write cut
        short (by that deadline, or by a cancellation: the server's shutdown deadline, a
        cancelled answer) leaves the stream in an unknown state, so the connection is
        closed: Hypercorn shielded every write without a deadline instead, so a client
        that stopped reading held it, and the shutdown, for ever.

        A free lock (nearly always: one answer at a time per connection) is taken
        without a scheduler round trip: `Lock.acquire` yields even then, which on a
        lone request was a round trip between its answer being ready and its first byte
        going out. The write still checkpoints (`send_all`), and a writer already
        cancelled writes nothing and leaves the connection as it is, as before."""
        await trio.lowlevel.checkpoint_if_cancelled()
        lock = self.send_lock
        try:
            lock.acquire_nowait()
        except trio.WouldBlock:
            await lock.acquire()
        try:
            closed = await self._send_locked(data)
        finally:
            lock.release()
        if closed:
            await self.protocol.handle(Closed())

    async def _send_locked(self, data: bytes) -> bool:
        """`_send_raw`'s write, the lock held; whether it closed the connection."""
        stall = trio.current_time() + self.limits.send_stall_timeout_s
        try:  # a scope of its own, not `move_on_after`: no generator per write
            with trio.CancelScope(deadline=stall) as send:
                await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.BusyResourceError):
            # Busy cannot happen while every sender holds the lock (`_close` does now);
            # should a later Hypercorn add one that does not, it ends this connection.
            return True
        except trio.Cancelled:
            await self.stream.aclose()
            raise
        if send.cancelled_caught:
            await self.stream.aclose()
            return True
        return False

    async def _close(self) -> None:
        """Hypercorn's close (EOF, then close), after any write in progress; closed
        even when cancelled while waiting for the write (trio closes before its
        checkpoint)."""
        try:
            async with self.send_lock:
                await super()._close()
        finally:
            await self.stream.aclose()

    async def _read_data(self) -> None:
        """Hypercorn's reader, noting when a request head begins while idle. Without a
        `read_timeout` (Hypercorn's default) a read has no deadline, so no scope either:
        it was an infinite `fail_after`, two generators and a cancel scope per read."""
        while True:
            try:
                data = await self._receive()
            except (trio.ClosedResourceError, trio.BrokenResourceError, trio.TooSlowError):
                break
            if self._idle and self._head_began_at is None and data:
                self._head_begins()
            await self.protocol.handle(RawData(bytes(data)))
            if data == b"":
                break
        await self.protocol.handle(Closed())

    async def _receive(self) -> bytes | bytearray:
        """The next bytes; TooSlowError past Hypercorn's `read_timeout` when one is set."""
        if not self.config.read_timeout:
            return await self.stream.receive_some(MAX_RECV)
        with trio.CancelScope(deadline=trio.current_time() + self.config.read_timeout):
            return await self.stream.receive_some(MAX_RECV)
        raise trio.TooSlowError

    def _note_idle(self, idle: bool) -> None:
        """A request head was parsed (not idle), or an answer ended and the connection
        waits for the next request (idle)."""
        self._idle = idle
        self._head_began_at = None
        if not idle:
            self._served_a_request = True
        else:
            self._idle_since = trio.current_time()
            if self._buffered_bytes():  # the client already sent part of its next request
                self._head_began_at = self._idle_since
            if self._became_idle is not None:
                self._became_idle.set()
            self._sooner(self._idle_deadline())

    def _head_begins(self) -> None:
        self._head_began_at = trio.current_time()
        self._sooner(self._idle_deadline())

    def _sooner(self, deadline: float) -> None:
        """Bring the idle task's check forward to `deadline` if it is due later. A later
        deadline waits for the check (`_idle_timeout`) instead: a request moved it three
        times (head, served, idle again), each move a generator context manager in trio's
        setter, where the check already comes sooner than any of them."""
        scope = self._idle_scope
        if scope is not None and deadline < scope.deadline:
            scope.deadline = deadline

    def _next_check(self) -> float:
        """When the idle task looks next: the idle deadline, or `_check_every` from now if
        sooner. A head begun or an idle time started later falls due no sooner than that,
        so a steady connection's requests never move the task's deadline."""
        return min(self._idle_deadline(), trio.current_time() + self._check_every)

    def _idle_deadline(self) -> float:
        """When an idle connection is closed; none while a request is served."""
        if not self._idle:
            return math.inf
        limits = self.limits
        wait = self.config.keep_alive_timeout if self._served_a_request else limits.header_timeout_s
        deadline = self._idle_since + wait
        if self._head_began_at is not None:
            deadline = min(deadline, self._head_began_at + limits.header_timeout_s)
        return deadline

    async def _idle_timeout(self) -> None:
        """Close the connection at the idle deadline, or when the server shuts down while
        it is idle; a request head begun and not finished is answered 408 first.

        One task for the connection's life: each request moves its deadline (none while
        the request is served) where Hypercorn stopped the task and started another, a
        lock, a cancellation and a task per request. A shutdown that begins mid-request
        closes the connection once the request is answered (Hypercorn does, as it does
        not go back to idle then).

        The deadline is checked lazily: the task wakes at `_next_check`, and closes only
        if the idle deadline has passed by then (else it looks again), so a request does
        not move it (`_sooner`)."""
        while True:
            with trio.CancelScope(deadline=self._next_check()) as scope:
                self._idle_scope = scope
                await self.context.terminated.wait()
                while not self._idle:
                    self._became_idle = trio.Event()
                    await self._became_idle.wait()
            if not scope.cancelled_caught or trio.current_time() >= self._idle_deadline():
                break
        timed_out = scope.cancelled_caught and self._head_began_at is not None
        with trio.CancelScope(shield=True):
            if timed_out:
                await self._send_raw(wire_answer(header_timeout(self.limits.header_timeout_s)))
            await self._initiate_server_close()

    def _buffered_bytes(self) -> bool:
        protocol = getattr(self.protocol, "protocol", None)
        connection = getattr(protocol, "connection", None)
        return isinstance(connection, h11.Connection) and bool(connection.trailing_data[0])
