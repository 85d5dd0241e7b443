"""The time-to-first-audio-byte bench's parts: its upstream answers OpenAI's streamed
speech after exactly its delay, and its client reads whole answers on one connection."""

from __future__ import annotations

from functools import partial

import trio
from trio.testing import MockClock

from bench.audio_ttfb import first_body_byte, speech_endpoint
from bench.speech_source import PIECE, PIECES, _serve
from bench.sse_client import _Reader


async def test_the_first_audio_byte_comes_after_the_delay_and_the_connection_is_reused(
    autojump_clock: MockClock,
) -> None:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_tcp, partial(_serve, 0.02), 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        endpoint = speech_endpoint(port, "/openai/v1/audio/speech", "key")
        async with await trio.open_tcp_stream("127.0.0.1", port) as conn:
            reader = _Reader(conn)
            for _ in range(2):  # the second request on the same kept-alive connection
                started = trio.current_time()
                await conn.send_all(endpoint.request_bytes())
                status, headers = await reader.head()
                assert trio.current_time() - started >= 0.02
                assert (status, headers["content-type"]) == (200, "audio/pcm")
                sizes = []
                while size := await reader.next_chunk_size():
                    sizes.append(size)
                assert sizes == [PIECE] * PIECES
            assert await first_body_byte(reader, endpoint.request_bytes()) > 0
            assert not reader.buf  # the whole answer was read: the next one starts clean
        nursery.cancel_scope.cancel()
