"""The loop census (`bench.loop_census`): an O(n) step is found by its count, whatever
the host's load, and named with what it called."""

from __future__ import annotations

import gc

import trio

from bench.loop_census import GcCensus, StepCensus, summary


def _work(n: int) -> int:
    return sum(_one(i) for i in range(n))


def _one(i: int) -> int:
    return i


async def _requests(steps: int, heavy_at: int) -> None:
    """A task whose steps each cost a few calls, but one that costs thousands."""
    for index in range(steps):
        _work(5000 if index == heavy_at else 5)
        await trio.lowlevel.checkpoint()


def test_an_o_n_step_among_small_ones_is_listed_with_what_it_called() -> None:
    census = StepCensus(count="calls", big_calls=1000)
    trio.run(_requests, 40, 17, instruments=[census])
    ours = [calls for _, name, calls in census.steps if name.endswith("_requests")]
    assert len(ours) == 41
    assert sorted(ours)[-1] > 5000 > 100 > sorted(ours)[-2]
    (big,) = [b for b in census.big if b[1].endswith("_requests")]
    assert dict(big[3])["test_loop_census.py:_one"] == 5000
    text = summary({"count": "calls", "steps": census.steps, "big": census.big, "gc": []})
    assert "big step:" in text and "_one 5000" in text
    assert "collections: none" in text


def test_the_cpu_count_and_the_collections_are_recorded_by_generation() -> None:
    census, collections = StepCensus(count="cpu"), GcCensus()
    gc.callbacks.append(collections)
    try:
        trio.run(_requests, 3, 1, instruments=[census])
        gc.collect(0)
        gc.collect(1)
    finally:
        gc.callbacks.remove(collections)
    assert [g for _, g, _, _ in collections.collections][-2:] == [0, 1]
    assert all(us >= 0 for _, _, us in census.steps) and census.big == []
    text = summary(
        {"count": "cpu", "steps": census.steps, "big": [], "gc": collections.collections}
    )
    assert "CPU us per step" in text and "collections: {0: " in text
