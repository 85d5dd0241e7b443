"""An upload that does not arrive within `upload_timeout_s` is a 408 (the client's
slowness), not a 500, on both streamed-upload routes; nothing is left on disk."""

from __future__ import annotations

from functools import partial
from urllib.parse import urlsplit

import attrs
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from tests.gateway.conftest import ADMIN_KEY

BOUNDARY = "sl0w"


def stalled_request(path: str) -> bytes:
    """Head and the start of a multipart body promising much more than is sent."""
    part = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\ndocument\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n'
        "Content-Type: text/plain\r\n\r\nsome text"
    ).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: gateway\r\n"
        f"Authorization: Bearer {ADMIN_KEY}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {len(part) + 1000}\r\n\r\n"
    ).encode()
    return head + part


async def answer_to(gateway: RunningGateway, request: bytes) -> bytes:
    parts = urlsplit(gateway.url)
    async with await trio.open_tcp_stream(parts.hostname or "", parts.port or 80) as stream:
        await stream.send_all(request)
        received = b""
        while chunk := await stream.receive_some():  # the answer closes the connection
            received += chunk
    return received


@pytest.mark.parametrize("path", ["/v1/files", "/v1/ocr"])
async def test_a_stalled_upload_is_408_and_leaves_nothing(
    nursery: trio.Nursery, settings: Settings, path: str
) -> None:
    quick = attrs.evolve(settings, upload_timeout_s=0.5)
    gateway: RunningGateway = await nursery.start(partial(run_gateway, quick, env={}))
    with trio.fail_after(20):
        answer = await answer_to(gateway, stalled_request(path))
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b'"code":"request_timeout"' in answer.replace(b" ", b""), answer
    assert not gateway.state.files.blobs.stored()
