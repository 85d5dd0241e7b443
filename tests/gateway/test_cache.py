"""The response cache: its key, its bounds and clock, its policy, its counters, its streams.

Pure parts are tested with plain tables; anything about time runs on trio's autojump
clock and asserts exact virtual times.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from typing import Any

import pytest
import trio

from gateway.chat.body import ChatStreamBody, StreamOutcome, StreamState
from gateway.chat.cache import (
    BYPASS,
    CacheDecision,
    ResponseCache,
    StreamAssembler,
    cache_key,
    decide_cache,
    is_cacheable,
    replay_chunks,
    replayed,
)
from gateway.chat.cache.replay import split_even, split_words
from gateway.chat.cache.store import ENTRY_OVERHEAD_BYTES, result_size
from gateway.chat.input import parse_chat_body
from gateway.chat.trip import Trip
from providers.fake import FakeProvider
from providers.types import ChatChunk, ChatRequest, ChatResult, ToolCall, ToolCallDelta, Usage
from tests.gateway import chat_bodies
from tests.gateway.chat_bodies import PricingTab, owned_body

# -- the key -------------------------------------------------------------------------------

BASE: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
CLOCK_TOOL = {"type": "function", "function": {"name": "clock"}}


def key_of(body: dict[str, Any], *, workspace: str = "ws1", model: str = "gpt-4o-mini") -> str:
    request = parse_chat_body({**BASE, **body}).request
    return cache_key(
        workspace_id=workspace, provider_id="openai", upstream_model=model, request=request
    )


def user(content: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}]}


SAME: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("nothing added", {}, {}),
    ("temperature default", {}, {"temperature": 1.0}),
    ("temperature int/float", {"temperature": 1}, {"temperature": 1.0}),
    ("top_p default", {}, {"top_p": 1}),
    ("penalties default", {}, {"presence_penalty": 0, "frequency_penalty": 0.0}),
    ("stop string vs list", {"stop": "END"}, {"stop": ["END"]}),
    ("stop order and repeats", {"stop": ["a", "b"]}, {"stop": ["b", "a", "b"]}),
    ("stop empty", {}, {"stop": []}),
    ("user ignored", {"user": "alice"}, {"user": "bob"}),
    ("stream ignored", {}, {"stream": True, "stream_options": {"include_usage": True}}),
    ("service ignored", {}, {"service": {"tags": {"a": 1}, "fallbacks": ["gpt-4o"]}}),
    ("routing ignored", {}, {"routing_mode": "low_latency", "provider": "openai"}),
    ("response_format text", {}, {"response_format": {"type": "text"}}),
    (
        "message null member",
        user("hi"),
        {"messages": [{"role": "user", "content": "hi", "name": None}]},
    ),
    ("single text part", user("hi"), user([{"type": "text", "text": "hi"}])),
    ("key order", {"messages": [{"content": "hi", "role": "user"}]}, user("hi")),
    ("tools empty", {}, {"tools": []}),
    ("tool_choice without tools", {}, {"tool_choice": "none"}),
    (
        "tool_choice auto default",
        {"tools": [WEATHER_TOOL]},
        {"tools": [WEATHER_TOOL], "tool_choice": "auto"},
    ),
    (
        "tool null member",
        {"tools": [CLOCK_TOOL]},
        {"tools": [{"type": "function", "function": {"name": "clock", "description": None}}]},
    ),
    (
        "tool key order",
        {"tools": [WEATHER_TOOL]},
        {"tools": [json.loads(json.dumps(WEATHER_TOOL, sort_keys=True))]},
    ),
    (
        "legacy functions",
        {"tools": [WEATHER_TOOL]},
        {"functions": [WEATHER_TOOL["function"]]},
    ),
]

DIFFERENT: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("text", user("hi"), user("hello")),
    ("trailing space", user("hi"), user("hi ")),
    ("case", user("hi"), user("Hi")),
    ("role", user("hi"), {"messages": [{"role": "system", "content": "hi"}]}),
    (
        "message order",
        {"messages": [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}]},
        {"messages": [{"role": "user", "content": "b"}, {"role": "system", "content": "a"}]},
    ),
    (
        "two text parts",
        user("ab"),
        user([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
    ),
    ("temperature", {}, {"temperature": 0}),
    ("top_p", {}, {"top_p": 0.5}),
    ("presence", {}, {"presence_penalty": 0.5}),
    ("frequency", {}, {"frequency_penalty": 0.5}),
    ("max_tokens", {}, {"max_tokens": 100}),
    ("max_tokens values", {"max_tokens": 100}, {"max_tokens": 101}),
    ("stop", {}, {"stop": "END"}),
    ("seed", {}, {"seed": 1}),
    ("response_format", {}, {"response_format": {"type": "json_object"}}),
    ("tools", {}, {"tools": [WEATHER_TOOL]}),
    ("tool order", {"tools": [WEATHER_TOOL, CLOCK_TOOL]}, {"tools": [CLOCK_TOOL, WEATHER_TOOL]}),
    (
        "tool_choice",
        {"tools": [WEATHER_TOOL]},
        {"tools": [WEATHER_TOOL], "tool_choice": "required"},
    ),
]


@pytest.mark.parametrize(("why", "a", "b"), SAME, ids=[row[0] for row in SAME])
def test_equivalent_requests_share_a_key(why: str, a: dict[str, Any], b: dict[str, Any]) -> None:
    assert key_of(a) == key_of(b)


@pytest.mark.parametrize(("why", "a", "b"), DIFFERENT, ids=[row[0] for row in DIFFERENT])
def test_different_questions_have_different_keys(
    why: str, a: dict[str, Any], b: dict[str, Any]
) -> None:
    assert key_of(a) != key_of(b)


def test_the_key_names_the_workspace_and_the_resolved_model() -> None:
    assert key_of({}, workspace="ws1") != key_of({}, workspace="ws2")
    assert key_of({}, model="gpt-4o-mini") != key_of({}, model="gpt-4o")
    request = parse_chat_body(BASE).request
    keys = {
        cache_key(workspace_id="w", provider_id=p, upstream_model="m", request=request)
        for p in ("openai", "mistral")
    }
    assert len(keys) == 2
    # The client's model alias is not in the key: only what it resolved to.
    auto = parse_chat_body({**BASE, "model": "auto"}).request
    assert cache_key(workspace_id="w", provider_id="openai", upstream_model="m", request=auto) == (
        cache_key(workspace_id="w", provider_id="openai", upstream_model="m", request=request)
    )


def test_a_key_is_a_sha256_hex_digest() -> None:
    key = key_of({})
    assert len(key) == 64 and int(key, 16) >= 0


def test_lone_surrogates_still_make_distinct_keys() -> None:
    keys = {key_of(user(json.loads(text))) for text in ('"\\ud800"', '"\\udfff"', '"x"')}
    assert len(keys) == 3
    assert result_size(answer(json.loads('"\\ud800"'))) == result_size(answer("abc"))


# -- the store -----------------------------------------------------------------------------


def answer(text: str = "hello", *, reason: str = "stop", usage: Usage | None = None) -> ChatResult:
    return ChatResult("r", "m", text, reason, usage or Usage(10, 5))


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_least_recently_used_entry_goes_first() -> None:
    cache = ResponseCache(max_entries=2, clock=FakeClock())
    cache.put("a", answer("A"), ttl_s=60)
    cache.put("b", answer("B"), ttl_s=60)
    assert cache.get("a") is not None  # a is now more recent than b
    cache.put("c", answer("C"), ttl_s=60)
    assert "b" not in cache
    assert [cache.get(k) is not None for k in "ac"] == [True, True]
    assert len(cache) == 2


def test_the_byte_budget_evicts_as_many_as_needed() -> None:
    small = answer("x" * 100)
    size = result_size(small)
    assert size == ENTRY_OVERHEAD_BYTES + 2 + 100
    cache = ResponseCache(max_entries=100, max_bytes=3 * size, clock=FakeClock())
    for key in "abc":
        assert cache.put(key, small, ttl_s=60)
    assert cache.bytes_used == 3 * size
    big = answer("y" * (2 * size - ENTRY_OVERHEAD_BYTES - 2))  # exactly two small ones
    assert cache.put("big", big, ttl_s=60)
    assert list(k for k in "abc" if k in cache) == ["c"]
    assert cache.bytes_used == 3 * size


def test_an_answer_bigger_than_the_budget_is_not_kept() -> None:
    cache = ResponseCache(max_bytes=1000, clock=FakeClock())
    assert cache.put("a", answer("x"), ttl_s=60)
    assert not cache.put("b", answer("x" * 1000), ttl_s=60)
    assert "a" in cache and "b" not in cache


def test_non_ascii_text_is_counted_in_utf8_bytes() -> None:
    assert result_size(answer("é" * 10)) - result_size(answer("e" * 10)) == 10


def test_replacing_a_key_keeps_the_accounting_right() -> None:
    cache = ResponseCache(clock=FakeClock())
    cache.put("a", answer("short"), ttl_s=60)
    cache.put("a", answer("a longer answer"), ttl_s=30)
    assert len(cache) == 1
    assert cache.bytes_used == result_size(answer("a longer answer"))
    cache.discard("a")
    assert len(cache) == 0 and cache.bytes_used == 0


@pytest.mark.parametrize(
    ("result", "cacheable"),
    [
        (answer("ok"), True),
        (answer("cut", reason="length"), True),
        (ChatResult("r", "m", None, "tool_calls", Usage(), (ToolCall("c", "f", "{}"),)), True),
        (answer("no", reason="content_filter"), False),
        (answer("", reason="stop"), False),
        (ChatResult("r", "m", None, "stop", Usage()), False),
    ],
)
def test_only_complete_answers_are_kept(result: ChatResult, cacheable: bool) -> None:
    assert is_cacheable(result) is cacheable
    cache = ResponseCache(clock=FakeClock())
    assert cache.put("k", result, ttl_s=60) is cacheable


def test_a_zero_ttl_keeps_nothing() -> None:
    cache = ResponseCache(clock=FakeClock())
    assert not cache.put("k", answer(), ttl_s=0)
    assert len(cache) == 0


def test_a_bad_bound_is_refused() -> None:
    with pytest.raises(ValueError):
        ResponseCache(max_entries=0)


async def test_an_entry_lives_exactly_its_ttl(autojump_clock: trio.abc.Clock) -> None:
    cache = ResponseCache()
    await trio.sleep(5)
    cache.put("k", answer(), ttl_s=300)
    await trio.sleep(299.5)
    assert cache.get("k") is not None
    await trio.sleep(0.5)
    assert trio.current_time() == 305
    assert cache.get("k") is None
    assert len(cache) == 0 and cache.bytes_used == 0


async def test_a_hit_does_not_extend_the_ttl(autojump_clock: trio.abc.Clock) -> None:
    cache = ResponseCache()
    cache.put("k", answer(), ttl_s=10)
    for _ in range(9):
        await trio.sleep(1)
        assert cache.get("k") is not None
    await trio.sleep(1)
    assert cache.get("k") is None


async def test_expired_entries_go_before_live_ones(autojump_clock: trio.abc.Clock) -> None:
    cache = ResponseCache(max_entries=3)
    cache.put("short", answer(), ttl_s=10)
    cache.put("long", answer(), ttl_s=100)
    cache.put("short2", answer(), ttl_s=10)
    assert cache.get("short") is not None  # the expired ones are the most recently used
    assert cache.get("short2") is not None
    await trio.sleep(10)
    cache.put("new", answer(), ttl_s=10)
    assert sorted(k for k in ("short", "long", "short2", "new") if k in cache) == ["long", "new"]
    assert cache.bytes_used == 2 * result_size(answer())


# -- workspace isolation -------------------------------------------------------------------


def test_a_hit_never_crosses_workspaces() -> None:
    cache = ResponseCache(clock=FakeClock())
    cache.put(key_of({}, workspace="ws1"), answer("secret of ws1"), ttl_s=60)
    assert cache.get(key_of({}, workspace="ws2")) is None
    assert cache.get(key_of({}, workspace="ws1")) == answer("secret of ws1")


# -- the policy ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "policy"),
    [
        ({}, CacheDecision(True, 300.0)),
        ({"skip": True}, BYPASS),
        ({"skip": True, "rule_enabled": True, "rule_ttl_s": 60}, BYPASS),
        ({"rule_ttl_s": 60}, CacheDecision(True, 60.0)),
        ({"rule_enabled": False}, BYPASS),
        ({"default_enabled": False}, BYPASS),
        ({"default_enabled": False, "rule_enabled": True}, CacheDecision(True, 300.0)),
        (
            {"default_enabled": False, "rule_enabled": True, "rule_ttl_s": 5},
            CacheDecision(True, 5.0),
        ),
        ({"rule_ttl_s": 0}, BYPASS),
        ({"default_ttl_s": 0}, BYPASS),
    ],
)
def test_the_policy_table(kwargs: dict[str, Any], policy: CacheDecision) -> None:
    assert decide_cache(**kwargs) == policy


def test_skip_from_the_body_bypasses_lookup_and_store() -> None:
    params = parse_chat_body({**BASE, "service": {"cache": "skip"}})
    policy = decide_cache(skip=params.service.cache_skip)
    assert not policy.enabled and policy.ttl_s == 0
    assert decide_cache(skip=parse_chat_body(BASE).service.cache_skip).enabled


# -- the counters --------------------------------------------------------------------------


def test_counters_per_workspace_and_model() -> None:
    stats = ResponseCache(clock=FakeClock()).stats
    stats.record_miss("ws1", "gpt-4o")
    stats.record_hit("ws1", "gpt-4o", tokens_saved=15, cost_saved_usd=0.25)
    stats.record_hit("ws1", "gpt-4o", tokens_saved=15, cost_saved_usd=0.25)
    stats.record_miss("ws1", "claude")
    stats.record_hit("ws2", "gpt-4o", tokens_saved=1000, cost_saved_usd=9.0)

    report = stats.report("ws1").to_json()
    assert report == {
        "totals": {
            "cache_hits": 2,
            "cache_misses": 2,
            "hit_rate": 0.5,
            "tokens_saved": 30,
            "cost_saved_usd": 0.5,
        },
        "by_model": {
            "claude": {"hits": 0, "hit_rate": 0.0, "cost_saved_usd": 0.0},
            "gpt-4o": {"hits": 2, "hit_rate": 2 / 3, "cost_saved_usd": 0.5},
        },
    }
    empty = stats.report("nobody")
    assert empty.totals.hit_rate == 0.0 and dict(empty.by_model) == {}


# -- assembling a stream -------------------------------------------------------------------


def assemble(chunks: Iterable[ChatChunk], usage: Usage | None = None) -> ChatResult | None:
    assembler = StreamAssembler(max_chars=10_000)
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.result(id="r", model="m", usage=usage)


def test_content_pieces_and_usage_after_the_finish() -> None:
    result = assemble(
        [
            ChatChunk(content="Hel"),
            ChatChunk(content="lo"),
            ChatChunk(finish_reason="stop"),
            ChatChunk(usage=Usage(3, 2)),
        ]
    )
    assert result == ChatResult("r", "m", "Hello", "stop", Usage(3, 2))


def test_interleaved_tool_call_deltas_merge_by_index() -> None:
    result = assemble(
        [
            ChatChunk(
                tool_calls=(
                    ToolCallDelta(1, id="call_b", name="clock"),
                    ToolCallDelta(0, id="call_a", name="weather", arguments='{"ci'),
                )
            ),
            ChatChunk(tool_calls=(ToolCallDelta(1, arguments="{}"),)),
            ChatChunk(tool_calls=(ToolCallDelta(0, arguments='ty": "Paris"}'),)),
            ChatChunk(tool_calls=(ToolCallDelta(0, name="weather"),)),  # a repeated name
            ChatChunk(finish_reason="tool_calls", usage=Usage(7, 9)),
        ]
    )
    assert result == ChatResult(
        "r",
        "m",
        None,
        "tool_calls",
        Usage(7, 9),
        (ToolCall("call_a", "weather", '{"city": "Paris"}'), ToolCall("call_b", "clock", "{}")),
    )


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([ChatChunk(content="cut sh")], id="no finish: cut"),
        pytest.param(
            [ChatChunk(content="x"), ChatChunk(finish_reason="content_filter")], id="filtered"
        ),
        pytest.param(
            [ChatChunk(tool_calls=(ToolCallDelta(0, arguments="{}"),), finish_reason="tool_calls")],
            id="call without id",
        ),
        pytest.param([ChatChunk(content="x" * 10_001), ChatChunk(finish_reason="stop")], id="big"),
    ],
)
def test_incomplete_streams_are_not_cached(chunks: list[ChatChunk]) -> None:
    assert assemble(chunks) is None


def test_the_estimate_stands_in_for_missing_usage() -> None:
    chunks = [ChatChunk(content="x"), ChatChunk(finish_reason="stop")]
    assert assemble(chunks, usage=Usage(4, 1)) == answer("x", usage=Usage(4, 1))
    zero = [*chunks, ChatChunk(usage=Usage(0, 0))]
    assert assemble(zero, usage=Usage(4, 1)) == answer("x", usage=Usage(4, 1))
    assert assemble(chunks) == answer("x", usage=Usage())


# -- replaying an answer -------------------------------------------------------------------

TEXT = " ".join(f"word{i}" for i in range(50)) + ".\n"
CALLS = (
    ToolCall("call_a", "weather", '{"city": "Paris", "unit": "celsius"}'),
    ToolCall("call_b", "clock", "{}"),
)


def test_words_split_and_join_back() -> None:
    assert split_words("", 20) == []
    assert split_words("   ", 20) == ["   "]
    assert split_words("  lead and trail  ", 2) == ["  lead and ", "trail  "]
    assert split_words("a  b", 5) == ["a  ", "b"]
    pieces = split_words(TEXT, 20)
    assert "".join(pieces) == TEXT and 17 <= len(pieces) <= 20
    assert all(p[-1].isspace() for p in pieces[:-1])  # cut at word boundaries
    assert split_even("abcdefghij", 4) == ["abc", "def", "ghi", "j"]


@pytest.mark.parametrize(
    "result",
    [
        answer(TEXT),
        answer("one", reason="length"),
        ChatResult("r", "m", None, "tool_calls", Usage(5, 6), CALLS),
        ChatResult("r", "m", "Let me check.", "tool_calls", Usage(5, 6), CALLS),
    ],
)
def test_replay_assembles_back_into_the_same_answer(result: ChatResult) -> None:
    assert assemble(replay_chunks(result)) == result


def test_replay_chunk_order() -> None:
    result = ChatResult("r", "m", "a b", "tool_calls", Usage(5, 6), CALLS)
    kinds = [describe(chunk) for chunk in replay_chunks(result)]
    assert kinds == [
        "content",
        "content",
        "call 0 head",
        *["call 0 args"] * 4,
        "call 1 head",
        *["call 1 args"] * 2,
        "finish",
        "usage",
    ]


def describe(chunk: ChatChunk) -> str:
    if chunk.content:
        return "content"
    if chunk.tool_calls:
        (piece,) = chunk.tool_calls
        return f"call {piece.index} {'head' if piece.id else 'args'}"
    return "finish" if chunk.finish_reason else "usage"


async def test_a_replay_is_the_whole_answer_in_hand_in_one_batch() -> None:
    """As the stream body reads a live upstream, in the writer's task, and at once."""
    replay = replayed(answer("a b c"))
    assert replay.in_hand
    batch = await replay.next_batch()
    assert batch[0] == ChatChunk(content="a ")
    assert batch == list(replay_chunks(answer("a b c")))
    assert await replay.next_batch() == []
    await replay.aclose()


