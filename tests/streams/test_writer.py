"""The single writer: a producer's cancellation never cuts a write halfway, messages go
out in order, and leaving the block writes what was queued."""

from __future__ import annotations

import pytest
import trio

from streams.writer import single_writer


class SlowSocket:
    """A write that takes a second between its two halves (a frame compressed, then
    written): `frames` holds the halves in the order they went out."""

    def __init__(self) -> None:
        self.frames: list[str] = []

    async def write(self, message: str) -> None:
        self.frames.append(f"{message}:start")
        await trio.sleep(1)
        self.frames.append(f"{message}:end")


async def test_a_cancelled_producer_never_cuts_a_write(autojump_clock: trio.abc.Clock) -> None:
    socket = SlowSocket()
    async with single_writer(socket.write) as outbox:
        with trio.CancelScope() as answer:
            await outbox.send("a")
            await outbox.send("b")
            await trio.sleep(0.5)  # "a" is being written
            answer.cancel()
            await outbox.send("never")  # cancelled: queues nothing
        assert trio.current_time() == 0.5
        await outbox.send("done")
    assert trio.current_time() == 3.0  # a, b and done written whole, in order
    assert socket.frames == ["a:start", "a:end", "b:start", "b:end", "done:start", "done:end"]


async def test_a_failed_write_ends_the_block(autojump_clock: trio.abc.Clock) -> None:
    async def broken(message: str) -> None:
        raise ConnectionError(message)

    with pytest.raises(ExceptionGroup) as raised:
        async with single_writer(broken) as outbox:
            await outbox.send("hello")
            await trio.sleep_forever()
    assert raised.group_contains(ConnectionError)
