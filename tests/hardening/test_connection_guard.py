"""The connection guard (`gateway.platform.connections`) on a socket pair, in virtual time:
the deadlines land at their exact moments, the close never collides with a send, and a
connection's failure ends that connection only."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
import trio
from hypercorn.config import Config
from hypercorn.events import Event, RawData
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.utils import wrap_app

from gateway.platform.connections import ConnectionGate, ConnectionLimits, GuardedConnection

Message = dict[str, Any]
T = TypeVar("T")
REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
LIMITS = ConnectionLimits(header_timeout_s=20, send_stall_timeout_s=120)
KEEP_ALIVE_S = 75.0


async def ok_app(
    scope: Message, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Any]
) -> None:
    """Answers every request with a short 200, after reading its body."""
    while (await receive()).get("more_body", False):
        pass
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


async def flood_app(
    scope: Message, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Any]
) -> None:
    """Answers with an endless body (a client that never reads it stalls the sends),
    until the client is gone, as the gateway's streams do."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_cancel_on_disconnect, receive, nursery.cancel_scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        while True:
            await send({"type": "http.response.body", "body": b"x" * 65536, "more_body": True})


async def _cancel_on_disconnect(
    receive: Callable[[], Awaitable[Message]], scope: trio.CancelScope
) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


def guarded(
    sock: trio.socket.SocketType,
    app: Any = ok_app,
    limits: ConnectionLimits = LIMITS,
    connection_class: type[GuardedConnection] = GuardedConnection,
    keep_alive_s: float = KEEP_ALIVE_S,
) -> GuardedConnection:
    config = Config()
    config.keep_alive_timeout = keep_alive_s
    return connection_class(
        wrap_app(app, 0, "asgi"), config, WorkerContext(None), {}, trio.SocketStream(sock), limits
    )


async def read_until_closed(stream: trio.SocketStream) -> tuple[bytes, float]:
    """What the server sent, and when it closed the connection."""
    received = b""
    while chunk := await stream.receive_some():
        received += chunk
    return received, trio.current_time()


async def serve_pair(
    app: Any = ok_app, limits: ConnectionLimits = LIMITS, keep_alive_s: float = KEEP_ALIVE_S
) -> tuple[trio.SocketStream, GuardedConnection]:
    client, server = trio.socket.socketpair()
    return trio.SocketStream(client), guarded(server, app, limits, keep_alive_s=keep_alive_s)


async def against(
    scenario: Callable[[trio.SocketStream], Awaitable[T]],
    app: Any = ok_app,
    keep_alive_s: float = KEEP_ALIVE_S,
) -> T:
    """Run `scenario` as the client of a guarded connection serving `app`; returns once
    both have ended."""
    client, connection = await serve_pair(app, keep_alive_s=keep_alive_s)
    async with client, trio.open_nursery() as nursery:
        nursery.start_soon(connection.run)
        return await scenario(client)


async def read_answer(stream: trio.SocketStream) -> bytes:
    answer = b""
    while not answer.endswith(b"ok"):
        answer += await stream.receive_some()
    return answer


async def test_a_connection_that_sends_nothing_is_closed_at_the_header_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    received, closed_at = await against(read_until_closed)
    assert received == b""
    assert closed_at == 20.0


async def test_a_head_begun_and_not_finished_is_answered_408_at_the_header_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    async def slow_head(client: trio.SocketStream) -> tuple[bytes, float]:
        await trio.sleep(5)
        await client.send_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
        return await read_until_closed(client)

    received, closed_at = await against(slow_head)
    assert received.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b'"code":"request_timeout"' in received
    assert closed_at == 20.0  # counted from the connection's opening


async def test_between_requests_the_keep_alive_applies_then_the_head_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    async def two_requests_then_a_slow_head(client: trio.SocketStream) -> float:
        await client.send_all(REQUEST)
        await read_answer(client)
        await trio.sleep(60)  # idle, within the keep-alive timeout
        await client.send_all(REQUEST)
        await read_answer(client)  # still served
        answered_at = trio.current_time()
        await trio.sleep(30)
        await client.send_all(b"GET / HT")  # a head begun 30 s into the idle time
        received, closed_at = await read_until_closed(client)
        assert received.startswith(b"HTTP/1.1 408")
        return closed_at - answered_at

    assert await against(two_requests_then_a_slow_head) == 30 + 20


