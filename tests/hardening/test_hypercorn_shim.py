"""The connection guard subclasses Hypercorn's internals (checked against 0.18.0): this
fails when a Hypercorn upgrade changes what the subclasses replace or rely on, so that
the guard is checked again before it is trusted."""

from __future__ import annotations

import inspect
from importlib.metadata import version

from hypercorn.protocol import ProtocolWrapper
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio import run as hypercorn_run
from hypercorn.trio.task_group import TaskGroup
from hypercorn.trio.tcp_server import TCPServer

from gateway.platform.connections import GuardedConnection
from gateway.platform.wire_errors import (
    EnvelopeH11Protocol,
    GuardedProtocolWrapper,
    parse_error,
    too_many_connections,
    wire_answer,
)


def test_hypercorn_is_the_version_the_guard_was_checked_against() -> None:
    assert version("hypercorn").startswith("0.18."), "check gateway/platform/connections.py"


def test_the_replaced_methods_keep_their_shape() -> None:
    for base, ours, names in (
        (TCPServer, GuardedConnection, ("run", "protocol_send", "_close", "_read_data")),
        (TCPServer, GuardedConnection, ("_idle_timeout",)),
        (H11Protocol, EnvelopeH11Protocol, ("_send_error_response",)),
    ):
        for name in names:
            assert inspect.signature(getattr(base, name)) == inspect.signature(
                getattr(ours, name)
            ), name
    assert inspect.signature(ProtocolWrapper.__init__) == inspect.signature(
        GuardedProtocolWrapper.__init__
    )


def test_what_the_guard_relies_on_is_still_there() -> None:
    # The parser's error answer is sent from the handler of the error it names.
    handle_events = inspect.getsource(H11Protocol._handle_events)
    assert "except h11.RemoteProtocolError as error:" in handle_events
    assert "self._send_error_response(error.error_status_hint)" in handle_events
    # The idle task, the send lock and the protocol wrapper the run builds.
    run = inspect.getsource(TCPServer.run)
    assert "self.idle_task.restart(self._task_group, self._idle_timeout)" in run
    assert "ProtocolWrapper(" in run
    assert "async with self.send_lock" in inspect.getsource(TCPServer.protocol_send)
    # The application's `receive` is a memory channel's (the upload floor takes a chunk
    # already queued without a deadline: `gateway.platform.upload_pace._ready`).
    assert "app_receive_channel.receive," in inspect.getsource(TaskGroup.spawn_app)
    # The worker loop `gateway.platform.listen.serve_http` follows.
    assert "handler_nursery=server_nursery" in inspect.getsource(hypercorn_run.worker_serve)


def test_the_wire_answer_is_one_whole_http_answer() -> None:
    raw = wire_answer(too_many_connections(10, per_address=False))
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 503 Service Unavailable"
    assert "connection: close" in lines and "retry-after: 1" in lines
    assert f"content-length: {len(body)}" in lines
    assert b'"code":"too_many_connections"' in body


def test_parse_errors_name_what_was_wrong() -> None:
    error = parse_error(400, "illegal request line: bytearray(b'GET / HTTP/9')", header_limit=1)
    assert (
        error.message == "The request is not valid HTTP/1.1: illegal request line: 'GET / HTTP/9'."
    )
    assert parse_error(431, "Receive buffer too long", header_limit=16384).code == (
        "request_header_too_large"
    )
    long_line = "illegal header line: bytearray(b'" + "a" * 5000 + "')"
    assert len(parse_error(400, long_line, header_limit=1).message) < 300
