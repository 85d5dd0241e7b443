"""Holding a context manager open from a task of a nursery the caller owns
(`streams.held`): the deadline bounds the entry only, the manager may hold a nursery (a
WebSocket's reader task) for its whole life, and every path exits it in its own task.
And `background()`: the block's own exception leaves it as raised."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from streams.held import background, hold_open


@asynccontextmanager
async def holding_a_nursery(opening_s: float, log: list[str]) -> AsyncIterator[str]:
    await trio.sleep(opening_s)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.sleep_forever)
        try:
            yield "opened"
        finally:
            log.append(f"closed at {trio.current_time():g}")
            nursery.cancel_scope.cancel()


async def test_the_deadline_is_lifted_once_the_manager_is_in(autojump_clock: object) -> None:
    log: list[str] = []
    async with background() as nursery:
        held = await hold_open(nursery, holding_a_nursery(1.0, log), enter_within=5.0)
        assert held.value == "opened"
        await trio.sleep(60)  # far past the deadline: the holding is not the deadline's
        await held.aclose()
        assert log == ["closed at 61"]
    assert trio.current_time() == pytest.approx(61.0)


async def test_a_slow_manager_fails_at_the_deadline(autojump_clock: object) -> None:
    log: list[str] = []
    async with background() as nursery:
        with pytest.raises(trio.TooSlowError):
            await hold_open(nursery, holding_a_nursery(10.0, log), enter_within=5.0)
    assert trio.current_time() == pytest.approx(5.0)
    assert log == []


async def test_cancelling_the_nursery_closes_the_manager(autojump_clock: object) -> None:
    log: list[str] = []
    with trio.move_on_after(30):
        async with background() as nursery:
            await hold_open(nursery, holding_a_nursery(1.0, log))
            await trio.sleep_forever()
    assert log == ["closed at 30"]


async def test_a_released_holder_is_exited_when_the_nursery_closes(
    autojump_clock: object,
) -> None:
    log: list[str] = []
    async with background() as nursery:
        held = await hold_open(nursery, holding_a_nursery(1.0, log))
        await trio.sleep(2)
        held.release()  # no wait: the nursery's end waits for the holder
    assert log == ["closed at 3"]


async def test_an_error_entering_is_raised_by_hold_open() -> None:
    @asynccontextmanager
    async def refusing() -> AsyncIterator[str]:
        raise ConnectionRefusedError("no")
        yield "never"  # pragma: no cover

    async with background() as nursery:
        with pytest.raises(ConnectionRefusedError):
            await hold_open(nursery, refusing())


async def test_the_blocks_own_error_leaves_unwrapped(autojump_clock: object) -> None:
    log: list[str] = []
    with pytest.raises(KeyError):
        async with background() as nursery:
            held = await hold_open(nursery, holding_a_nursery(1.0, log))
            held.release()
            raise KeyError("the client went away")
    assert log == ["closed at 1"]
