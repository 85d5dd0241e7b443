"""Merge several async iterables into one stream, in arrival order, through a bounded channel.

Each source is read by its own task; items go into one memory channel whose buffer is
bounded (0 by default: a rendezvous), so a slow consumer holds every source back rather
than letting items pile up. Like `race`, the nursery lives in a class-based async context
manager, never in an async generator (PEP 789).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable
from contextlib import AbstractAsyncContextManager, aclosing
from types import TracebackType
from typing import Generic, TypeVar

import trio

T = TypeVar("T")


def merge(*sources: AsyncIterable[T], max_buffer_size: int = 0) -> Merge[T]:
    """Use as `async with merge(a, b) as items: async for item in items: ...`.

    Items of one source keep their order; items of different sources interleave as they
    arrive. The stream ends when every source is exhausted. Leaving the block early
    cancels the sources' readers and closes every source that is an async generator. A
    source that raises cancels the block and the other sources; its error is raised from
    the block (in an ExceptionGroup, as from any trio nursery).

    Cancellation: cancelling the caller cancels every reader and closes every source.
    """
    if max_buffer_size < 0:
        raise ValueError("max_buffer_size must not be negative")
    return Merge(sources, max_buffer_size)


class Merge(Generic[T]):
    """The async context manager `merge()` returns; single use."""

    def __init__(self, sources: tuple[AsyncIterable[T], ...], max_buffer_size: int) -> None:
        self._sources = sources
        self._max_buffer_size = max_buffer_size
        self._nursery: trio.Nursery | None = None
        self._manager: AbstractAsyncContextManager[trio.Nursery] | None = None

    async def __aenter__(self) -> trio.MemoryReceiveChannel[T]:
        if self._manager is not None:
            raise RuntimeError("a merge can be entered only once")
        self._manager = trio.open_nursery()
        self._nursery = await self._manager.__aenter__()
        send, receive = trio.open_memory_channel[T](self._max_buffer_size)
        with send:
            for source in self._sources:
                self._nursery.start_soon(_pump, source, send.clone())
        self._receive = receive
        return receive

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        assert self._manager is not None and self._nursery is not None
        self._receive.close()
        # The consumer is done, early or not: readers still waiting on a source stop now.
        self._nursery.cancel_scope.cancel(reason="the consumer of the merge is done")
        await self._manager.__aexit__(None, None, None)
        return False


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
