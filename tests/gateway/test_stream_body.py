"""The streamed chat body: its frames, its deadlines and that it always closes upstream.

Driven by a fake provider under trio's autojump clock, so the timings are exact. Each
upstream is written as its network reads (lists of chunks) and every test runs twice:
as a `Batched` stream (the OpenAI adapter's, read in the writer's task) and as a plain
chunk iterator (other vendors', read by the read-ahead task).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, aclosing

import pytest
import trio

from gateway.chat.body import SILENCE_SLACK_S, ChatStreamBody, StreamOutcome, StreamState
from gateway.chat.trip import Trip
from providers.errors import StreamInterrupted
from providers.fake import FakeProvider
from providers.types import ChatChunk, ChatRequest, Usage
from streams.batched import Batched
from tests.gateway import chat_bodies
from tests.gateway.chat_bodies import PricingTab, measured, owned_body

IDLE_S = 60.0
Reads = Callable[[ChatRequest], AsyncGenerator[list[ChatChunk], None]]


@pytest.fixture(params=["batched", "plain"])
def upstream(request: pytest.FixtureRequest) -> Callable[[Reads], FakeProvider]:
    """A fake provider streaming `reads`, as a `Batched` stream or one chunk at a time."""

    def batched(reads: Reads) -> FakeProvider:
        return FakeProvider(stream=lambda r: Batched(reads(r)))  # type: ignore[arg-type,return-value]

    def plain(reads: Reads) -> FakeProvider:
        async def one_by_one(r: ChatRequest) -> AsyncGenerator[ChatChunk, None]:
            async with aclosing(reads(r)) as batches:
                async for batch in batches:
                    for chunk in batch:
                        yield chunk

        return FakeProvider(stream=one_by_one)

    return batched if request.param == "batched" else plain


def make_trip() -> Trip:
    return chat_bodies.make_trip(
        {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    )


def open_body(
    provider: FakeProvider, outcomes: list[StreamOutcome]
) -> AbstractAsyncContextManager[AsyncIterator[bytes]]:
    trip = make_trip()

    def build(chunks: AsyncIterator[ChatChunk], first: ChatChunk) -> ChatStreamBody:
        return ChatStreamBody(
            trip,
            chunks,
            (first,),
            idle_timeout_s=IDLE_S,
            tab=PricingTab(trip),
            measure=measured,
            on_finish=outcomes.append,
        )

    return owned_body(provider.chat_stream(ChatRequest(model="m", messages=())), build)


def events(writes: list[bytes]) -> list[object]:
    """The SSE events of the body's writes (one write may carry several events)."""
    out: list[object] = []
    for write in writes:
        assert write.startswith(b"data: ") and write.endswith(b"\n\n")
        for frame in write[:-2].split(b"\n\n"):
            data = frame[6:]
            out.append("[DONE]" if data == b"[DONE]" else json.loads(data))
    return out


async def drain(body: AbstractAsyncContextManager[AsyncIterator[bytes]]) -> list[bytes]:
    async with body as frames:
        return [frame async for frame in frames]


async def slow_words(request: ChatRequest) -> AsyncGenerator[list[ChatChunk], None]:
    """Ten words, one every 30 s: five minutes in all, never silent for a minute."""
    for i in range(10):
        yield [ChatChunk(content=f"w{i} ")]
        await trio.sleep(30)
    yield [ChatChunk(finish_reason="stop", usage=Usage(3, 10))]


async def test_a_long_stream_is_relayed_whole_and_closed(
    upstream: Callable[[Reads], FakeProvider], autojump_clock: trio.abc.Clock
) -> None:
    provider = upstream(slow_words)
    outcomes: list[StreamOutcome] = []
    body = open_body(provider, outcomes)
    frames = events(await drain(body))

    assert trio.current_time() == 300
    assert frames[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}  # type: ignore[index]
    text = "".join(
        f["choices"][0]["delta"].get("content", "")  # type: ignore[index]
        for f in frames[1:-3]
    )
    assert text == "".join(f"w{i} " for i in range(10))
    final, usage, done = frames[-3], frames[-2], frames[-1]
    assert final["choices"][0]["finish_reason"] == "stop"  # type: ignore[index]
    assert "_gateway" in final and "service" in final  # type: ignore[operator]
    assert usage["usage"] == {"prompt_tokens": 3, "completion_tokens": 10, "total_tokens": 13}  # type: ignore[index]
    assert done == "[DONE]"
    assert provider.open_streams == 0
    assert [o.state for o in outcomes] == [StreamState.DONE]


