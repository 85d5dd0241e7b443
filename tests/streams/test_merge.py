"""Merging async iterables: arrival order, backpressure, early exit, failures, cancellation."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
from trio.testing import MockClock

from streams.merge import merge


class Ticker:
    """Yields `name:i` every `period` seconds, `count` times; remembers when it closed."""

    def __init__(self, name: str, period: float, count: int, fail_at: int | None = None) -> None:
        self.name, self.period, self.count, self.fail_at = name, period, count, fail_at
        self.closed_at: float | None = None

    async def run(self) -> AsyncIterator[str]:
        try:
            for i in range(self.count):
                await trio.sleep(self.period)
                if i == self.fail_at:
                    raise OSError(f"{self.name} broke")
                yield f"{self.name}:{i}"
        finally:
            self.closed_at = trio.current_time()


async def test_items_interleave_in_arrival_order(autojump_clock: MockClock) -> None:
    a, b = Ticker("a", 1, 3), Ticker("b", 1.25, 2)
    seen: list[tuple[float, str]] = []
    async with merge(a.run(), b.run()) as items:
        async for item in items:
            seen.append((trio.current_time(), item))
    assert seen == [(1, "a:0"), (1.25, "b:0"), (2, "a:1"), (2.5, "b:1"), (3, "a:2")]
    assert (a.closed_at, b.closed_at) == (3, 2.5)


async def test_plain_async_iterables_are_merged_too(autojump_clock: MockClock) -> None:
    send, receive = trio.open_memory_channel[int](3)
    for n in (1, 2, 3):
        send.send_nowait(n)
    send.close()
    async with merge(receive) as items:
        assert [n async for n in items] == [1, 2, 3]


async def test_a_slow_consumer_holds_the_sources_back(autojump_clock: MockClock) -> None:
    produced: list[float] = []

    async def fast() -> AsyncIterator[int]:
        for n in range(3):
            produced.append(trio.current_time())
            yield n

    async with merge(fast()) as items:
        async for _ in items:
            await trio.sleep(1)
    # With no buffer, each item is produced only once the previous one was taken.
    assert produced == [0, 0, 1]
    assert trio.current_time() == 3


async def test_leaving_early_closes_every_source(autojump_clock: MockClock) -> None:
    a, b = Ticker("a", 1, 100), Ticker("b", 10, 100)
    async with merge(a.run(), b.run()) as items:
        async for item in items:
            if item == "a:2":
                break
    assert trio.current_time() == 3
    assert (a.closed_at, b.closed_at) == (3, 3)


async def test_a_failing_source_cancels_the_rest(autojump_clock: MockClock) -> None:
    a, b = Ticker("a", 1, 100, fail_at=1), Ticker("b", 10, 100)
    seen: list[str] = []
    with pytest.RaisesGroup(pytest.RaisesExc(OSError, match="a broke")):
        async with merge(a.run(), b.run()) as items:
            async for item in items:
                seen.append(item)
    assert seen == ["a:0"]
    assert trio.current_time() == 2
    assert (a.closed_at, b.closed_at) == (2, 2)


async def test_caller_cancellation_closes_every_source(autojump_clock: MockClock) -> None:
    a, b = Ticker("a", 1, 100), Ticker("b", 10, 100)
    with trio.move_on_after(2.5) as scope:
        async with merge(a.run(), b.run()) as items:
            async for _ in items:
                pass
    assert scope.cancelled_caught
    assert (a.closed_at, b.closed_at) == (2.5, 2.5)


def test_negative_buffer_is_rejected() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        merge(max_buffer_size=-1)
