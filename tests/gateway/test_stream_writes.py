"""How a streamed answer leaves the gateway's own server, over a real socket: the head in
one write with the frames the body already holds, the last frames in one write with the
chunked end. Each write is a system call and a scheduler round trip; a stream whose
upstream arrived at once had paid four where two carry the same bytes (issue 37)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.connections import GuardedConnection

STREAMED: Any = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Hello there"}],
    "stream": True,
}


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every write of the gateway's client connections, in order."""
    seen: list[bytes] = []
    send_raw = GuardedConnection._send_raw

    async def recorded(self: GuardedConnection, data: bytes) -> None:
        seen.append(bytes(data))
        await send_raw(self, data)

    monkeypatch.setattr(GuardedConnection, "_send_raw", recorded)
    return seen


async def test_the_head_leaves_with_the_first_frames_and_the_end_with_the_last(
    gateway: RunningGateway, http: httpx.AsyncClient, writes: list[bytes]
) -> None:
    async with http.stream("POST", "/v1/chat/completions", json=STREAMED) as answer:
        body = b"".join([piece async for piece in answer.aiter_bytes()])
    assert answer.status_code == 200
    assert body.endswith(b"data: [DONE]\n\n")
    head, _, first = writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    assert b'"role":"assistant"' in first  # the opening frame, in the head's write
    assert writes[-1].endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")  # the last frames and the end
    assert b'"_gateway"' in writes[-1]  # the final chunk, with the gateway's metadata
