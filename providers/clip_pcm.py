"""A recorded clip as the PCM a streaming recogniser takes, decoded as it is sent.

A vendor whose model only listens live (Voxtral Realtime) can still transcribe an
uploaded file: the file is decoded to PCM16 mono and fed to the live socket piece by
piece. Decoding the whole file first would hold minutes of PCM in memory (a 25 MB MP3
is about 50 MB of 16 kHz PCM); here one piece is held at a time, decoded in a worker
thread under the caller's limiter, so FFmpeg's work never runs on the event loop.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Iterator
from contextlib import ExitStack, aclosing, asynccontextmanager

import trio

from providers.audio_codec import decoded_frames
from providers.audio_types import AudioClip

PIECE_BYTES = 128 * 1024  # PCM handed on at a time: 4 s at 16 kHz


@asynccontextmanager
async def clip_pcm(
    clip: AudioClip, rate: int, limiter: trio.CapacityLimiter
) -> AsyncGenerator[AsyncGenerator[bytes, None], None]:
    """The clip's audio as PCM16 mono at `rate`, in pieces of at most `PIECE_BYTES`.
    Leaving the block closes the decoder and the clip's reader, whether or not every
    piece was read (cancellation included). A clip that does not decode raises
    `providers.audio_codec.AudioDecodeError` from the iteration."""
    with ExitStack() as owned:
        reader = owned.enter_context(clip.source.open())
        frames = decoded_frames(reader, rate)
        owned.callback(frames.close)
        pieces = _pieces(frames)
        owned.callback(pieces.close)
        async with aclosing(_stepped(pieces, limiter)) as stepped:
            yield stepped


async def _stepped(
    pieces: Iterator[bytes], limiter: trio.CapacityLimiter
) -> AsyncGenerator[bytes, None]:
    """Each piece decoded in a worker thread (one step at a time, never two at once)."""
    while True:
        piece = await trio.to_thread.run_sync(next, pieces, None, limiter=limiter)
        if piece is None:
            return
        yield piece


def _pieces(frames: Iterator[bytes]) -> Generator[bytes, None, None]:
    """Decoded frames joined into pieces of `PIECE_BYTES` (the last one shorter)."""
    pending = bytearray()
    for frame in frames:
        pending += frame
        while len(pending) >= PIECE_BYTES:
            yield bytes(pending[:PIECE_BYTES])
            del pending[:PIECE_BYTES]
    if pending:
        yield bytes(pending)
