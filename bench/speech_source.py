"""`python -m bench.speech_source --port P --delay-ms D`: a streamed-speech upstream whose
first byte comes exactly `D` ms after the request, at almost no CPU.

The simulator synthesises each clip with eSpeak NG (several CPU-ms per request on this
machine), so at concurrency 32 its own queue, not the delay, sets its first byte, and
the direct baseline wobbles by more than what the gateway adds. This process speaks the
part of OpenAI's wire protocol that streamed speech uses: `POST /openai/v1/audio/speech`
answers 200 `audio/pcm` with chunked transfer encoding (24 kHz 16-bit mono PCM of a tone,
in 4,800-byte chunks, as OpenAI streams it) after the delay; `GET /openai/v1/models`
answers a model list (the gateway's health probe). Keep-alive connections, HTTP/1.1,
raw trio sockets; nothing else.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import struct
from functools import partial

import trio

PIECE = 4_800  # 100 ms of 24 kHz 16-bit mono
PIECES = 8
TONE = b"".join(struct.pack("<h", int(6000 * math.sin(i / 8))) for i in range(PIECE // 2))
MODELS = b'{"object":"list","data":[{"id":"tts-1","object":"model","owned_by":"openai"}]}'
SPEECH_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: audio/pcm\r\ntransfer-encoding: chunked\r\n\r\n"
CHUNK = b"%x\r\n%s\r\n" % (PIECE, TONE)


def _answer(status: bytes, body: bytes) -> bytes:
    head = b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
    return head % (status, len(body)) + body


async def _serve(delay_s: float, conn: trio.SocketStream) -> None:
    with contextlib.suppress(trio.BrokenResourceError, OSError):  # the client went away
        await _requests(delay_s, conn)


async def _requests(delay_s: float, conn: trio.SocketStream) -> None:
    buf = bytearray()
    async with conn:
        while True:
            while (end := buf.find(b"\r\n\r\n")) < 0:
                data = await conn.receive_some(65536)
                if not data:
                    return
                buf += data
            head = bytes(buf[:end]).decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            while len(buf) < end + 4 + length:
                buf += await conn.receive_some(65536)
            del buf[: end + 4 + length]
            method, path = head.split(" ", 2)[:2]
            if method == "POST" and path.endswith("/audio/speech"):
                await trio.sleep(delay_s)
                await conn.send_all(SPEECH_HEAD + CHUNK)  # head and first audio: one write
                for _ in range(PIECES - 1):
                    await conn.send_all(CHUNK)
                await conn.send_all(b"0\r\n\r\n")
            elif path.endswith("/models"):
                await conn.send_all(_answer(b"200 OK", MODELS))
            else:
                await conn.send_all(_answer(b"404 Not Found", b'{"error":{"message":"no"}}'))


async def main(port: int, delay_ms: float) -> None:
    await trio.serve_tcp(partial(_serve, delay_ms / 1000), port, host="127.0.0.1")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.speech_source", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    arguments = parser.parse_args()
    trio.run(main, arguments.port, arguments.delay_ms)
