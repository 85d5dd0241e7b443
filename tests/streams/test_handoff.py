"""`streams.handoff`: the bound and the waiting of a memory channel, without a scheduler
round trip when none is needed."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from streams.handoff import items, put, take, waiting


class Steps(trio.abc.Instrument):
    def __init__(self) -> None:
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.count += 1


async def test_put_and_take_do_not_yield_when_they_need_not() -> None:
    send, receive = trio.open_memory_channel[int](4)
    steps = Steps()
    trio.lowlevel.add_instrument(steps)
    try:
        for number in range(4):
            await put(send, number)
        taken = [await take(receive) for _ in range(4)]
    finally:
        trio.lowlevel.remove_instrument(steps)
    assert taken == [0, 1, 2, 3]
    assert steps.count == 0  # the plain send/receive take one step each (8)


async def test_put_waits_for_room_and_take_for_an_item(
    autojump_clock: trio.testing.MockClock,
) -> None:
    send, receive = trio.open_memory_channel[int](1)
    got: list[tuple[int, float]] = []

    async def reader() -> None:
        await trio.sleep(1)
        async for number in items(receive):
            got.append((number, trio.current_time()))
            await trio.sleep(1)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        async with send:
            for number in range(3):
                await put(send, number)
    assert got == [(0, 1.0), (1, 2.0), (2, 3.0)]


async def test_a_cancelled_wait_is_cancelled() -> None:
    send, receive = trio.open_memory_channel[int](0)
    with trio.move_on_after(0.01) as scope:
        await put(send, 1)
    assert scope.cancelled_caught
    with trio.move_on_after(0.01) as scope:
        await take(receive)
    assert scope.cancelled_caught


async def test_take_raises_end_of_channel_once_closed_and_empty() -> None:
    send, receive = trio.open_memory_channel[int](1)
    await put(send, 7)
    await send.aclose()
    assert [n async for n in items(receive)] == [7]
    with pytest.raises(trio.EndOfChannel):
        await take(receive)


async def test_waiting_takes_what_is_there_up_to_a_limit() -> None:
    send, receive = trio.open_memory_channel[int](8)
    for number in range(5):
        await put(send, number)
    assert waiting(receive, 3) == [0, 1, 2]
    await send.aclose()
    assert waiting(receive, 10) == [3, 4]
    assert waiting(receive, 10) == []  # closed and empty: nothing, no error
