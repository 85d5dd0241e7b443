"""A minimal HTTP/1.1 wire codec for the simulator: pure, I/O-free, and fast.

The simulator must answer several thousand requests a second on one core, which rules out
a general-purpose protocol library. This module parses only what AI clients send
(a request line, headers, a body sized by `Content-Length` or sent chunked) with
`bytes.find`/`split`, and renders answers from precomputed byte strings. Anything it does
not understand is a `ProtocolError` carrying the status to answer with before closing.

`RequestParser` is incremental: feed it bytes as they arrive, in pieces of any size, and
take complete requests out; it keeps a partial request between feeds, and several
pipelined requests in one feed come out one by one.
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from urllib.parse import parse_qsl

import attrs

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


class ProtocolError(Exception):
    """The peer broke HTTP/1.1; answer `status` and close the connection."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@attrs.frozen(slots=True)
class ParsedRequest:
    """One complete request as read off the wire; header names are lower-case."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    keep_alive: bool


@attrs.frozen(slots=True)
class _Head:
    """A parsed request head whose body is still being read."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: dict[str, str]
    keep_alive: bool
    content_length: int  # -1: chunked


class RequestParser:
    """Turns a byte stream into `ParsedRequest`s (see the module docstring)."""

    __slots__ = ("_buffer", "_chunks", "_continued", "_head")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._head: _Head | None = None
        self._chunks: _ChunkedBody | None = None
        self._continued = False

    def feed(self, data: bytes) -> None:
        """Append bytes received from the peer."""
        self._buffer += data

    @property
    def buffered(self) -> int:
        """How many received bytes are not yet consumed by a returned request."""
        return len(self._buffer)

    def take_buffered(self) -> bytes:
        """The received bytes no request has consumed (a protocol switch takes them)."""
        data = bytes(self._buffer)
        self._buffer.clear()
        return data

    def take_continue(self) -> bool:
        """True once per request whose head asked `Expect: 100-continue` and whose body
        has not started: the caller then sends `CONTINUE` so the client sends the body."""
        head = self._head
        if head is None or self._continued or self._buffer:
            return False
        self._continued = head.headers.get("expect", "").lower() == "100-continue"
        return self._continued

    def next_request(self) -> ParsedRequest | None:
        """The next complete request, or None until more bytes are fed.

        Raises `ProtocolError` on malformed input; the parser is then unusable.
        """
        if self._head is None:
            self._head = self._take_head()
            if self._head is None:
                return None
        head = self._head
        body = self._take_body(head)
        if body is None:
            return None
        self._head = None
        self._continued = False
        return ParsedRequest(
            head.method, head.path, head.query, head.headers, body, head.keep_alive
        )

    def _take_head(self) -> _Head | None:
        buffer = self._buffer
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > MAX_HEAD_BYTES:
                raise ProtocolError(431, "request head too large")
            return None
        raw = bytes(buffer[:end])
        del buffer[: end + 4]
        return parse_head(raw)

    def _take_body(self, head: _Head) -> bytes | None:
        if head.content_length >= 0:
            size = head.content_length
            if len(self._buffer) < size:
                return None
            whole = bytes(self._buffer[:size])
            del self._buffer[:size]
            return whole
        if self._chunks is None:
            self._chunks = _ChunkedBody()
        body = self._chunks.take(self._buffer)
        if body is not None:
            self._chunks = None
        return body


def parse_head(raw: bytes) -> _Head:
    """Parse a request line and headers (without the blank line that ends them)."""
    lines = raw.decode("latin-1").split("\r\n")
    request_line = lines[0].split(" ")
    if len(request_line) != 3 or not request_line[2].startswith("HTTP/1."):
        raise ProtocolError(400, "malformed request line")
    method, target, version = request_line
    headers = _parse_headers(lines)
    path, _, query_string = target.partition("?")
    query = dict(parse_qsl(query_string)) if query_string else {}
    return _Head(
        method,
        path,
        query,
        headers,
        _keep_alive(version, headers.get("connection", "")),
        _body_length(headers),
    )


