"""A recording that is read while it is being made: one writer appends, any number of
followers read it from the start, each at its own pace.

A streaming recogniser is fed the user's audio as it arrives; when it fails before it
has recognised anything, the next candidate must hear the turn from its first sample,
not from wherever the audio had got to. A channel would hand each piece to one reader
once; a tape keeps the whole turn (bounded by the caller: a session holds at most five
minutes of a turn), so every attempt of a race follows it from the start, then waits
for more until the writer closes it. Nothing is copied per follower but the pieces it
reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import trio

PIECE_BYTES = 32_000  # what a follower is handed at most at once (1 s of 16 kHz PCM16)


class TapeClosed(Exception):
    """Appending to a tape that was closed."""


class Tape:
    """Bytes appended by one writer and followed by any number of readers.

    `close` ends the recording: followers read what is left and stop. A tape that is
    abandoned without being closed leaves its followers waiting: they belong to a task
    the abandoning owner cancels.
    """

    def __init__(self) -> None:
        self._data = bytearray()
        self._grew = trio.Event()
        self._on_close: list[Callable[[], None]] = []
        self.closed_at: float | None = None  # trio time of `close`

    def __len__(self) -> int:
        return len(self._data)

    @property
    def closed(self) -> bool:
        return self.closed_at is not None

    def append(self, data: bytes) -> None:
        """Add `data` at the end and wake the followers."""
        if self.closed:
            raise TapeClosed("the tape was closed")
        if data:
            self._data += data
            self._wake()

    def close(self) -> None:
        """No more data: followers stop once they have read everything (idempotent)."""
        if not self.closed:
            self.closed_at = trio.current_time()
            self._wake()
            for callback in self._on_close:
                callback()
            self._on_close.clear()

    def when_closed(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` when the tape closes (now if it is closed); returns what
        forgets it. A cancel scope's deadline can be armed this way without a task."""
        if self.closed:
            callback()
            return lambda: None
        self._on_close.append(callback)
        return lambda: self._on_close.remove(callback) if callback in self._on_close else None

    def recorded(self) -> bytes:
        """Everything appended so far (a copy)."""
        return bytes(self._data)

    async def wait_closed(self) -> None:
        """Return once the tape is closed."""
        while not self.closed:
            await self._grew.wait()

    async def follow(self, piece: int = PIECE_BYTES) -> AsyncIterator[bytes]:
        """The tape from its start, in pieces of at most `piece` bytes, waiting for more
        as it grows; ends once the tape is closed and read to its end. Cancelling the
        wait loses nothing: a new follower starts from the start again."""
        position = 0
        while True:
            if position < len(self._data):
                chunk = bytes(self._data[position : position + piece])
                position += len(chunk)
                yield chunk
            elif self.closed:
                return
            else:
                await self._grew.wait()

    def _wake(self) -> None:
        self._grew.set()
        self._grew = trio.Event()
