"""Streamed request bodies: a clip read from where it lies, piece by piece, with its length
declared up front, through both upstream clients; and the clip sources themselves."""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing

import attrs
import httpx
import pytest
import trio

from providers.audio_codec import decode, decoded_duration
from providers.clip_source import PIECE_BYTES, BytesSource, ClipSource, FileSource
from providers.multipart_body import form_body, form_stream
from providers.upstream import HttpxUpstream, LeanUpstream, Upstream, WriteError
from tests.providers.wav import square_wave_wav


@attrs.define
class Received:
    heads: list[bytes] = attrs.field(factory=list)
    bodies: list[bytes] = attrs.field(factory=list)


async def _read_request(stream: trio.SocketStream, buffer: bytearray, seen: Received) -> bool:
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        if not data:
            return False
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    head = bytes(buffer[:end])
    del buffer[:end]
    lines = head.decode("latin-1").lower().split("\r\n")
    length = next(int(line.split(":")[1]) for line in lines if line.startswith("content-length"))
    while len(buffer) < length:
        data = await stream.receive_some(65536)
        if not data:
            return False
        buffer += data
    seen.heads.append(head)
    seen.bodies.append(bytes(buffer[:length]))
    del buffer[:length]
    return True


async def serve_recorder(seen: Received, *, task_status: trio.TaskStatus[int]) -> None:
    """A keep-alive HTTP/1.1 server that records each request and answers `ok`."""

    async def handle(stream: trio.SocketStream) -> None:
        buffer = bytearray()
        async with stream:
            while await _read_request(stream, buffer, seen):
                await stream.send_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(handle, listeners)


@pytest.fixture(params=["lean", "httpx"])
async def upstream(request: pytest.FixtureRequest) -> AsyncIterator[Upstream]:
    client: Upstream = (
        LeanUpstream() if request.param == "lean" else HttpxUpstream(httpx.AsyncClient())
    )
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
def spooled() -> Iterator[tuple[int, bytes]]:
    """A file of 2.5 pieces' worth of distinct bytes, open for positional reads."""
    data = bytes(range(256)) * (PIECE_BYTES * 5 // 2 // 256) + b"end"
    with tempfile.TemporaryFile() as file:
        file.write(data)
        file.flush()
        yield file.fileno(), data


async def collect(source: ClipSource) -> list[bytes]:
    async with aclosing(source.pieces()) as pieces:
        return [piece async for piece in pieces]


async def test_a_file_source_reads_pieces_of_bounded_size(spooled: tuple[int, bytes]) -> None:
    fd, data = spooled
    pieces = await collect(FileSource(fd, len(data)))
    assert b"".join(pieces) == data
    assert max(len(piece) for piece in pieces) == PIECE_BYTES
    assert len(pieces) == 3
    assert await collect(FileSource(fd, len(data))) == pieces  # again from the start


def test_readers_of_one_file_keep_their_own_positions(spooled: tuple[int, bytes]) -> None:
    fd, data = spooled
    source = FileSource(fd, len(data))
    with source.open() as first, source.open() as second:
        assert first.read(10) == data[:10]
        assert second.read(20) == data[:20]
        assert first.read(5) == data[10:15]
        first.seek(-3, io.SEEK_END)
        assert first.read() == b"end"
        assert second.read(1) == data[20:21]


def test_a_spooled_clip_decodes_like_its_bytes() -> None:
    wav = square_wave_wav(3.0)
    with tempfile.TemporaryFile() as file:
        file.write(wav)
        file.flush()
        source = FileSource(file.fileno(), len(wav))
        with source.open() as reader:
            pcm = decode(reader)
        with source.open() as reader:
            seconds = decoded_duration(reader)
    assert pcm == decode(wav)
    assert seconds == pcm.duration_s == pytest.approx(3.0)


async def test_a_streamed_form_is_the_whole_form_with_its_length_declared(
    nursery: trio.Nursery, upstream: Upstream, spooled: tuple[int, bytes]
) -> None:
    seen = Received()
    port = await nursery.start(serve_recorder, seen)
    fd, data = spooled
    fields = [("model", "whisper-1")]
    body, content_type = form_stream(
        fields, "file", "a.wav", "audio/wav", FileSource(fd, len(data))
    )
    url = f"http://127.0.0.1:{port}/v1/audio/transcriptions"
    headers = {"content-type": content_type}
    answer = await upstream.request("POST", url, headers, body)
    async with upstream.stream("POST", url, headers, body) as streamed:  # the same body again
        assert await streamed.read() == b"ok"
    assert answer.status == 200 and answer.body == b"ok"
    boundary = content_type.partition("boundary=")[2].encode()
    whole, whole_type = form_body(fields, "file", "a.wav", "audio/wav", data)
    expected = whole.replace(whole_type.partition("boundary=")[2].encode(), boundary)
    assert seen.bodies == [expected, expected]
    for head in seen.heads:
        assert f"content-length: {body.length}".encode() in head.lower()
        assert b"transfer-encoding" not in head.lower()


@attrs.frozen
class ShortBody:
    """A body that declares more bytes than its pieces hold."""

    length: int = 10

    async def pieces(self) -> AsyncGenerator[bytes, None]:
        yield b"12345"


async def test_a_body_shorter_than_declared_fails_before_the_answer_is_awaited(
    nursery: trio.Nursery,
) -> None:
    seen = Received()
    port = await nursery.start(serve_recorder, seen)
    client = LeanUpstream()
    with pytest.raises(WriteError):
        await client.request("POST", f"http://127.0.0.1:{port}/x", {}, ShortBody())
    await client.aclose()


async def test_bytes_sources_stream_in_bounded_pieces() -> None:
    data = os.urandom(PIECE_BYTES + 7)
    pieces = await collect(BytesSource(data))
    assert [len(piece) for piece in pieces] == [PIECE_BYTES, 7]
    assert BytesSource(data).read_all() is data
