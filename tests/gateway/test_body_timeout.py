"""A client that sends its headers and only part of its body gets a 408 in the spec's
envelope once `body_timeout_s` has passed, on the chat fast path and on Quart's routes
alike, instead of holding a handler for as long as it keeps the connection open."""

from __future__ import annotations

import json
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import attrs
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from tests.gateway.conftest import ADMIN_KEY

BODY_TIMEOUT_S = 0.5


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, body_timeout_s=BODY_TIMEOUT_S)


async def half_sent(gateway: RunningGateway, path: str) -> tuple[int, dict[str, Any]]:
    """POST headers promising 200 bytes, send 10 of them, and read the answer."""
    url = urlsplit(gateway.url)
    assert url.hostname is not None and url.port is not None
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\n"
            f"Authorization: Bearer {ADMIN_KEY}\r\nContent-Type: application/json\r\n"
            "Content-Length: 200\r\n\r\n"
        )
        await stream.send_all(head.encode() + b'{"model": ')
        received = b""
        while b"\r\n\r\n" not in received or not _complete(received):
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            received += chunk
    status_line, _, rest = received.partition(b"\r\n")
    body = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), json.loads(body)


def _complete(received: bytes) -> bool:
    head, _, body = received.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/embeddings"])
async def test_a_half_sent_body_is_a_408_after_the_body_timeout(
    gateway: RunningGateway, path: str
) -> None:
    started = trio.current_time()
    with trio.fail_after(10):
        status, body = await half_sent(gateway, path)
    assert status == 408
    assert body["error"]["code"] == "request_timeout"
    assert body["error"]["type"] == "invalid_request_error"
    assert trio.current_time() - started >= BODY_TIMEOUT_S


async def _answer_to(gateway: RunningGateway, *parts: bytes) -> tuple[int, dict[str, Any]]:
    """Send `parts` of one chat request (a pause between them), read the whole answer."""
    url = urlsplit(gateway.url)
    assert url.hostname is not None and url.port is not None
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream:
        for index, part in enumerate(parts):
            if index:
                await trio.sleep(0.1)  # the first part is read (and queued) alone
            await stream.send_all(part)
        received = b""
        with trio.fail_after(10):
            while not _complete(received):
                chunk = await stream.receive_some(65536)
                assert chunk, received
                received += chunk
    status_line, _, rest = received.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2])


def _chat_head(netloc: str, length: int) -> bytes:
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {netloc}\r\n"
        f"Authorization: Bearer {ADMIN_KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


async def test_a_body_sent_in_two_parts_is_read_whole(gateway: RunningGateway) -> None:
    """The part already queued is taken at once, the rest waited for (within the body
    deadline): the request is answered as if it came in one piece."""
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]})
    head = _chat_head(urlsplit(gateway.url).netloc, len(body))
    status, answer = await _answer_to(gateway, head + body[:20].encode(), body[20:].encode())
    assert status == 200, answer
    assert answer["object"] == "chat.completion"


@pytest.mark.parametrize("pause", [False, True])
async def test_a_body_over_the_limit_is_a_413_whether_queued_or_waited_for(
    nursery: trio.Nursery, settings: Settings, pause: bool
) -> None:
    """A body that says no length (chunked) and is larger than `max_body_bytes` is
    refused with 413 whether it came whole with its head or its end came later."""
    settings = attrs.evolve(settings, max_body_bytes=64)
    gateway: RunningGateway = await nursery.start(partial(run_gateway, settings, env={}))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {urlsplit(gateway.url).netloc}\r\n"
        f"Authorization: Bearer {ADMIN_KEY}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    chunk = b'{"model": "gpt-4o-mini", "messages": [], "user": "' + b"x" * 80 + b'"}'
    framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    parts = (head + framed, b"0\r\n\r\n") if pause else (head + framed + b"0\r\n\r\n",)
    status, answer = await _answer_to(gateway, *parts)
    assert status == 413
    assert answer["error"]["code"] == "request_too_large"