async def stalls_after_one(request: ChatRequest) -> AsyncGenerator[list[ChatChunk], None]:
    yield [ChatChunk(content="a"), ChatChunk(content="b")]
    await trio.sleep_forever()
    yield [ChatChunk(finish_reason="stop")]  # pragma: no cover


async def test_a_silent_upstream_ends_the_stream_with_a_timeout_event(
    upstream: Callable[[Reads], FakeProvider], autojump_clock: trio.abc.Clock
) -> None:
    provider = upstream(stalls_after_one)
    outcomes: list[StreamOutcome] = []
    body = open_body(provider, outcomes)
    frames = events(await drain(body))

    assert IDLE_S <= trio.current_time() <= IDLE_S + SILENCE_SLACK_S
    error = frames[-1]["error"]  # type: ignore[index]
    assert error["code"] == "provider_timeout"
    assert error["timeout_ms"] == IDLE_S * 1000
    assert "[DONE]" not in frames
    assert provider.open_streams == 0
    assert outcomes[0].state is StreamState.FAILED


async def breaks_after_two(request: ChatRequest) -> AsyncGenerator[list[ChatChunk], None]:
    yield [ChatChunk(content="a")]
    await trio.sleep(1)
    yield [ChatChunk(content="b")]
    raise StreamInterrupted("fake", "connection reset")


async def test_a_broken_upstream_ends_the_stream_with_an_error_event(
    upstream: Callable[[Reads], FakeProvider], autojump_clock: trio.abc.Clock
) -> None:
    provider = upstream(breaks_after_two)
    outcomes: list[StreamOutcome] = []
    frames = events(await drain(open_body(provider, outcomes)))

    contents = [f["choices"][0]["delta"].get("content") for f in frames[1:-1]]  # type: ignore[index]
    assert contents == ["a", "b"]
    assert frames[-1]["error"]["code"] == "provider_error"  # type: ignore[index]
    assert frames[-1]["error"]["provider"] == "fake"  # type: ignore[index]
    assert provider.open_streams == 0
    assert outcomes[0].error is not None and outcomes[0].error.status == 502


async def test_a_client_that_goes_away_closes_the_upstream_at_once(
    upstream: Callable[[Reads], FakeProvider], autojump_clock: trio.abc.Clock
) -> None:
    provider = upstream(slow_words)
    outcomes: list[StreamOutcome] = []
    body = open_body(provider, outcomes)
    received: list[bytes] = []
    with trio.move_on_after(45):  # the client disconnects after 45 s
        async with body as frames:
            async for frame in frames:
                received.append(frame)

    assert trio.current_time() == 45
    assert provider.open_streams == 0
    assert outcomes[0].state is StreamState.ABANDONED
    assert len(events(received)) == 3  # role, w0 (first chunk), w1


@pytest.mark.parametrize("first_is_content", [True, False])
async def test_the_first_frame_is_always_the_role(
    first_is_content: bool,
    upstream: Callable[[Reads], FakeProvider],
    autojump_clock: trio.abc.Clock,
) -> None:
    async def words(request: ChatRequest) -> AsyncGenerator[list[ChatChunk], None]:
        if first_is_content:
            yield [ChatChunk(content="x")]
        else:
            yield [ChatChunk(usage=Usage(1, 1))]
        yield [ChatChunk(finish_reason="stop")]

    frames = events(await drain(open_body(upstream(words), [])))
    assert frames[0]["choices"][0]["delta"]["role"] == "assistant"  # type: ignore[index]