# -- a replayed stream through the real stream body ---------------------------------------


def make_trip() -> Trip:
    return chat_bodies.make_trip(
        {**BASE, "stream": True, "stream_options": {"include_usage": True}}
    )


async def frames_of(trip: Trip, upstream: Any, outcomes: list[StreamOutcome]) -> list[Any]:
    """Run `upstream` through `ChatStreamBody` as `serve_chat` does; the decoded SSE events."""

    def build(chunks: AsyncIterator[ChatChunk], first: ChatChunk) -> ChatStreamBody:
        return ChatStreamBody(
            trip,
            chunks,
            (first,),
            idle_timeout_s=60,
            tab=PricingTab(trip),
            measure=lambda usage, chars: usage or Usage(1, 1),
            on_finish=outcomes.append,
        )

    async with owned_body(upstream, build) as owned:
        writes = [write async for write in owned]
    frames = b"".join(writes)[:-2].split(b"\n\n")  # a write may carry several events
    return [
        "[DONE]" if f == b"data: [DONE]" else json.loads(f.removeprefix(b"data: ")) for f in frames
    ]


def frame_kind(frame: Any) -> str:
    if frame == "[DONE]":
        return "done"
    if not frame["choices"]:
        return "usage"
    choice = frame["choices"][0]
    if choice["finish_reason"]:
        return "final"
    delta = choice["delta"]
    if "role" in delta:
        return "role"
    if "tool_calls" in delta:
        (call,) = delta["tool_calls"]
        return f"call {call['index']} {'head' if 'id' in call else 'args'}"
    return "content"


