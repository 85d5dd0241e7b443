"""The engine's deadline on opening a stream (`_Deadlined`): it bounds the opener's entry
only, and an opener may hold a nursery (a WebSocket's reader task) for the block."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from gateway.upstream.engine import _Deadlined
from providers.errors import UpstreamTimeout


@asynccontextmanager
async def holding_a_nursery(opening_s: float, log: list[str]) -> AsyncIterator[str]:
    await trio.sleep(opening_s)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.sleep_forever)
        try:
            yield "opened"
        finally:
            log.append("closed")
            nursery.cancel_scope.cancel()


async def test_the_deadline_is_lifted_once_the_opener_is_in(autojump_clock: object) -> None:
    log: list[str] = []
    async with _Deadlined(holding_a_nursery(1.0, log), "p", 5.0) as value:
        assert value == "opened"
        await trio.sleep(60)  # far past the deadline: the block is not the deadline's
    assert log == ["closed"]
    assert trio.current_time() == pytest.approx(61.0)


async def test_a_slow_opener_fails_at_the_deadline(autojump_clock: object) -> None:
    log: list[str] = []
    with pytest.raises(UpstreamTimeout):
        async with _Deadlined(holding_a_nursery(10.0, log), "p", 5.0):
            pytest.fail("the block must not run")
    assert trio.current_time() == pytest.approx(5.0)
    assert log == []


async def test_cancelling_the_block_closes_the_opener(autojump_clock: object) -> None:
    log: list[str] = []
    with trio.move_on_after(30):
        async with _Deadlined(holding_a_nursery(1.0, log), "p", 5.0):
            await trio.sleep_forever()
    assert log == ["closed"]
    assert trio.current_time() == pytest.approx(30.0)
