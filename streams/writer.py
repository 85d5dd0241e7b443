"""One writer task per connection: whatever many tasks want written goes through a bounded
channel to the one task that writes, so no write is ever cancelled halfway.

A WebSocket with permessage-deflate compresses each frame with state shared by the
whole connection: a send cancelled after the frame was compressed but before it was
written leaves the peer's decompressor out of step, and every later message arrives as
garbage (issue 35). Cancelling an answer must not cancel a send. The tasks that produce
messages (a session's reader, its answer) only hand messages to the channel, which is
atomic under cancellation (a cancelled `send` delivered nothing; one that returned
delivered all), and the writer, which lives outside their cancel scopes, writes each
message whole.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import trio

T = TypeVar("T")

OUTBOX_SIZE = 64  # messages waiting for the writer: a slow reader slows the producers


@asynccontextmanager
async def single_writer(
    write: Callable[[T], Awaitable[None]], *, size: int = OUTBOX_SIZE
) -> AsyncIterator[trio.MemorySendChannel[T]]:
    """Run one task that writes, in order, every message sent to the channel handed out.

    On leaving normally, what was queued is written before the block ends (the send
    side is closed and the writer drains it). Leaving by an exception or a cancellation
    stops the writer where it is: the connection is going away. A failed write is
    raised out of the block, cancelling it.
    """
    send, receive = trio.open_memory_channel[T](size)

    async def writer() -> None:
        async with receive:
            async for message in receive:
                await write(message)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer)
        try:
            async with send:
                yield send
        except BaseException:
            nursery.cancel_scope.cancel()
            raise