def _parse_headers(lines: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name[-1] in " \t" or name[0] in " \t":
            raise ProtocolError(400, "malformed header line")
        key = name.lower()
        value = value.strip()
        # Repeated headers fold into one comma-separated value, as RFC 9110 allows.
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def _keep_alive(version: str, connection: str) -> bool:
    """HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 the other way round."""
    tokens = connection.lower()
    if version == "HTTP/1.0":
        return "keep-alive" in tokens
    return "close" not in tokens


def _body_length(headers: Mapping[str, str]) -> int:
    """The declared body size, or -1 for a chunked body (which wins, per RFC 9112)."""
    encoding = headers.get("transfer-encoding")
    if encoding is not None:
        if encoding.lower() != "chunked":
            raise ProtocolError(501, "only chunked transfer-encoding is supported")
        return -1
    declared = headers.get("content-length", "0")
    if not declared.isdigit():
        raise ProtocolError(400, "bad content-length")
    size = int(declared)
    if size > MAX_BODY_BYTES:
        raise ProtocolError(413, "request body too large")
    return size


class _ChunkedBody:
    """Decodes a chunked request body; trailers are read and discarded."""

    __slots__ = ("_parts", "_size", "_trailers")

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        self._trailers = False

    def take(self, buffer: bytearray) -> bytes | None:
        """Consume what `buffer` holds of the body; the whole body once it is complete."""
        while True:
            if self._trailers:
                return self._take_trailers(buffer)
            line_end = buffer.find(b"\r\n")
            if line_end < 0:
                return None
            size = self._chunk_size(bytes(buffer[:line_end]))
            if size == 0:
                del buffer[: line_end + 2]
                self._trailers = True
                continue
            if len(buffer) < line_end + 2 + size + 2:
                return None
            start = line_end + 2
            if buffer[start + size : start + size + 2] != b"\r\n":
                raise ProtocolError(400, "chunk not followed by CRLF")
            self._parts.append(bytes(buffer[start : start + size]))
            del buffer[: start + size + 2]

    def _chunk_size(self, line: bytes) -> int:
        text = line.split(b";", 1)[0].strip()
        try:
            size = int(text, 16)
        except ValueError:
            raise ProtocolError(400, "bad chunk size") from None
        self._size += size
        if size < 0 or self._size > MAX_BODY_BYTES:
            raise ProtocolError(413, "request body too large")
        return size

    def _take_trailers(self, buffer: bytearray) -> bytes | None:
        while True:
            line_end = buffer.find(b"\r\n")
            if line_end < 0:
                return None
            empty = line_end == 0
            del buffer[: line_end + 2]
            if empty:
                return b"".join(self._parts)


def _status_line(status: int) -> bytes:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    return f"HTTP/1.1 {status} {reason}\r\n".encode()


class ResponseWriter:
    """Renders response heads and chunk frames; caches the status lines it has built."""

    __slots__ = ("_status_lines",)

    def __init__(self) -> None:
        self._status_lines: dict[int, bytes] = {}

    def head(
        self,
        status: int,
        content_type: str,
        headers: Mapping[str, str],
        *,
        content_length: int | None,
        keep_alive: bool,
    ) -> bytes:
        """The status line and headers; `content_length=None` means a chunked body."""
        line = self._status_lines.get(status)
        if line is None:
            line = self._status_lines[status] = _status_line(status)
        parts = [line, b"content-type: ", content_type.encode("latin-1")]
        if content_length is None:
            parts.append(b"\r\ntransfer-encoding: chunked")
        else:
            parts += (b"\r\ncontent-length: ", str(content_length).encode())
        if not keep_alive:
            parts.append(b"\r\nconnection: close")
        for name, value in headers.items():
            parts += (b"\r\n", name.encode("latin-1"), b": ", value.encode("latin-1"))
        parts.append(b"\r\n\r\n")
        return b"".join(parts)


def chunk_frame(data: bytes) -> bytes:
    """One chunk of a chunked body; `data` must not be empty (that would end the body)."""
    return b"%x\r\n%b\r\n" % (len(data), data)
