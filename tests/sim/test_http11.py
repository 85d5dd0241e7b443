"""The simulator's HTTP/1.1 codec, fed the way a network feeds it: in arbitrary pieces."""

from __future__ import annotations

import pytest

from providers.sim.http11 import (
    MAX_HEAD_BYTES,
    ParsedRequest,
    ProtocolError,
    RequestParser,
    ResponseWriter,
    chunk_frame,
)

POST = (
    b"POST /openai/v1/chat/completions?x=1&y=two HTTP/1.1\r\n"
    b"Host: sim\r\nContent-Type: application/json\r\nContent-Length: 13\r\n"
    b"X-Tag: a\r\nx-tag: b\r\n\r\n"
    b'{"model":"m"}'
)
CHUNKED = (
    b"POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: t\r\n\r\n"
)
GET = b"GET /openai/v1/models HTTP/1.1\r\nHost: sim\r\n\r\n"


def feed_in_pieces(data: bytes, size: int) -> list[ParsedRequest]:
    parser = RequestParser()
    requests = []
    for start in range(0, len(data), size):
        parser.feed(data[start : start + size])
        while (request := parser.next_request()) is not None:
            requests.append(request)
    assert parser.buffered == 0
    return requests


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 10_000])
def test_split_reads_give_the_same_requests(size: int) -> None:
    requests = feed_in_pieces(POST + CHUNKED + GET, size)
    assert [r.method for r in requests] == ["POST", "POST", "GET"]
    post, chunked, get = requests
    assert post.path == "/openai/v1/chat/completions"
    assert post.query == {"x": "1", "y": "two"}
    assert post.headers["content-type"] == "application/json"
    assert post.headers["x-tag"] == "a, b"
    assert post.body == b'{"model":"m"}'
    assert post.keep_alive
    assert chunked.body == b"hello world"
    assert get.body == b"" and get.query == {}


def test_incomplete_request_waits() -> None:
    parser = RequestParser()
    parser.feed(POST[:-1])
    assert parser.next_request() is None
    parser.feed(POST[-1:])
    request = parser.next_request()
    assert request is not None and request.body == b'{"model":"m"}'


@pytest.mark.parametrize(
    ("head", "keep_alive"),
    [
        (b"GET / HTTP/1.1\r\n\r\n", True),
        (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", False),
        (b"GET / HTTP/1.0\r\n\r\n", False),
        (b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", True),
    ],
)
def test_keep_alive(head: bytes, keep_alive: bool) -> None:
    (request,) = feed_in_pieces(head, 100)
    assert request.keep_alive is keep_alive


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET / HTTP/2\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nno colon\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 400),
        (b"POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413),
        (b"GET / HTTP/1.1\r\n" + b"x" * (MAX_HEAD_BYTES + 1), 431),
    ],
)
def test_protocol_errors(data: bytes, status: int) -> None:
    parser = RequestParser()
    parser.feed(data)
    with pytest.raises(ProtocolError) as caught:
        parser.next_request()
    assert caught.value.status == status


def test_expect_continue_is_offered_once() -> None:
    parser = RequestParser()
    parser.feed(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
    assert parser.next_request() is None
    assert parser.take_continue() is True
    assert parser.take_continue() is False
    parser.feed(b"ok")
    request = parser.next_request()
    assert request is not None and request.body == b"ok"
    assert parser.take_continue() is False


def test_response_head() -> None:
    writer = ResponseWriter()
    head = writer.head(
        429, "application/json", {"retry-after": "1"}, content_length=2, keep_alive=False
    )
    assert head == (
        b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
        b"content-length: 2\r\nconnection: close\r\nretry-after: 1\r\n\r\n"
    )
    streamed = writer.head(200, "text/event-stream", {}, content_length=None, keep_alive=True)
    assert streamed.endswith(b"transfer-encoding: chunked\r\n\r\n")
    assert chunk_frame(b"hello world!") == b"c\r\nhello world!\r\n"
