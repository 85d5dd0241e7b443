"""The lean client's HTTP/1.1 codec (pure tables) and its wire behaviour against tiny
raw trio servers that send exactly the bytes each edge case needs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial

import attrs
import pytest
import trio
import trio.testing

from providers.upstream import (
    ConnectError,
    InvalidRequest,
    LeanUpstream,
    ProtocolError,
    UpstreamResponse,
)
from providers.upstream.h1 import MAX_HEAD_BYTES, ResponseReader, clean_target, render_request

# -- rendering requests -------------------------------------------------------------------


def test_render_post_has_host_length_and_keep_alive() -> None:
    data = render_request("POST", "/v1/x", "api.example:8080", {"a": "1"}, b"{}")
    assert data == (
        b"POST /v1/x HTTP/1.1\r\nhost: api.example:8080\r\na: 1\r\n"
        b"connection: keep-alive\r\ncontent-length: 2\r\n\r\n{}"
    )


def test_render_get_without_body_has_no_length_and_drops_managed_headers() -> None:
    headers = {"Host": "evil", "Content-Length": "9", "Connection": "close", "x": "y"}
    data = render_request("GET", "/", "h", headers, b"")
    assert data == b"GET / HTTP/1.1\r\nhost: h\r\nx: y\r\nconnection: keep-alive\r\n\r\n"


@pytest.mark.parametrize("headers", [{"a": "1\r\nx: injected"}, {"a\nb": "1"}, {"a": "1\r"}])
def test_render_refuses_header_injection(headers: dict[str, str]) -> None:
    with pytest.raises(InvalidRequest):
        render_request("POST", "/", "h", headers, b"")


def test_render_refuses_a_header_that_is_not_latin_1() -> None:
    """A value HTTP/1.1 cannot carry (a key typed with other letters) is this request's
    refusal, never an encoding error out of the caller's task (it stopped the gateway's
    health probes)."""
    with pytest.raises(InvalidRequest):
        render_request("POST", "/", "h", {"authorization": "Bearer ключ"}, b"")


@pytest.mark.parametrize(
    ("target", "sent"),
    [
        ("", "/"),
        ("/v1/models?limit=10&x=a%20b", "/v1/models?limit=10&x=a%20b"),
        ("/models/a b:generate", "/models/a%20b:generate"),
        ("/x#fragment", "/x"),
        ("?q=1", "/?q=1"),
        ('/a"<>\r\n', "/a%22%3C%3E%0D%0A"),
    ],
)
def test_clean_target(target: str, sent: str) -> None:
    assert clean_target(target) == sent


# -- parsing responses --------------------------------------------------------------------


@attrs.frozen
class Parsed:
    status: int
    headers: dict[str, str]
    body: bytes
    reusable: bool


def parse(method: str, pieces: Sequence[bytes], *, eof: bool = False) -> Parsed:
    """Feed `pieces` one by one, taking the head and body as soon as they are ready."""
    reader = ResponseReader(method)
    body: list[bytes] = []
    for piece in pieces:
        reader.feed(piece)
        if reader.take_head() is not None:
            body.append(reader.take_body())
    if eof:
        reader.feed_eof()
    head = reader.take_head()
    assert head is not None and reader.done
    return Parsed(head.status, head.headers, b"".join(body), reader.reusable)


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"
    b"5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nx-trailer: t\r\n\r\n"
)


def every_split(data: bytes) -> list[list[bytes]]:
    return [[data[:i], data[i:]] for i in range(len(data) + 1)]


@pytest.mark.parametrize("pieces", [*every_split(CHUNKED), [bytes([b]) for b in CHUNKED]])
def test_chunked_body_at_any_boundary(pieces: list[bytes]) -> None:
    parsed = parse("POST", pieces)
    assert parsed == Parsed(
        200, {"transfer-encoding": "chunked", "x-a": "1"}, b"hello 0123456789", True
    )


CONTENT_LENGTH = b"HTTP/1.1 201 Created\r\ncontent-length: 5\r\nSet-A: 1\r\nset-a: 2\r\n\r\nhello"


@pytest.mark.parametrize(
    "pieces", [*every_split(CONTENT_LENGTH), [bytes([b]) for b in CONTENT_LENGTH]]
)
def test_content_length_body_at_any_boundary(pieces: list[bytes]) -> None:
    parsed = parse("POST", pieces)
    assert parsed == Parsed(201, {"content-length": "5", "set-a": "1, 2"}, b"hello", True)


H11 = b"HTTP/1.1 200 OK\r\n"
FRAMING = {
    "head": ("HEAD", H11 + b"content-length: 99\r\n\r\n", False, (200, b"", True)),
    "204": ("GET", b"HTTP/1.1 204 No Content\r\n\r\n", False, (204, b"", True)),
    "304": (
        "GET",
        b"HTTP/1.1 304 Not Modified\r\ncontent-length: 9\r\n\r\n",
        False,
        (304, b"", True),
    ),
    "100-continue": (
        "POST",
        b"HTTP/1.1 100 Continue\r\n\r\n" + H11 + b"content-length: 1\r\n\r\nx",
        False,
        (200, b"x", True),
    ),
    "103": (
        "POST",
        b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n" + H11 + b"content-length: 0\r\n\r\n",
        False,
        (200, b"", True),
    ),
    "until-close": ("GET", H11 + b"\r\nuntil the end", True, (200, b"until the end", False)),
    "connection-close": (
        "GET",
        H11 + b"connection: close\r\ncontent-length: 1\r\n\r\nx",
        False,
        (200, b"x", False),
    ),
    "http10": ("GET", b"HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\nx", False, (200, b"x", False)),
    "http10-keep-alive": (
        "GET",
        b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 1\r\n\r\nx",
        False,
        (200, b"x", True),
    ),
    "repeated-length": ("GET", H11 + b"content-length: 1, 1\r\n\r\nx", False, (200, b"x", True)),
    "unasked-bytes": ("GET", H11 + b"content-length: 1\r\n\r\nxy", False, (200, b"x", False)),
}


@pytest.mark.parametrize(("method", "raw", "eof", "expected"), FRAMING.values(), ids=FRAMING)
def test_framing(method: str, raw: bytes, eof: bool, expected: tuple[int, bytes, bool]) -> None:
    parsed = parse(method, [raw], eof=eof)
    assert (parsed.status, parsed.body, parsed.reusable) == expected


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/2 200 OK\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n bad: 1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 1, 2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nxyz",
    ],
)
def test_malformed_responses(raw: bytes) -> None:
    reader = ResponseReader("GET")
    reader.feed(raw)
    with pytest.raises(ProtocolError):
        reader.take_head()
        reader.take_body()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "before answering"),
        (b"HTTP/1.1 200 OK\r\n", "mid-head"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhel", "mid-body"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n", "mid-body"),
    ],
)
def test_end_of_file_before_the_end_is_a_protocol_error(raw: bytes, message: str) -> None:
    reader = ResponseReader("GET")
    if raw:
        reader.feed(raw)
        reader.take_head()
        reader.take_body()
    with pytest.raises(ProtocolError, match=message):
        reader.feed_eof()


def test_head_too_large() -> None:
    reader = ResponseReader("GET")
    reader.feed(b"HTTP/1.1 200 OK\r\nx: " + b"a" * MAX_HEAD_BYTES)
    with pytest.raises(ProtocolError, match="too large"):
        reader.take_head()


# -- over the wire, against raw servers ---------------------------------------------------

Handler = Callable[[trio.SocketStream], Awaitable[None]]


async def read_request(stream: trio.SocketStream, buffer: bytearray) -> bytes | None:
    """One request (head and Content-Length body) from `stream`; None at end of file."""
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        if not data:
            return None
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    head = bytes(buffer[:end]).lower()
    length = 0
    if b"content-length:" in head:
        length = int(head.split(b"content-length:")[1].split(b"\r\n")[0])
    while len(buffer) < end + length:
        buffer += await stream.receive_some(65536)
    request = bytes(buffer[: end + length])
    del buffer[: end + length]
    return request


@attrs.define
class RawServer:
    """Runs `script(stream, index)` for each accepted connection; counts them."""

    script: Callable[[trio.SocketStream, int], Awaitable[None]]
    port: int = 0
    connections: int = 0
    requests: list[bytes] = attrs.field(factory=list)

    async def handle(self, stream: trio.SocketStream) -> None:
        index = self.connections
        self.connections += 1
        async with stream:
            await self.script(stream, index)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


async def start_server(
    nursery: trio.Nursery, script: Callable[[trio.SocketStream, int], Awaitable[None]]
) -> RawServer:
    server = RawServer(script)
    listeners = await nursery.start(partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1"))
    server.port = listeners[0].socket.getsockname()[1]
    return server


def answering(
    server_answers: Sequence[Sequence[bytes]], *, close_after: bool = False
) -> Callable[[trio.SocketStream, int], Awaitable[None]]:
    """A script answering each request on a connection with the next answer, sent in
    its pieces with a pause between them (so each arrives in its own read)."""

    async def script(stream: trio.SocketStream, index: int) -> None:
        buffer = bytearray()
        for pieces in server_answers:
            if await read_request(stream, buffer) is None:
                return
            for piece in pieces:
                await stream.send_all(piece)
                await trio.sleep(0.01)
        if not close_after:
            await trio.sleep_forever()

    return script


OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"


async def test_chunked_stream_split_awkwardly_then_reused(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    pieces = [
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5",
        b"\r",
        b"\nhel",
        b"lo\r",
        b"\n3\r\n ab\r\n0\r",
        b"\nx-trailer: 1\r\n",
        b"\r\n",
    ]
    server = await start_server(nursery, answering([pieces, [OK]]))
    client = LeanUpstream()
    got: list[bytes] = []
    async with client.stream("POST", server.url("/s"), {}, b"{}") as stream:
        assert stream.status == 200
        got = [piece async for piece in stream]
    assert b"".join(got) == b"hello ab"
    assert len(got) >= 3  # pieces came out as they arrived, not all at the end
    response = await client.request("GET", server.url(), {})
    assert response == UpstreamResponse(200, {"content-length": "2"}, b"ok")
    assert server.connections == 1
    await client.aclose()


async def test_read_until_close_then_a_fresh_connection(nursery: trio.Nursery) -> None:
    until_close = [b"HTTP/1.1 200 OK\r\n\r\npart one, ", b"part two"]
    server = await start_server(nursery, answering([until_close], close_after=True))
    client = LeanUpstream()
    first = await client.request("GET", server.url(), {})
    second = await client.request("GET", server.url(), {})
    assert first.body == second.body == b"part one, part two"
    assert server.connections == 2
    await client.aclose()


async def test_content_length_in_pieces(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    pieces = [b"HTTP/1.1 200 OK\r\ncontent-len", b"gth: 10\r\n\r\n01234", b"56789"]
    server = await start_server(nursery, answering([pieces, pieces]))
    client = LeanUpstream()
    for _ in range(2):
        assert (await client.request("POST", server.url(), {}, b"x")).body == b"0123456789"
    assert server.connections == 1
    await client.aclose()


async def test_head_and_204_have_no_body_and_keep_the_connection(nursery: trio.Nursery) -> None:
    head = [b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n"]
    empty = [b"HTTP/1.1 204 No Content\r\n\r\n"]
    server = await start_server(nursery, answering([head, empty, [OK]]))
    client = LeanUpstream()
    assert (await client.request("HEAD", server.url(), {})).body == b""
    assert (await client.request("DELETE", server.url(), {})).status == 204
    assert (await client.request("GET", server.url(), {})).body == b"ok"
    assert server.connections == 1
    await client.aclose()


async def test_large_headers(nursery: trio.Nursery) -> None:
    big = "v" * 40_000
    answer = f"HTTP/1.1 200 OK\r\nx-big: {big}\r\ncontent-length: 2\r\n\r\nok".encode()
    server = await start_server(nursery, answering([[answer]]))
    client = LeanUpstream()
    response = await client.request("POST", server.url(), {"x-sent": big}, b"{}")
    assert response.headers["x-big"] == big
    await client.aclose()


async def test_an_idle_connection_closed_by_the_server_is_not_reused(
    nursery: trio.Nursery,
) -> None:
    closed = trio.Event()

    async def one_answer_then_close(stream: trio.SocketStream, index: int) -> None:
        await answering([[OK]], close_after=True)(stream, index)
        await stream.aclose()
        closed.set()

    server = await start_server(nursery, one_answer_then_close)
    client = LeanUpstream()
    await client.request("POST", server.url(), {}, b"1")
    await closed.wait()
    assert (await client.request("POST", server.url(), {}, b"2")).body == b"ok"
    assert server.connections == 2
    await client.aclose()


def answer_then_drop_the_next_request(stream: trio.SocketStream, index: int) -> Awaitable[None]:
    """On the first connection, answer one request, then read the next and hang up
    without a byte (the race of an idle close); later connections answer normally."""

    async def script() -> None:
        buffer = bytearray()
        await read_request(stream, buffer)
        await stream.send_all(OK)
        if index == 0:
            await read_request(stream, buffer)
            return
        await read_request(stream, buffer)
        await stream.send_all(OK)

    return script()


async def test_an_unanswered_get_on_a_reused_connection_is_retried_once(
    nursery: trio.Nursery,
) -> None:
    server = await start_server(nursery, answer_then_drop_the_next_request)
    client = LeanUpstream()
    await client.request("GET", server.url(), {})
    assert (await client.request("GET", server.url(), {})).body == b"ok"
    assert server.connections == 2
    await client.aclose()


async def test_an_unanswered_post_is_not_retried(nursery: trio.Nursery) -> None:
    server = await start_server(nursery, answer_then_drop_the_next_request)
    client = LeanUpstream()
    await client.request("POST", server.url(), {}, b"1")
    with pytest.raises(ProtocolError, match="before answering"):
        await client.request("POST", server.url(), {}, b"2")
    assert server.connections == 1
    await client.aclose()


async def test_an_unanswered_request_on_a_fresh_connection_is_not_retried(
    nursery: trio.Nursery,
) -> None:
    async def hang_up(stream: trio.SocketStream, index: int) -> None:
        await read_request(stream, bytearray())

    server = await start_server(nursery, hang_up)
    client = LeanUpstream()
    with pytest.raises(ProtocolError):
        await client.request("GET", server.url(), {})
    assert server.connections == 1
    await client.aclose()


async def test_refused_connection_is_a_connect_error() -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connecting is refused
        client = LeanUpstream()
        with pytest.raises(ConnectError):
            await client.request("GET", f"http://127.0.0.1:{port}/", {})
    await client.aclose()


@pytest.mark.parametrize("url", ["ftp://h/x", "not a url", "http:///x", "http://h:port/"])
async def test_bad_urls_are_invalid_requests(url: str) -> None:
    with pytest.raises(InvalidRequest):
        await LeanUpstream().request("GET", url, {})


async def test_a_stream_left_with_only_its_end_unread_keeps_the_connection(
    nursery: trio.Nursery,
) -> None:
    whole = [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"]
    server = await start_server(nursery, answering([whole, [OK]]))
    client = LeanUpstream()
    async with client.stream("GET", server.url(), {}) as stream:
        assert await anext(stream) == b"hi"  # the last chunk is buffered, not yet taken
    assert client.pool(server.url()).idle_count == 1
    assert (await client.request("GET", server.url(), {})).body == b"ok"
    assert server.connections == 1
    await client.aclose()
