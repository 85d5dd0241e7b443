"""An upstream WebSocket's handshake carries the request's trace headers, as every HTTP
call does: the attempt's `traceparent` (and the caller's `tracestate`) reach a real
WebSocket server over a socket; without a trace, nothing is added."""

from __future__ import annotations

from collections.abc import Mapping

import trio
from trio_websocket import WebSocketRequest, serve_websocket

from providers.upstream.traced import OUTGOING_TRACE
from providers.websocket_client import open_socket

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def handshake_headers(trace: Mapping[str, str] | None) -> dict[str, str]:
    """The headers a WebSocket server saw in the handshake of `open_socket`, opened with
    `trace` as the task's trace headers."""
    seen: dict[str, str] = {}

    async def handler(request: WebSocketRequest) -> None:
        seen.update({k.decode().lower(): v.decode() for k, v in request.headers})
        socket = await request.accept()
        await socket.send_message("hello")

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
        url = f"ws://127.0.0.1:{server.port}/v1/speak"
        token = OUTGOING_TRACE.set(trace)
        try:
            async with open_socket(url, [(b"xi-api-key", b"k")], max_message_size=1024) as ws:
                assert await ws.get_message() == "hello"
        finally:
            OUTGOING_TRACE.reset(token)
        nursery.cancel_scope.cancel()
    return seen


async def test_the_handshake_carries_the_trace() -> None:
    seen = await handshake_headers({"traceparent": TRACEPARENT, "tracestate": "vendor=1"})
    assert seen["traceparent"] == TRACEPARENT
    assert seen["tracestate"] == "vendor=1"
    assert seen["xi-api-key"] == "k"  # the adapter's own headers unchanged


async def test_without_a_trace_nothing_is_added() -> None:
    seen = await handshake_headers(None)
    assert "traceparent" not in seen and "tracestate" not in seen
    assert seen["xi-api-key"] == "k"
