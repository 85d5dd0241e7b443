"""Nothing a client does to a connection stops the gateway (issue 31 point 1).

A real `gateway serve --demo` process takes every connection-level abuse below 200 times
over real sockets, and keeps answering `/health` and chat requests, checked every few
rounds and at the end. On the code before the fix the first abuse (a declared large body,
a few bytes, the sending side shut) made the process exit within a few tries: the
server's own 400 raced the application's answer and `trio.BusyResourceError` reached the
server's nursery.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path

import httpx
import openai
import trio

from tests.gateway.conftest import ADMIN_KEY
from tests.hardening.wire import connect, gateway_process, read_to_end
from tests.scaleout.processes import GatewayProcess, wait_ready

ROUNDS = 200
CHECK_EVERY = 25
AUTH = f"Authorization: Bearer {ADMIN_KEY}\r\n"
CHAT_BODY = b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}'

Abuse = Callable[[str], Awaitable[None]]
GONE = (trio.BrokenResourceError, trio.ClosedResourceError)


async def _send(stream: trio.SocketStream, data: bytes) -> None:
    """Send what the server may refuse to read: it may close or reset first."""
    with suppress(*GONE):
        await stream.send_all(data)


async def _send_then_read(url: str, data: bytes, *, shut: bool = False) -> None:
    async with await connect(url) as stream:
        await _send(stream, data)
        if shut:
            with suppress(*GONE):
                await stream.send_eof()
        await read_to_end(stream)


async def _send_then_reset(url: str, data: bytes, *, read_first: bool = False) -> None:
    async with await connect(url) as stream:
        await _send(stream, data)
        if read_first:
            with trio.fail_after(10):
                await stream.receive_some()
        stream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def half_closed_body(url: str) -> None:
    """The issue's pattern: a declared large body, a few bytes, the sending side shut."""
    head = b"GET /health HTTP/1.1\r\nHost: gw\r\nContent-Length: 1000000\r\n\r\nabc"
    await _send_then_read(url, head, shut=True)


async def half_closed_upload(url: str) -> None:
    head = (
        "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: gw\r\n"
        "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 1000000\r\n\r\n--b"
    )
    await _send_then_read(url, head.encode(), shut=True)


async def half_sent_head(url: str) -> None:
    async with await connect(url) as stream:
        await _send(stream, b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Le")


async def bad_content_length(url: str) -> None:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Length: abc\r\n\r\n"
    await _send_then_read(url, head)


async def negative_content_length(url: str) -> None:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Length: -10\r\n\r\n"
    await _send_then_read(url, head)


async def huge_header(url: str) -> None:
    head = b"GET /health HTTP/1.1\r\nHost: gw\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n"
    await _send_then_read(url, head)


async def malformed_request_line(url: str) -> None:
    await _send_then_read(url, b"GET /health HTTP/1.1 extra words\r\n\r\n")


async def body_cut_midway(url: str) -> None:
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n{AUTH}Content-Length: 1000\r\n\r\n"
    async with await connect(url) as stream:
        await _send(stream, head.encode() + CHAT_BODY[:40])


async def reset_mid_request(url: str) -> None:
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n{AUTH}Content-Length: 500\r\n\r\n"
    await _send_then_reset(url, head.encode() + CHAT_BODY[:20])


async def reset_mid_answer(url: str) -> None:
    body = CHAT_BODY[:-1] + b', "stream": true, "max_tokens": 200}'
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n{AUTH}"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    await _send_then_reset(url, head.encode() + body, read_first=True)


async def pipelined_garbage(url: str) -> None:
    request = b"GET /health HTTP/1.1\r\nHost: gw\r\n\r\n"
    garbage = b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\xff\xfe\r\n\r\n"
    await _send_then_read(url, request + garbage + request)


async def websocket_with_trailing_data(url: str) -> None:
    """Hypercorn issue #225: trailing bytes after a WebSocket upgrade ended the server."""
    head = (
        b"GET /v1/audio/sessions HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\n"
        b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
        b"Sec-WebSocket-Key: bKdPyn3u98cTfZJSh4TNeQ==\r\n\r\nx\n"
    )
    async with await connect(url) as stream:
        await _send(stream, head)


async def http2_garbage(url: str) -> None:
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    await _send_then_read(url, preface + b"\x00\x00\x05\x07\x00\xff\xff\xff\xffjunk!")


ABUSES: tuple[Abuse, ...] = (
    half_closed_body,
    half_closed_upload,
    half_sent_head,
    bad_content_length,
    negative_content_length,
    huge_header,
    malformed_request_line,
    body_cut_midway,
    reset_mid_request,
    reset_mid_answer,
    pipelined_garbage,
    websocket_with_trailing_data,
    http2_garbage,
)


async def _still_serving(
    gateway: GatewayProcess, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    assert gateway.process.poll() is None, "the gateway process exited"
    health = await http.get(gateway.url + "/health")
    assert health.status_code == 200
    reply = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "still there?"}]
    )
    assert reply.choices[0].message.content


async def test_no_connection_abuse_stops_the_gateway(tmp_path: Path) -> None:
    with gateway_process(tmp_path) as gateway:
        await wait_ready(gateway)
        async with (
            openai.AsyncOpenAI(
                base_url=gateway.url + "/v1", api_key=ADMIN_KEY, max_retries=0, timeout=10
            ) as client,
            httpx.AsyncClient(timeout=10) as http,
        ):
            for done in range(1, ROUNDS + 1):
                try:
                    async with trio.open_nursery() as nursery:
                        for abuse in ABUSES:
                            nursery.start_soon(abuse, gateway.url)
                except* OSError:  # refused: is the process still there?
                    status = gateway.process.poll()
                    assert status is None, f"the gateway exited ({status}) in round {done}"
                    raise
                if done % CHECK_EVERY == 0:
                    await _still_serving(gateway, client, http)
