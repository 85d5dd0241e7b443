"""`TaskBody`: frames a producer task makes, through a bounded channel, in a nursery the
body owns."""

from __future__ import annotations

import trio
from trio.testing import MockClock

from gateway.platform.body import FRAME_BUFFER, TaskBody


class Source:
    """An async iterator of frames that records how far it was read and whether closed."""

    def __init__(self, frames: int, *, fail_at: int | None = None, pause_s: float = 0) -> None:
        self.frames, self.fail_at, self.pause_s = frames, fail_at, pause_s
        self.produced = 0
        self.closed = False

    def __aiter__(self) -> Source:
        return self

    async def __anext__(self) -> bytes:
        await trio.sleep(self.pause_s)
        if self.produced == self.fail_at:
            raise OSError("the upstream broke")
        if self.produced >= self.frames:
            raise StopAsyncIteration
        self.produced += 1
        return b"frame %d" % self.produced

    async def aclose(self) -> None:
        self.closed = True


def relay(source: Source) -> TaskBody[bytes]:
    """A body whose producer relays `source`, closed on the way out."""

    async def produce(send: trio.MemorySendChannel[bytes]) -> None:
        async with send:
            async for frame in source:
                await send.send(frame)

    return TaskBody(produce, bytes, content_type="audio/mpeg", on_close=source.aclose)


async def test_every_frame_is_relayed_in_order_and_the_source_closed() -> None:
    source = Source(5)
    async with relay(source).open() as frames:
        got = [frame async for frame in frames]
    assert got == [b"frame %d" % i for i in range(1, 6)]
    assert source.closed


async def test_a_slow_client_holds_the_reader_at_the_buffer_bound() -> None:
    source = Source(1000)
    async with relay(source).open() as frames:
        await trio.testing.wait_all_tasks_blocked()
        assert source.produced == FRAME_BUFFER + 1  # the buffer, plus one waiting to go in
        first = await frames.__anext__()
    assert first == b"frame 1"
    assert source.closed


async def test_a_client_that_leaves_stops_the_reader_and_closes_the_source(
    autojump_clock: MockClock,
) -> None:
    source = Source(100, pause_s=1)
    with trio.move_on_after(3.5):
        async with relay(source).open() as frames:
            async for _ in frames:
                pass
    assert trio.current_time() == 3.5
    assert source.produced == 3 and source.closed
