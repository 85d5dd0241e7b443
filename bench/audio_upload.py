"""Transcription uploads at once: the gateway's resident memory while it relays them.

A gateway process (its own data dir, OpenAI's API pointed at a sink in this process)
takes `uploads` concurrent `POST /v1/audio/transcriptions` of `mb` MB WAV files each,
streamed by the client from a generator (one piece held at a time). The gateway spools
each, measures its length by decoding it, and sends it on to `whisper-1`. The upstream
here is a sink that reads each body to its declared end, counts it, and answers like
OpenAI: the simulator would hold every body whole and decode it again, which measures the
simulator (and costs the shared machine gigabytes), not the gateway. Reports the
gateway's RSS sampled every 100 ms and its peak (VmHWM). Target: 50 x 25 MB under 250 MiB.
"""

from __future__ import annotations

import os
import secrets
import struct
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from functools import partial

import httpx
import trio

from bench.procs import free_port
from bench.uploads import rss_kib, sampled_batch, streamed_multipart, wait_ready

ADMIN_KEY = "gw_admin_bench_" + secrets.token_hex(12)
PIECE = 1024 * 1024
RATE = 16_000
_TEXT = b'{"text": "a square wave"}'
ANSWER = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
    len(_TEXT),
    _TEXT,
)


def wav_header(data_bytes: int) -> bytes:
    """A 16 kHz mono 16-bit WAV header for `data_bytes` of samples."""
    return (
        b"RIFF"
        + struct.pack("<I", 36 + data_bytes)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, RATE, RATE * 2, 2, 16)
        + b"data"
        + struct.pack("<I", data_bytes)
    )


def upload_body(boundary: str, size: int) -> AsyncIterator[bytes]:
    """A multipart transcription request whose file is a `size`-byte WAV of a square wave."""
    samples = size - 44
    wave = (struct.pack("<h", 4000) * 40 + struct.pack("<h", -4000) * 40) * (PIECE // 160)
    file = ("a.wav", "audio/wav")
    head = wav_header(samples)
    fields = {"model": "whisper-1"}
    return streamed_multipart(boundary, fields, file, head=head, piece=wave, size=samples)


class Sink:
    """An OpenAI transcription endpoint that reads bodies and forgets them."""

    def __init__(self) -> None:
        self.bodies: list[int] = []

    async def serve(self, *, task_status: trio.TaskStatus[int]) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, stream: trio.SocketStream) -> None:
        buffer = bytearray()
        async with stream:
            while True:
                length = await _read_head(stream, buffer)
                if length is None:
                    return
                received = min(len(buffer), length)
                del buffer[:received]
                while received < length:
                    data = await stream.receive_some(min(PIECE, length - received))
                    if not data:
                        return
                    received += len(data)
                self.bodies.append(length)
                await stream.send_all(ANSWER)


async def _read_head(stream: trio.SocketStream, buffer: bytearray) -> int | None:
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        if not data:
            return None
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    lines = bytes(buffer[:end]).decode("latin-1").lower().split("\r\n")
    del buffer[:end]
    return next((int(ln.split(":")[1]) for ln in lines if ln.startswith("content-length")), 0)


async def one_upload(http: httpx.AsyncClient, size: int) -> None:
    boundary = secrets.token_hex(8)
    answer = await http.post(
        "/v1/audio/transcriptions",
        content=upload_body(boundary, size),
        headers={"content-type": f"multipart/form-data; boundary={boundary}"},
    )
    answer.raise_for_status()
    assert answer.json()["text"] == "a square wave", answer.text
    assert answer.headers["x-service-provider"] == "openai", answer.headers


async def uploads(url: str, pid: int, count: int, size: int) -> dict[str, float]:
    idle = rss_kib(pid)
    auth = {"authorization": f"Bearer {ADMIN_KEY}"}
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=url, headers=auth, timeout=900, limits=limits) as http:
        elapsed, most = await sampled_batch(pid, count, partial(one_upload, http, size))
    return {
        "uploads": count,
        "mb_each": round(size / 1e6, 1),
        "seconds": round(elapsed, 1),
        "rss_idle_mib": round(idle / 1024, 1),
        "rss_max_sampled_mib": round(most / 1024, 1),
        "rss_peak_mib": round(rss_kib(pid, "VmHWM") / 1024, 1),
    }


async def upload_memory(count: int, mb: int) -> dict[str, float]:
    """Start a sink and a gateway process, run the uploads, stop both."""
    sink = Sink()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    async with trio.open_nursery() as nursery:
        sink_port = await nursery.start(sink.serve)
        with tempfile.TemporaryDirectory() as data_dir:
            env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
            env.update(
                GATEWAY_ADMIN_KEY=ADMIN_KEY,
                GATEWAY_RATE_LIMITS_ENABLED="0",
                OPENAI_API_KEY="sk-sink",
                OPENAI_BASE_URL=f"http://127.0.0.1:{sink_port}/v1",
            )
            argv = [sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1",
                    "--port", str(port), "--data-dir", data_dir]  # fmt: skip
            process = await trio.lowlevel.open_process(
                argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            try:
                await wait_ready(url)
                figures = await uploads(url, process.pid, count, mb * 1_000_000)
            finally:
                process.terminate()
                with trio.move_on_after(30, shield=True):
                    await process.wait()
        nursery.cancel_scope.cancel()
    figures["upstream_bodies"] = len(sink.bodies)
    return figures
