"""A small streaming HTTP/1.1 client on raw trio sockets, for what `wrk` cannot time.

It measures, per streamed answer, the time to the first body chunk (first token) and
to the terminating chunk (last chunk), and it can hold thousands of streams open at
once. It does no more parsing than that needs: the response head, then the chunked
framing (each chunk's payload is skipped, not decoded), or the `Content-Length` of an
event stream the server had whole before answering, so that a Python load generator
stays far cheaper than the servers it drives; the direct-to-simulator runs show its
ceiling.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import attrs
import trio

RECEIVE_BYTES = 65536


class ResponseError(Exception):
    """The server answered something other than a complete 200 stream."""


@attrs.frozen
class Endpoint:
    """Where to POST and what: a pre-encoded request, sent as is every time."""

    host: str
    port: int
    path: str
    headers: Mapping[str, str]
    body: bytes

    def request_bytes(self) -> bytes:
        head = [f"POST {self.path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        head += [f"{k}: {v}" for k, v in self.headers.items()]
        head += [f"Content-Length: {len(self.body)}", "", ""]
        return "\r\n".join(head).encode() + self.body


@attrs.define
class StreamTimes:
    """Timings of completed streams (seconds) and the failures, across workers."""

    first_chunk_s: list[float] = attrs.field(factory=list)
    last_chunk_s: list[float] = attrs.field(factory=list)
    errors: int = 0
    error_samples: list[str] = attrs.field(factory=list)

    def fail(self, exc: BaseException) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(f"{type(exc).__name__}: {exc}")


class _Reader:
    """Buffered reads of one response from a connection."""

    def __init__(self, conn: trio.SocketStream) -> None:
        self.conn = conn
        self.buf = bytearray()

    async def _fill(self) -> None:
        data = await self.conn.receive_some(RECEIVE_BYTES)
        if not data:
            raise ResponseError("connection closed by the server")
        self.buf += data

    async def head(self) -> tuple[int, dict[str, str]]:
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            await self._fill()
        lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        del self.buf[: end + 4]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(lines[0].split()[1]), headers

    async def skip(self, length: int) -> None:
        while len(self.buf) < length:
            await self._fill()
        del self.buf[:length]

    async def next_chunk_size(self) -> int:
        """Consume one chunk (size line, payload, CRLF); returns its payload size."""
        while (eol := self.buf.find(b"\r\n")) < 0:
            await self._fill()
        size = int(bytes(self.buf[:eol]).split(b";")[0], 16)
        await self.skip(eol + 2 + size + 2)  # no trailers after the last chunk
        return size


async def read_stream(
    reader: _Reader, started: float, on_first: Callable[[float], None] | None = None
) -> tuple[float, float, bool]:
    """Read one streamed answer; (first chunk s, last chunk s, connection reusable).

    An event stream whose whole answer was in the server's hands before its head left
    comes with a `Content-Length` instead of chunks: its first bytes are its first
    chunk."""
    status, headers = await reader.head()
    reusable = headers.get("connection", "").lower() != "close"
    if status == 200 and _known_length_stream(headers):
        if not reader.buf:
            await reader._fill()
        first = time.perf_counter() - started
        if on_first is not None:
            on_first(first)
        await reader.skip(int(headers["content-length"]))
        return first, time.perf_counter() - started, reusable
    if status != 200 or headers.get("transfer-encoding") != "chunked":
        await reader.skip(int(headers.get("content-length", "0")))
        raise ResponseError(f"status {status}, {headers.get('content-type')}")
    first = 0.0
    while await reader.next_chunk_size():
        if not first:
            first = time.perf_counter() - started
            if on_first is not None:
                on_first(first)
    last = time.perf_counter() - started
    return first, last, reusable


def _known_length_stream(headers: dict[str, str]) -> bool:
    return "content-length" in headers and headers.get("content-type", "").startswith(
        "text/event-stream"
    )


async def stream_worker(endpoint: Endpoint, stop_at: float, times: StreamTimes) -> None:
    """Send streamed requests one after another on a kept-alive connection until
    `stop_at` (perf_counter time), reconnecting after a failure."""
    request = endpoint.request_bytes()
    while time.perf_counter() < stop_at:
        try:
            conn = await trio.open_tcp_stream(endpoint.host, endpoint.port)
        except OSError as exc:
            times.fail(exc)
            await trio.sleep(0.05)
            continue
        async with conn:
            await _requests_on(conn, request, stop_at, times)


async def _requests_on(
    conn: trio.SocketStream, request: bytes, stop_at: float, times: StreamTimes
) -> None:
    reader = _Reader(conn)
    while time.perf_counter() < stop_at:
        started = time.perf_counter()
        try:
            await conn.send_all(request)
            first, last, reusable = await read_stream(reader, started)
        except (ResponseError, trio.BrokenResourceError, OSError, ValueError) as exc:
            times.fail(exc)
            return
        times.first_chunk_s.append(first)
        times.last_chunk_s.append(last)
        if not reusable:
            return


async def stream_load(endpoint: Endpoint, concurrency: int, duration_s: float) -> StreamTimes:
    """`concurrency` connections streaming back to back for `duration_s`."""
    times = StreamTimes()
    stop_at = time.perf_counter() + duration_s
    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(stream_worker, endpoint, stop_at, times)
    return times


@attrs.define
class HeldStreams:
    """Progress of `hold_streams`: how many are open, done early, or failed."""

    wanted: int
    opened: int = 0
    ended_early: int = 0
    times: StreamTimes = attrs.field(factory=StreamTimes)
    all_open: trio.Event = attrs.field(factory=trio.Event)


async def hold_streams(
    endpoint: Endpoint,
    held: HeldStreams,
    *,
    opening_at_once: int,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Open `held.wanted` streams (at most `opening_at_once` connecting together, so
    the listen backlog is not flooded) and keep reading them until cancelled.

    Reports started at once; `held.all_open` is set when every stream has its first
    chunk or has failed. Cancelling closes every connection: the server sees as many
    client disconnects.
    """
    gate = trio.Semaphore(opening_at_once)
    request = endpoint.request_bytes()
    async with trio.open_nursery() as nursery:
        for _ in range(held.wanted):
            nursery.start_soon(_hold_one, endpoint, request, gate, held)
        task_status.started()