async def test_an_idle_keep_alive_connection_is_closed_at_the_keep_alive_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    async def one_request_then_idle(client: trio.SocketStream) -> float:
        await client.send_all(REQUEST)
        await read_answer(client)
        answered_at = trio.current_time()
        received, closed_at = await read_until_closed(client)
        assert received == b""
        return closed_at - answered_at

    assert await against(one_request_then_idle) == KEEP_ALIVE_S


async def slow_app(
    scope: Message, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Any]
) -> None:
    """Answers after 100 s: longer than every idle check interval."""
    await trio.sleep(100)
    await ok_app(scope, receive, send)


async def _idle_after_one_request(client: trio.SocketStream) -> float:
    """How long after its answer the connection was closed, having sent nothing more."""
    await client.send_all(REQUEST)
    await read_answer(client)
    answered_at = trio.current_time()
    received, closed_at = await read_until_closed(client)
    assert received == b""
    return closed_at - answered_at


async def test_a_request_served_for_longer_than_the_checks_leaves_the_keep_alive_whole(
    autojump_clock: trio.abc.Clock,
) -> None:
    """The idle task looks every 20 s while the request is served (its deadline is not
    moved per request); the keep-alive still counts from the answer, to the second."""
    assert await against(_idle_after_one_request, slow_app) == KEEP_ALIVE_S


@pytest.mark.parametrize("keep_alive_s", [0.25, 3.0])
async def test_a_keep_alive_shorter_than_the_checks_closes_on_time(
    autojump_clock: trio.abc.Clock, keep_alive_s: float
) -> None:
    """A keep-alive shorter than the header timeout (and than the shortest check, 1 s)
    brings the idle task's check forward: the connection closes at the keep-alive."""
    closed_after = await against(_idle_after_one_request, slow_app, keep_alive_s=keep_alive_s)
    assert closed_after == keep_alive_s


async def test_a_client_that_closes_frees_its_connection_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Hypercorn kept a closed connection (task, socket, place under the cap) until the
    idle timeout."""

    async def one_request_then_close(client: trio.SocketStream) -> float:
        await client.send_all(REQUEST)
        await read_answer(client)
        await client.aclose()
        return trio.current_time()

    closed_at = await against(one_request_then_close)
    assert trio.current_time() == closed_at  # the connection ended without waiting


async def test_a_client_that_takes_no_bytes_is_dropped_at_the_send_stall_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    client, connection = await serve_pair(flood_app)
    async with client:
        await client.send_all(REQUEST)
        with trio.fail_after(1000):
            await connection.run()  # returns once the stalled send is given up
    assert trio.current_time() == 120.0


async def test_a_client_that_takes_no_bytes_does_not_hold_the_shutdown(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Cancelled (as the server's shutdown deadline cancels its connections), a write
    the client does not take ends the connection at once: Hypercorn's unbounded shield
    kept the process from stopping."""
    client, connection = await serve_pair(flood_app)
    async with client, trio.open_nursery() as nursery:
        await client.send_all(REQUEST)
        nursery.start_soon(connection.run)
        await trio.sleep(5)
        nursery.cancel_scope.cancel()
    assert trio.current_time() == 5.0


