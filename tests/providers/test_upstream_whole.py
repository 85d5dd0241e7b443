"""The lean client's whole-answer path (a JSON call's: one send, the answer read whole)
and the request heads it keeps for `FixedHeaders`, against raw trio servers."""

from __future__ import annotations

import pytest
import trio

from providers.upstream import FixedHeaders, InvalidRequest, LeanUpstream, ProtocolError
from providers.upstream.traced import OUTGOING_TRACE
from tests.providers.test_upstream_wire import OK, RawServer, read_request, start_server


async def recording(server: list[bytes], stream: trio.SocketStream) -> None:
    """Answer every request on `stream` with OK, keeping its bytes in `server`."""
    buffer = bytearray()
    while (request := await read_request(stream, buffer)) is not None:
        server.append(request)
        await stream.send_all(OK)


async def start_recording(nursery: trio.Nursery) -> tuple[RawServer, list[bytes]]:
    seen: list[bytes] = []
    server = await start_server(nursery, lambda stream, index: recording(seen, stream))
    return server, seen


async def test_fixed_headers_head_is_rendered_once_and_each_body_gets_its_length(
    nursery: trio.Nursery,
) -> None:
    server, seen = await start_recording(nursery)
    headers = FixedHeaders({"content-type": "application/json", "authorization": "Bearer k"})
    client = LeanUpstream()
    for body in (b"{}", b'{"a":1}'):
        assert (await client.request("POST", server.url("/v1/x"), headers, body)).body == b"ok"
    host = f"127.0.0.1:{server.port}".encode()
    head = (
        b"POST /v1/x HTTP/1.1\r\nhost: " + host + b"\r\ncontent-type: application/json\r\n"
        b"authorization: Bearer k\r\nconnection: keep-alive\r\n"
    )
    assert seen == [
        head + b"content-length: 2\r\n\r\n{}",
        head + b'content-length: 7\r\n\r\n{"a":1}',
    ]
    assert list(headers.rendered) == [("POST", server.url("/v1/x"))]
    assert server.connections == 1
    await client.aclose()


async def test_fixed_headers_carry_the_task_s_trace_headers(nursery: trio.Nursery) -> None:
    server, seen = await start_recording(nursery)
    headers = FixedHeaders({"authorization": "Bearer k"})
    client = LeanUpstream()
    await client.request("POST", server.url(), headers, b"1")
    token = OUTGOING_TRACE.set({"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"})
    try:
        await client.request("POST", server.url(), headers, b"2")
    finally:
        OUTGOING_TRACE.reset(token)
    await client.request("POST", server.url(), headers, b"3")
    assert [b"traceparent: 00-aaaa" in request for request in seen] == [False, True, False]
    assert all(b"authorization: Bearer k\r\n" in request for request in seen)
    await client.aclose()


async def test_fixed_headers_without_a_body_send_no_length_for_a_get(
    nursery: trio.Nursery,
) -> None:
    server, seen = await start_recording(nursery)
    client = LeanUpstream()
    await client.request("GET", server.url("/v1/models"), FixedHeaders({"x": "y"}))
    assert seen[0].endswith(b"x: y\r\nconnection: keep-alive\r\n\r\n")
    assert b"content-length" not in seen[0]
    await client.aclose()


async def test_fixed_headers_with_a_line_break_are_refused() -> None:
    client = LeanUpstream()
    with pytest.raises(InvalidRequest):
        await client.request("POST", "http://127.0.0.1:9/", FixedHeaders({"a": "b\r\nc: d"}), b"")
    await client.aclose()


async def test_bytes_after_a_whole_answer_in_its_read_close_the_connection(
    nursery: trio.Nursery,
) -> None:
    """An answer and bytes nobody asked for in one read: the body is the answer's, and
    the connection, out of step, is not reused."""

    async def answer_twice(stream: trio.SocketStream, index: int) -> None:
        buffer = bytearray()
        while await read_request(stream, buffer) is not None:
            await stream.send_all(OK + OK)

    server = await start_server(nursery, answer_twice)
    client = LeanUpstream()
    for _ in range(2):
        assert (await client.request("POST", server.url(), {}, b"1")).body == b"ok"
    assert server.connections == 2
    await client.aclose()


async def test_a_garbled_answer_on_a_reused_connection_is_not_retried(
    nursery: trio.Nursery,
) -> None:
    """A reused connection's answer that arrived, garbled: the upstream acted on the
    request, so even a GET is not sent again (only an answer that never started is)."""

    async def then_garble(stream: trio.SocketStream, index: int) -> None:
        buffer = bytearray()
        await read_request(stream, buffer)
        await stream.send_all(OK)
        await read_request(stream, buffer)
        await stream.send_all(b"HTTP/1.1 2x0 Garbled\r\ncontent-length: 0\r\n\r\n")

    server = await start_server(nursery, then_garble)
    client = LeanUpstream()
    await client.request("GET", server.url(), {})
    with pytest.raises(ProtocolError, match="malformed status line"):
        await client.request("GET", server.url(), {})
    assert server.connections == 1
    await client.aclose()
