"""`InlineBody`: the source relayed in the sending task, its first bytes with no wait."""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock, assert_no_checkpoints

from gateway.platform.body import InlineBody
from tests.gateway.platform.test_task_body import Source


async def test_the_first_bytes_then_every_frame_in_order_and_the_source_closed() -> None:
    source = Source(3)
    async with InlineBody(source, content_type="audio/pcm", first=b"first").open() as frames:
        got = [frame async for frame in frames]
    assert got == [b"first", b"frame 1", b"frame 2", b"frame 3"]
    assert source.closed


async def test_the_first_bytes_leave_without_a_scheduler_round_trip() -> None:
    """What the body is for: a `TaskBody` hands its first frame through a producer task
    (one round trip at least); here the frame already read is returned at once."""
    source = Source(1)
    async with InlineBody(source, content_type="audio/pcm", first=b"first").open() as frames:
        with assert_no_checkpoints():
            assert await frames.__anext__() == b"first"
        assert source.produced == 0  # nothing read ahead: the sender sets the pace
        assert [frame async for frame in frames] == [b"frame 1"]


async def test_a_client_that_leaves_closes_the_source(autojump_clock: MockClock) -> None:
    source = Source(100, pause_s=1)
    with trio.move_on_after(3.5):
        async with InlineBody(source, content_type="audio/pcm", first=b"first").open() as frames:
            async for _ in frames:
                pass
    assert trio.current_time() == 3.5
    assert source.produced == 3 and source.closed


async def test_a_failing_source_ends_the_iteration_with_its_error() -> None:
    source = Source(10, fail_at=2)
    got: list[bytes] = []
    with pytest.raises(OSError, match="the upstream broke"):
        async with InlineBody(source, content_type="audio/pcm").open() as frames:
            async for frame in frames:
                got.append(frame)
    assert got == [b"frame 1", b"frame 2"]
    assert source.closed
