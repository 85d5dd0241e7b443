"""What the server answers before the application reads a request comes in the spec's
error envelope, with the right status (issue 31 point 8). Before, Hypercorn answered
each of these with an empty body."""

from __future__ import annotations

import pytest

from gateway.app.server import RunningGateway
from tests.gateway.conftest import ADMIN_KEY
from tests.hardening.wire import connect, parse_answer, read_to_end

POST_CHAT = b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n"


@pytest.mark.parametrize(
    ("request_bytes", "status", "code", "named"),
    [
        (POST_CHAT + b"Content-Length: abc\r\n\r\n", 400, "malformed_request", "Content-Length"),
        (POST_CHAT + b"Content-Length: -5\r\n\r\n", 400, "malformed_request", "Content-Length"),
        (
            POST_CHAT + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\n",
            400,
            "malformed_request",
            "conflicting Content-Length",
        ),
        (
            b"GET /health HTTP/1.1\r\nHost: gw\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n",
            431,
            "request_header_too_large",
            "16384 bytes",
        ),
        (b"GARBAGE\r\n\r\n", 400, "malformed_request", "'GARBAGE'"),
        (b"GET /health HTTP/1.1 extra\r\n\r\n", 400, "malformed_request", "request line"),
        (
            b"GET /health HTTP/1.1\r\nHost: gw\r\nBad Name: x\r\n\r\n",
            400,
            "malformed_request",
            "header line",
        ),
        (
            POST_CHAT + b"Transfer-Encoding: gzip\r\n\r\n",
            501,
            "unsupported_transfer_encoding",
            "chunked",
        ),
        (
            POST_CHAT + b"Transfer-Encoding: chunked\r\n\r\nZZ\r\nabc\r\n",
            400,
            "malformed_request",
            "chunk",
        ),
    ],
    ids=[
        "bad-content-length",
        "negative-content-length",
        "conflicting-content-lengths",
        "100-kb-header",
        "garbage-request-line",
        "malformed-request-line",
        "bad-header-name",
        "unknown-transfer-coding",
        "bad-chunk",
    ],
)
async def test_a_request_the_server_refuses_is_answered_in_the_envelope(
    gateway: RunningGateway, request_bytes: bytes, status: int, code: str, named: str
) -> None:
    async with await connect(gateway.url) as stream:
        await stream.send_all(request_bytes)
        answer = parse_answer(await read_to_end(stream))
    assert answer.status == status
    assert answer.headers["connection"] == "close"
    error = answer.error()
    assert error["code"] == code
    assert error["type"] == "invalid_request_error"
    assert named in error["message"]
    assert error["doc_url"].endswith("#" + code)


async def test_a_body_cut_short_by_the_client_is_answered_in_the_envelope(
    gateway: RunningGateway,
) -> None:
    """The issue's pattern (a declared large body, a few bytes, the sending side shut) on
    a route that reads the body: the server's own 400 says what happened."""
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {ADMIN_KEY}"
        "\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
    )
    async with await connect(gateway.url) as stream:
        await stream.send_all(head.encode() + b'{"mod')
        await stream.send_eof()
        answer = parse_answer(await read_to_end(stream))
    assert answer.status == 400
    error = answer.error()
    assert error["code"] == "malformed_request"
    assert "without sending complete message body" in error["message"]