def squeeze(kinds: list[str]) -> list[str]:
    return [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]


async def live_words(request: ChatRequest) -> AsyncGenerator[ChatChunk, None]:
    """An OpenAI-like live stream: a text, two tool calls in token-sized pieces, usage last."""
    for i in range(0, len("Let me check."), 3):
        yield ChatChunk(content="Let me check."[i : i + 3])
    for index, call in enumerate(CALLS):
        yield ChatChunk(tool_calls=(ToolCallDelta(index, id=call.id, name=call.name),))
        for i in range(0, len(call.arguments), 5):
            yield ChatChunk(tool_calls=(ToolCallDelta(index, arguments=call.arguments[i : i + 5]),))
    yield ChatChunk(finish_reason="tool_calls")
    yield ChatChunk(usage=Usage(5, 6))


async def test_a_replayed_stream_has_the_shape_of_a_live_one() -> None:
    trip = make_trip()
    provider = FakeProvider(stream=live_words)
    live_outcomes: list[StreamOutcome] = []
    live = await frames_of(trip, provider.chat_stream(ChatRequest("m", ())), live_outcomes)

    cached = ChatResult("r", "m", "Let me check.", "tool_calls", Usage(5, 6), CALLS)
    stream = replayed(cached)
    replay = contextlib.nullcontext(stream)
    replay_outcomes: list[StreamOutcome] = []
    replay_frames = await frames_of(trip, replay, replay_outcomes)

    live_kinds = [frame_kind(f) for f in live]
    replay_kinds = [frame_kind(f) for f in replay_frames]
    assert (
        squeeze(live_kinds)
        == squeeze(replay_kinds)
        == [
            "role",
            "content",
            "call 0 head",
            "call 0 args",
            "call 1 head",
            "call 1 args",
            "final",
            "usage",
            "done",
        ]
    )
    assert live[0] == replay_frames[0]  # the role chunk
    assert live[-3:] == replay_frames[-3:]  # final (with service and _gateway), usage, [DONE]
    for frames in (live, replay_frames):
        text = "".join(f["choices"][0]["delta"].get("content", "") for f in frames[1:-3])
        assert text == "Let me check."
    assert await stream.next_batch() == [] and provider.open_streams == 0
    assert [o.state for o in replay_outcomes] == [o.state for o in live_outcomes]
    assert replay_outcomes == live_outcomes
    assert replay_outcomes[0].state is StreamState.DONE


async def test_a_replay_is_cancelled_like_any_stream(autojump_clock: trio.abc.Clock) -> None:
    """A client gone before the replay is read cancels it at its checkpoint; it is then
    over, and replaying never waits."""
    replay = replayed(answer(TEXT))
    with trio.CancelScope() as scope:
        scope.cancel()
        await replay.next_batch()
    assert scope.cancelled_caught
    assert await replay.next_batch() == []
    await replay.aclose()
    assert trio.current_time() == 0  # replaying never waits
