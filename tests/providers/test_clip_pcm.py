"""`providers.clip_pcm`: a clip decoded to PCM piece by piece for a live socket, its
reader and decoder closed however the block is left."""

from __future__ import annotations

import io
from collections.abc import AsyncGenerator
from typing import BinaryIO

import attrs
import trio

from providers.audio_codec import Pcm, encode
from providers.audio_types import AudioClip
from providers.clip_pcm import PIECE_BYTES, clip_pcm
from providers.clip_source import BytesSource

TEN_SECONDS = Pcm(b"\x10\x00" * 24_000 * 10, 24_000)


@attrs.define
class TrackedSource:
    """A clip in memory that keeps every reader it hands out."""

    data: bytes
    readers: list[io.BytesIO] = attrs.field(factory=list)

    @property
    def size(self) -> int:
        return len(self.data)

    def open(self) -> BinaryIO:
        self.readers.append(io.BytesIO(self.data))
        return self.readers[-1]

    def pieces(self) -> AsyncGenerator[bytes, None]:
        return BytesSource(self.data).pieces()

    def read_all(self) -> bytes:
        return self.data


async def test_the_clip_comes_as_16_khz_pcm_in_bounded_pieces() -> None:
    clip = AudioClip(encode(TEN_SECONDS, "mp3"), "mp3", 10.0)
    limiter = trio.CapacityLimiter(1)
    async with clip_pcm(clip, 16_000, limiter) as pieces:
        sizes = [len(piece) async for piece in pieces]
    assert all(size <= PIECE_BYTES for size in sizes) and len(sizes) > 1
    assert abs(sum(sizes) / 2 / 16_000 - 10.0) < 0.1


async def test_leaving_early_closes_the_reader() -> None:
    source = TrackedSource(encode(TEN_SECONDS, "wav"))
    clip = AudioClip(source, "wav", 10.0)
    async with clip_pcm(clip, 16_000, trio.CapacityLimiter(1)) as pieces:
        assert len(await anext(pieces)) == PIECE_BYTES
        assert not source.readers[0].closed
    assert source.readers[0].closed


async def test_a_cancelled_read_closes_the_reader() -> None:
    source = TrackedSource(encode(TEN_SECONDS, "wav"))
    clip = AudioClip(source, "wav", 10.0)
    with trio.CancelScope() as scope:
        async with clip_pcm(clip, 16_000, trio.CapacityLimiter(1)) as pieces:
            await anext(pieces)
            scope.cancel()
            await anext(pieces)
    assert scope.cancelled_caught
    assert source.readers[0].closed