async def _hold_one(
    endpoint: Endpoint, request: bytes, gate: trio.Semaphore, held: HeldStreams
) -> None:
    try:
        async with await _connect(endpoint, gate) as conn:
            started = time.perf_counter()  # not counting the wait for a place at the gate
            try:
                reader = await _first_chunk(conn, request)
            finally:
                gate.release()
            _count_open(held, time.perf_counter() - started)
            while await reader.next_chunk_size():
                pass
            held.ended_early += 1
    except (ResponseError, trio.BrokenResourceError, OSError, ValueError) as exc:
        held.times.fail(exc)
        _check_all(held)


async def _connect(endpoint: Endpoint, gate: trio.Semaphore) -> trio.SocketStream:
    """A connection, holding one place of `gate` (the caller releases it)."""
    await gate.acquire()
    try:
        return await trio.open_tcp_stream(endpoint.host, endpoint.port)
    except BaseException:
        gate.release()
        raise


async def _first_chunk(conn: trio.SocketStream, request: bytes) -> _Reader:
    """Send the request and read up to the stream's first chunk."""
    reader = _Reader(conn)
    await conn.send_all(request)
    status, _ = await reader.head()
    if status != 200:
        raise ResponseError(f"status {status}")
    if not await reader.next_chunk_size():
        raise ResponseError("the stream ended before its first chunk")
    return reader


def _count_open(held: HeldStreams, first_chunk_s: float) -> None:
    held.opened += 1
    held.times.first_chunk_s.append(first_chunk_s)
    _check_all(held)


def _check_all(held: HeldStreams) -> None:
    if held.opened + held.times.errors >= held.wanted:
        held.all_open.set()
