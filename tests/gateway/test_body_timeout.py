"""A client that sends its headers and only part of its body gets a 408 in the spec's
envelope once `body_timeout_s` has passed, on the chat fast path and on Quart's routes
alike, instead of holding a handler for as long as it keeps the connection open."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import attrs
import pytest
import trio

from gateway.app.server import RunningGateway
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
