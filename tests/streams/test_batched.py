"""`streams.batched.Batched`: a read's worth at a time, or one at a time, never reordered."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest

from streams.batched import Batched, FailureHeld
from streams.sse import SSEEvent


class Reads:
    """Three reads, then (optionally) a failure; records whether it was closed."""

    def __init__(self, failure: Exception | None = None) -> None:
        self.failure = failure
        self.closed = False

    async def __call__(self) -> AsyncGenerator[list[int], None]:
        try:
            yield [1, 2, 3]
            yield [4]
            yield [5, 6]
            if self.failure is not None:
                raise self.failure
        finally:
            self.closed = True


async def test_batches_come_a_read_at_a_time_then_empty() -> None:
    stream = Batched(Reads()())
    assert [await stream.next_batch() for _ in range(4)] == [[1, 2, 3], [4], [5, 6], []]
    assert await stream.next_batch() == []


async def test_items_taken_one_by_one_leave_the_rest_of_their_read_first() -> None:
    stream = Batched(Reads()())
    first = await anext(stream)
    assert first == 1
    assert await stream.next_batch() == [2, 3]
    assert [item async for item in stream] == [4, 5, 6]


async def test_a_failure_underneath_is_raised_as_it_is() -> None:
    stream = Batched(Reads(ValueError("cut"))())
    assert [await stream.next_batch() for _ in range(3)] == [[1, 2, 3], [4], [5, 6]]
    with pytest.raises(ValueError, match="cut"):
        await stream.next_batch()


async def test_closing_closes_the_generator_and_drops_what_was_pending() -> None:
    reads = Reads()
    stream = Batched(reads())
    await anext(stream)
    await stream.aclose()
    assert reads.closed
    assert await stream.next_batch() == []


async def _texts_and_items() -> AsyncGenerator[list[int | str], None]:
    yield ["ab", 1, "c"]
    yield [2]


async def test_text_pieces_are_lifted_for_item_readers_and_left_for_the_relay() -> None:
    """A producer's `str` pieces reach `next_batch` and `async for` as items (`lift`),
    and `next_read` as they came, in the same order either way."""
    lifted = Batched(_texts_and_items(), lift=len)
    assert await lifted.next_batch() == [2, 1, 1]
    assert [item async for item in lifted] == [2]
    one_by_one = Batched(_texts_and_items(), lift=len)
    assert await anext(one_by_one) == 2
    assert await one_by_one.next_read() == [1, "c"]
    assert await one_by_one.next_read() == [2]
    assert await one_by_one.next_read() == []


class Numbers(FailureHeld[int]):
    """Events `n` give [n]; `fail` fails (held); `junk` cannot be decoded (raised at once)."""

    def __init__(self) -> None:
        super().__init__(LookupError)

    def decode(self, event: SSEEvent) -> dict[str, Any] | None:
        if event.data == "junk":
            raise ValueError("not data")
        return {"n": event.data} if event.data else None

    def feed(self, data: dict[str, Any]) -> list[int]:
        if data["n"] == "fail":
            raise LookupError("upstream said no")
        return [int(data["n"])]

    def close(self) -> list[int]:
        return [0]


def test_the_first_failure_is_held_to_the_end_and_nothing_after_it_read() -> None:
    reader = Numbers()
    events = [SSEEvent(data) for data in ("1", "", "fail", "2", "fail")]
    assert [reader.read(event) for event in events] == [[1], [], [], [], []]
    with pytest.raises(LookupError, match="upstream said no"):
        reader.end()
    with pytest.raises(ValueError, match="not data"):  # not the vendor's failure: at once
        Numbers().read(SSEEvent("junk"))
    assert Numbers().end() == [0]  # no failure: the end's own chunks