class _Recorder:
    """Stands for the protocol: records what the connection hands it."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def handle(self, event: Event) -> None:
        self.events.append(event)


@pytest.mark.parametrize("connection_class", [TCPServer, GuardedConnection])
async def test_a_close_never_collides_with_a_send(connection_class: type[Any]) -> None:
    """The cause of issue 31 point 1: Hypercorn's close sends the EOF without the send
    lock, so a send from another task in that moment raised BusyResourceError (and the
    process exited). With the guard the send waits, and finds the connection closed.
    The two tasks start in trio's (random) order: when the close goes first, Hypercorn's
    own connection fails; twenty tries make that certain but for one chance in 2**20."""
    collisions = 0
    for _ in range(20):
        client, server = trio.socket.socketpair()
        if connection_class is TCPServer:
            stream = trio.SocketStream(server)
            connection = TCPServer(ok_app, Config(), WorkerContext(None), {}, stream)
        else:
            connection = guarded(server)
        connection.protocol = _Recorder()

        async def send(connection: Any = connection) -> None:
            nonlocal collisions
            try:
                await connection.protocol_send(RawData(data=b"HTTP/1.1 400 \r\n\r\n"))
            except trio.BusyResourceError:
                collisions += 1

        async with trio.SocketStream(client), trio.open_nursery() as nursery:
            nursery.start_soon(connection._close)
            nursery.start_soon(send)
    if connection_class is TCPServer:
        assert collisions > 0, "Hypercorn's own race did not show: the test proves nothing"
    else:
        assert collisions == 0


class _Failing(GuardedConnection):
    async def _read_data(self) -> None:
        raise RuntimeError("a defect in one connection")


async def test_a_failure_in_one_connection_ends_only_that_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, server = trio.socket.socketpair()
    connection = guarded(server, connection_class=_Failing)
    with caplog.at_level(logging.ERROR):
        await connection.run()  # returns: nothing reaches the caller's nursery
    assert "a client connection failed and was closed" in caplog.text
    async with trio.SocketStream(client) as stream:
        assert await stream.receive_some() == b""  # closed


def test_the_gate_refuses_past_the_cap_and_per_address(caplog: pytest.LogCaptureFixture) -> None:
    gate = ConnectionGate(ConnectionLimits(max_connections=3, max_connections_per_address=2))
    with gate.held("10.0.0.1"), gate.held("10.0.0.1"):
        refusal = gate.refusal("10.0.0.1")
        assert refusal is not None and refusal.status == 503
        assert "this address holds 2" in refusal.message
        assert gate.refusal("10.0.0.2") is None
        with gate.held("10.0.0.2"):
            refusal = gate.refusal("10.0.0.3")
            assert refusal is not None and refusal.code == "too_many_connections"
            assert "the gateway holds 3" in refusal.message
    assert gate.open == 0 and gate.refusal("10.0.0.1") is None
    # Two refusals, one line: a flood of connections is not a flood of log lines.
    refusals = [r for r in caplog.records if r.getMessage().startswith("connections refused")]
    assert len(refusals) == 1


class _TaskSteps(trio.abc.Instrument):
    """Counts one task's steps: each is a scheduler round trip."""

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task, self.steps = task, 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.steps += 1


async def test_a_write_on_a_free_connection_costs_one_scheduler_round_trip() -> None:
    """The send lock, free, is taken without yielding: `Lock.acquire` yielded even then,
    a round trip between an answer being ready and its first byte going out (on a lone
    request, its latency). The write's own checkpoint stays."""
    client, server = trio.socket.socketpair()
    connection = guarded(server)
    steps = _TaskSteps(trio.lowlevel.current_task())
    async with trio.SocketStream(client) as stream, connection.stream:
        trio.lowlevel.add_instrument(steps)
        try:
            await connection.protocol_send(RawData(data=b"HTTP/1.1 200 \r\n\r\n"))
        finally:
            trio.lowlevel.remove_instrument(steps)
        assert steps.steps == 1  # send_all's; two before
        assert await stream.receive_some() == b"HTTP/1.1 200 \r\n\r\n"


async def test_a_writer_cancelled_before_its_write_writes_nothing_and_keeps_the_connection() -> (
    None
):
    client, server = trio.socket.socketpair()
    connection = guarded(server)
    connection.protocol = _Recorder()
    async with trio.SocketStream(client) as stream, connection.stream:
        with trio.CancelScope() as scope:
            scope.cancel()
            await connection.protocol_send(RawData(data=b"lost"))
        assert scope.cancelled_caught
        await connection.protocol_send(RawData(data=b"kept"))
        assert await stream.receive_some() == b"kept"
    assert connection.protocol.events == []  # no Closed
