"""Many streamed uploads at once against a gateway process, its memory watched meanwhile.

What `bench.files` (file uploads) and `bench.audio_upload` (transcription uploads) both
measure: the client streams each multipart body from a generator (one piece held at a
time), so the only process whose memory grows with the bodies is the gateway; its RSS is
sampled every 100 ms while the batch runs, and its peak (VmHWM) read afterwards.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path

import httpx
import trio

SAMPLE_S = 0.1


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A memory figure of `/proc/<pid>/status` (VmRSS, VmHWM, ...) in KiB; 0 if absent."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def wait_ready(url: str) -> None:
    """Until the gateway at `url` answers `/health` (60 s at most)."""
    with trio.fail_after(60):
        while True:
            try:
                async with httpx.AsyncClient(base_url=url, timeout=2) as http:
                    if (await http.get("/health")).status_code == 200:
                        return
            except httpx.TransportError:
                pass
            await trio.sleep(0.2)


async def streamed_multipart(
    boundary: str,
    fields: Mapping[str, str],
    file: tuple[str, str],
    *,
    head: bytes,
    piece: bytes,
    size: int,
) -> AsyncIterator[bytes]:
    """A multipart body: the form `fields`, then one file part (`file`: its name and
    content type) that is `head` followed by `size` bytes of `piece` repeated, yielded a
    piece at a time."""
    filename, content_type = file
    parts = "".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in fields.items()
    )
    yield (
        f"{parts}--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        f"Content-Type: {content_type}\r\n\r\n"
    ).encode() + head
    sent = 0
    while sent < size:
        chunk = piece[: min(len(piece), size - sent)]
        sent += len(chunk)
        yield chunk
    yield f"\r\n--{boundary}--\r\n".encode()


async def sampled_batch(
    pid: int, count: int, one: Callable[[], Awaitable[None]]
) -> tuple[float, int]:
    """Run `one` `count` times at once while sampling the RSS of process `pid`: the
    seconds the batch took and the largest sample (KiB)."""
    samples: list[int] = []
    started = time.perf_counter()
    async with trio.open_nursery() as nursery:

        async def sample() -> None:
            while True:
                samples.append(rss_kib(pid))
                await trio.sleep(SAMPLE_S)

        nursery.start_soon(sample)
        async with trio.open_nursery() as batch:
            for _ in range(count):
                batch.start_soon(one)
        nursery.cancel_scope.cancel()
    return time.perf_counter() - started, max(samples)
