"""Where an uploaded clip's bytes live, read without ever holding them whole.

A transcription upload (up to 25 MB) is spooled to a temporary file; a clip keeps a
`ClipSource` over it instead of a copy of its bytes. Every reader starts from the
beginning and has its own position (positional reads, `os.pread`, on one descriptor),
so a fallback or a hedged second attempt reads the clip again from its start while the
first is still sending, and the container check, the length measurement and the local
recogniser each decode it without sharing an offset. Small clips (those built in memory:
a pipeline's turn, a test's audio) are `BytesSource`s.

Blocking reads (`open`'s reader, `read_all`) belong in worker threads; `pieces` runs its
reads in worker threads itself.
"""

from __future__ import annotations

import io
import os
from collections.abc import AsyncGenerator
from typing import BinaryIO, Protocol

import attrs
import trio

PIECE_BYTES = 256 * 1024  # what one read hands the upstream client at a time


class ClipSource(Protocol):
    """A clip's bytes: their size, and readers that each start from the beginning."""

    @property
    def size(self) -> int: ...

    def open(self) -> BinaryIO:
        """A new reader positioned at the start (blocking reads)."""
        ...

    def pieces(self) -> AsyncGenerator[bytes, None]:
        """The bytes from the start, in pieces of at most `PIECE_BYTES`; consume under
        `aclosing`. Each call starts again from the beginning."""
        ...

    def read_all(self) -> bytes:
        """Every byte at once (blocking): for vendors that take the clip inside JSON."""
        ...


@attrs.frozen(slots=True)
class BytesSource:
    """A clip already in memory."""

    data: bytes = attrs.field(repr=False)

    @property
    def size(self) -> int:
        return len(self.data)

    def open(self) -> BinaryIO:
        return io.BytesIO(self.data)

    async def pieces(self) -> AsyncGenerator[bytes, None]:
        view = memoryview(self.data)
        for start in range(0, len(view), PIECE_BYTES):
            await trio.lowlevel.checkpoint()
            yield bytes(view[start : start + PIECE_BYTES])

    def read_all(self) -> bytes:
        return self.data


@attrs.frozen(slots=True)
class FileSource:
    """A clip in a file whose descriptor `fd` someone else owns and keeps open while the
    clip is in use (the upload's spool); only positional reads are made on it."""

    fd: int
    size: int

    def open(self) -> BinaryIO:
        return io.BufferedReader(PositionalReader(self.fd, self.size), PIECE_BYTES)

    async def pieces(self) -> AsyncGenerator[bytes, None]:
        offset = 0
        while offset < self.size:
            wanted = min(PIECE_BYTES, self.size - offset)
            piece = await trio.to_thread.run_sync(os.pread, self.fd, wanted, offset)
            if not piece:
                raise OSError(f"the spooled clip ended at {offset} of {self.size} bytes")
            offset += len(piece)
            yield piece

    def read_all(self) -> bytes:
        return os.pread(self.fd, self.size, 0)


class PositionalReader(io.RawIOBase):
    """A seekable reader over `fd`'s first `size` bytes with a position of its own."""

    def __init__(self, fd: int, size: int) -> None:
        super().__init__()
        self._fd = fd
        self._size = size
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        wanted = min(len(buffer), self._size - self._position)
        if wanted <= 0:
            return 0
        data = os.pread(self._fd, wanted, self._position)
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def tell(self) -> int:
        return self._position


def as_source(value: bytes | ClipSource) -> ClipSource:
    """Bytes become a `BytesSource`; a source stays itself (`AudioClip`'s converter)."""
    return BytesSource(value) if isinstance(value, bytes) else value
