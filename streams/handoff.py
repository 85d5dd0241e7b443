"""Hand-offs through bounded memory channels without a scheduler round trip per item.

Trio's `send` and `receive` each end in a checkpoint, so every item a stage hands on
costs the sender one extra task step even when the channel had room, and a reader
draining a channel that already holds items yields once per item. A pipeline passes
every token and every audio piece through two or three channels, so those steps are
most of its own work (bench/README.md, "Voice pipelines": 150 -> ~100 task steps per
pipeline). `put` and `take` keep the bound and the waiting (a full channel still blocks
the sender, an empty one the reader) but only checkpoint when they have to wait; the
stages around them checkpoint on every upstream read, so cancellation still arrives
within one item.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import trio

T = TypeVar("T")


async def put(channel: trio.MemorySendChannel[T], item: T) -> None:
    """`channel.send(item)`, without yielding when the channel has room."""
    try:
        channel.send_nowait(item)
    except trio.WouldBlock:
        await channel.send(item)


async def take(channel: trio.MemoryReceiveChannel[T]) -> T:
    """`channel.receive()`, without yielding when an item is waiting; raises
    `trio.EndOfChannel` when the channel is closed and empty."""
    try:
        return channel.receive_nowait()
    except trio.WouldBlock:
        return await channel.receive()


def waiting(channel: trio.MemoryReceiveChannel[T], limit: int) -> list[T]:
    """The items already in `channel` (at most `limit`), taken without waiting: a
    consumer whose every step costs the same whatever its size (a trip to a worker
    thread) takes what piled up while it was busy in one step."""
    taken: list[T] = []
    while len(taken) < limit:
        try:
            taken.append(channel.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel):
            break
    return taken


def items(channel: trio.MemoryReceiveChannel[T]) -> Items[T]:
    """`async for item in items(channel)`: the channel's items, through `take`."""
    return Items(channel)


class Items(Generic[T]):
    """An async iterator over a receiving channel (a class, not an async generator:
    nothing is left for the garbage collector)."""

    __slots__ = ("_channel",)

    def __init__(self, channel: trio.MemoryReceiveChannel[T]) -> None:
        self._channel = channel

    def __aiter__(self) -> Items[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await take(self._channel)
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None
