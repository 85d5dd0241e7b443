"""`log_request_bodies`: the debug setting that lets prompts into the access log."""

from __future__ import annotations

import io
import json
from urllib.parse import urlsplit

import attrs
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from tests.operator.conftest import ADMIN_KEY
from tests.operator.test_logs import PROMPT, access, exercise, log_stream

__all__ = ["log_stream"]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, log_request_bodies=True)


async def test_the_debug_setting_logs_bodies(
    gateway: RunningGateway, client: openai.AsyncOpenAI, log_stream: io.StringIO
) -> None:
    request_id = await exercise(gateway, client)
    chat = next(e for e in access(log_stream) if e["request_id"] == request_id)
    assert PROMPT in chat["body"]
    assert ADMIN_KEY not in log_stream.getvalue()


async def test_a_body_that_came_with_its_head_is_logged(
    gateway: RunningGateway, log_stream: io.StringIO
) -> None:
    """Head and body in one packet: the server has queued the body before the handler
    reads it, and the fast path takes a queued body without `receive` (the request
    link). The debug setting's log saw an empty body whenever the body came that way."""
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": PROMPT}]})
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\n"
        f"Authorization: Bearer {ADMIN_KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    host, port = urlsplit(gateway.url).hostname, urlsplit(gateway.url).port
    assert host is not None and port is not None
    stream = await trio.open_tcp_stream(host, port)
    async with stream:
        await stream.send_all((head + body).encode())
        answer = b""
        while chunk := await stream.receive_some():
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")
    chat = next(e for e in access(log_stream) if e["route"] == "/v1/chat/completions")
    assert PROMPT in chat["body"]