async def burst_then_pause(request: ChatRequest) -> AsyncGenerator[list[ChatChunk], None]:
    """Five words at once (one network read), then five more a second later."""
    for batch in range(2):
        yield [ChatChunk(content=f"b{batch}w{i} ") for i in range(5)]
        await trio.sleep(1)
    yield [ChatChunk(finish_reason="stop", usage=Usage(3, 10))]


async def test_chunks_that_arrive_together_go_out_in_one_write(
    upstream: Callable[[Reads], FakeProvider], autojump_clock: trio.abc.Clock
) -> None:
    provider = upstream(burst_then_pause)
    writes = await drain(open_body(provider, []))

    per_write = [len(events([w])) for w in writes]
    if upstream.__name__ == "batched":
        # role + the first burst (its first chunk read before answering, the rest in
        # hand with it), the second burst, then final + usage + [DONE].
        assert per_write == [6, 5, 3]
    else:  # the read-ahead hands over the head chunk before the rest of its read
        assert per_write == [2, 4, 5, 3]
    assert provider.open_streams == 0


async def test_a_slow_client_is_not_mistaken_for_a_silent_upstream(
    upstream: Callable[[Reads], FakeProvider], autojump_clock: trio.abc.Clock
) -> None:
    """The upstream sends 200 chunks without a pause; the client takes one write every
    30 s, so they wait (in the read-ahead channel, or unread upstream) far longer than
    the idle timeout."""

    async def many(request: ChatRequest) -> AsyncGenerator[list[ChatChunk], None]:
        for i in range(200):  # read after read, none of them waited for
            yield [ChatChunk(content=f"{i} ")]
        yield [ChatChunk(finish_reason="stop", usage=Usage(3, 200))]

    provider = upstream(many)
    outcomes: list[StreamOutcome] = []
    body = open_body(provider, outcomes)
    writes: list[bytes] = []
    async with body as frames:
        async for frame in frames:
            writes.append(frame)
            await trio.sleep(30)

    sent = events(writes)
    assert trio.current_time() > IDLE_S
    assert all("error" not in f for f in sent if isinstance(f, dict))
    assert sent[-1] == "[DONE]"
    assert outcomes[0].state is StreamState.DONE
    assert provider.open_streams == 0


class SpawnCount(trio.abc.Instrument):
    def __init__(self) -> None:
        self.spawned = 0

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.spawned += 1


async def test_a_batched_stream_is_read_in_the_writers_task(
    autojump_clock: trio.abc.Clock,
) -> None:
    """The OpenAI adapter's stream is read with no task or channel between the upstream
    and the client's writes, and each read still leaves in one write."""
    provider = FakeProvider(stream=lambda r: Batched(burst_then_pause(r)))  # type: ignore[arg-type,return-value]
    spawns = SpawnCount()
    trio.lowlevel.add_instrument(spawns)
    try:
        writes = await drain(open_body(provider, []))
    finally:
        trio.lowlevel.remove_instrument(spawns)

    assert spawns.spawned == 0
    assert [len(events([w])) for w in writes] == [6, 5, 3]
    assert provider.open_streams == 0


async def test_an_answer_that_has_wholly_arrived_leaves_in_one_write(
    autojump_clock: trio.abc.Clock,
) -> None:
    """An unpaced upstream's answer is all in one read: role, every chunk, the final
    chunk, usage and [DONE] leave together (with the end of the body, in the relay)."""
    arrived = False

    async def all_at_once(request: ChatRequest) -> AsyncGenerator[list[ChatChunk], None]:
        nonlocal arrived
        arrived = True  # the transfer's end came with this read
        yield [ChatChunk(content=f"w{i} ") for i in range(20)]
        yield [ChatChunk(finish_reason="stop", usage=Usage(3, 20))]

    provider = FakeProvider(stream=lambda r: Batched(all_at_once(r), lambda: arrived))  # type: ignore[arg-type,return-value]
    writes = await drain(open_body(provider, []))

    assert [len(events([w])) for w in writes] == [1 + 20 + 3]
    assert events(writes)[-1] == "[DONE]"
