"""Merge several async iterables into one stream, in arrival order, through a bounded channel.

Each source is read by its own task; items go into one memory channel whose buffer is
bounded (0 by default: a rendezvous), so a slow consumer holds every source back rather
than letting items pile up. The readers' nursery is owned by one `@asynccontextmanager`,
never by an async generator that iterates (PEP 789).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from typing import TypeVar

import trio

from streams.held import background

T = TypeVar("T")


def merge(
    *sources: AsyncIterable[T], max_buffer_size: int = 0
) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[T]]:
    """Use as `async with merge(a, b) as items: async for item in items: ...`.

    Items of one source keep their order; items of different sources interleave as they
    arrive. The stream ends when every source is exhausted. Leaving the block early
    cancels the sources' readers and closes every source that is an async generator. A
    source that raises cancels the block and the other sources; its error is raised from
    the block (in an ExceptionGroup, as from any trio nursery); an error raised by the
    block itself leaves it as raised.

    Cancellation: cancelling the caller cancels every reader and closes every source.
    """
    if max_buffer_size < 0:
        raise ValueError("max_buffer_size must not be negative")
    return _merged(sources, max_buffer_size)


@asynccontextmanager
async def _merged(
    sources: tuple[AsyncIterable[T], ...], max_buffer_size: int
) -> AsyncIterator[trio.MemoryReceiveChannel[T]]:
    send, receive = trio.open_memory_channel[T](max_buffer_size)
    async with background() as nursery:
        with send:
            for source in sources:
                nursery.start_soon(_pump, source, send.clone())
        try:
            yield receive
        finally:
            receive.close()
            # The consumer is done, early or not: readers still waiting on a source stop now.
            nursery.cancel_scope.cancel(reason="the consumer of the merge is done")


async def _pump(source: AsyncIterable[T], send: trio.MemorySendChannel[T]) -> None:
    async with send:
        if isinstance(source, AsyncGenerator):
            async with aclosing(source):
                await _forward(source, send)
        else:
            await _forward(source, send)


async def _forward(source: AsyncIterable[T], send: trio.MemorySendChannel[T]) -> None:
    async for item in source:
        try:
            await send.send(item)
        except trio.BrokenResourceError:
            return  # the consumer closed its end
