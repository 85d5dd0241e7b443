"""The simulator's deterministic content and its pacing (virtual time)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from providers.sim import content
from providers.sim.core import Fault, StreamCut

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "exact": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "where": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "label": {"type": ["string", "null"]}},
            "required": ["lat"],
        },
        "optional": {"type": "string"},
    },
    "required": ["city", "unit", "count", "ratio", "exact", "tags", "where"],
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]


def test_reply_is_deterministic_and_sized() -> None:
    tokens = content.reply_tokens("What is the weather?", 30)
    assert tokens == content.reply_tokens("What is the weather?", 30)
    assert tokens != content.reply_tokens("What is the time?", 30)
    assert len(tokens) == 30
    text = "".join(tokens)
    assert text[0].isupper() and text.endswith(".")
    assert all(token.startswith(" ") for token in tokens[1:])
    assert content.reply_tokens("x", 0) == []


def test_reply_prefix_is_stable() -> None:
    """A shorter answer to the same prompt starts with the same words."""
    short = content.reply_tokens("prompt", 5)
    long = content.reply_tokens("prompt", 50)
    assert [t.strip(".") for t in short] == [t.strip(".") for t in long[:5]]


@pytest.mark.parametrize(("text", "tokens"), [("", 1), ("abc", 1), ("abcd", 1), ("abcde", 2)])
def test_count_tokens(text: str, tokens: int) -> None:
    assert content.count_tokens(text) == tokens


def test_count_prompt_tokens_counts_each_message() -> None:
    assert content.count_prompt_tokens(["", "", "12345678"]) == 4


def test_arguments_follow_the_schema() -> None:
    arguments = content.arguments_for(SCHEMA, "seed")
    assert set(arguments) == set(SCHEMA["required"])
    assert isinstance(arguments["city"], str) and arguments["city"] in content.VOCABULARY
    assert arguments["unit"] == "celsius"
    assert arguments["count"] == arguments["ratio"] == 42
    assert arguments["exact"] is True
    assert arguments["tags"] == []
    assert arguments["where"] == {"lat": 42}
    assert content.arguments_for(SCHEMA, "seed") == arguments


def test_arguments_without_required_fill_every_property() -> None:
    schema = {"properties": {"a": {"type": "string"}, "b": {"anyOf": [{"type": "integer"}]}}}
    assert set(content.arguments_for(schema, "s")) == {"a", "b"}
    assert content.arguments_for(schema, "s")["b"] == 42


@pytest.mark.parametrize(
    ("tool_choice", "last_role", "expected"),
    [
        (None, "user", True),
        ("auto", "user", True),
        ("auto", "tool", False),
        (None, "system", False),
        ("none", "user", False),
        ("required", "tool", True),
        ({"type": "function", "function": {"name": "get_time"}}, "tool", True),
    ],
)
def test_wants_tool_call(tool_choice: Any, last_role: str, expected: bool) -> None:
    assert content.wants_tool_call(TOOLS, tool_choice, last_role) is expected
    assert content.wants_tool_call([], tool_choice, last_role) is False


def test_pick_tool() -> None:
    named = {"type": "function", "function": {"name": "get_time"}}
    assert content.pick_tool(TOOLS, named, "")["name"] == "get_time"  # type: ignore[index]
    assert content.pick_tool(TOOLS, {"function": {"name": "nope"}}, "") is None
    assert content.pick_tool(TOOLS, "auto", "please get_time now")["name"] == "get_time"  # type: ignore[index]
    assert content.pick_tool(TOOLS, "auto", "hello")["name"] == "get_weather"  # type: ignore[index]


def test_plan_tool_call() -> None:
    call = content.plan_tool_call(TOOLS[0]["function"], "prompt")  # type: ignore[arg-type]
    assert call == content.plan_tool_call(TOOLS[0]["function"], "prompt")  # type: ignore[arg-type]
    assert call.name == "get_weather"
    assert call.id.startswith("call_") and len(call.id) == 5 + 24
    int(call.id[5:], 16)
    assert set(json.loads(call.arguments)) == set(SCHEMA["required"])
    assert "".join(content.fragments(call.arguments, 5)) == call.arguments


def test_embedding_is_a_deterministic_unit_vector() -> None:
    vector = content.embedding("hello", 1536)
    assert vector == content.embedding("hello", 1536)
    assert vector != content.embedding("hullo", 1536)
    assert sum(x * x for x in vector) == pytest.approx(1.0)
    short = content.embedding("hello", 1536, dimensions=8)
    assert len(short) == 8
    assert sum(x * x for x in short) == pytest.approx(1.0)
    # Shortening keeps the direction of the leading components, as OpenAI's does.
    ratio = short[0] / vector[0]
    assert short[1] == pytest.approx(vector[1] * ratio)


async def _arrivals(
    tokens: list[str], ttft_ms: float, tps: float, fault: Fault | None = None
) -> list[tuple[float, list[str]]]:
    start = trio.current_time()
    return [
        (round(trio.current_time() - start, 6), group)
        async for group in content.pace(tokens, ttft_ms, tps, fault)
    ]


async def test_pace_without_pacing_yields_token_by_token(
    autojump_clock: trio.testing.MockClock,
) -> None:
    assert await _arrivals(["a", "b"], 0, 0) == [(0, ["a"]), (0, ["b"])]


async def test_pace_waits_ttft_then_tokens(autojump_clock: trio.testing.MockClock) -> None:
    arrivals = await _arrivals(["a", "b", "c"], 100, 10)
    assert arrivals == [(0.1, ["a"]), (0.2, ["b"]), (0.3, ["c"])]


async def test_pace_groups_tokens_already_due(autojump_clock: trio.testing.MockClock) -> None:
    async def late_consumer() -> list[tuple[float, list[str]]]:
        start = trio.current_time()
        seen = []
        async for group in content.pace(list("abcdef"), 0, 100):
            seen.append((round(trio.current_time() - start, 6), group))
            await trio.sleep(0.025)  # a slow client: tokens pile up meanwhile
        return seen

    seen = await late_consumer()
    # Token i is due at i/100 s: by 25 ms b and c are, by 50 ms the rest.
    assert [group for _, group in seen] == [["a"], ["b", "c"], ["d", "e", "f"]]
    assert [time for time, _ in seen] == [0, 0.025, 0.05]


async def test_pace_stall(autojump_clock: trio.testing.MockClock) -> None:
    fault = Fault(model="m", stop_after_chunks=1, stall_ms=500)
    arrivals = await _arrivals(["a", "b", "c"], 100, 10, fault)
    assert arrivals == [(0.1, ["a"]), (0.7, ["b"]), (0.8, ["c"])]


async def test_pace_cut(autojump_clock: trio.testing.MockClock) -> None:
    seen: list[list[str]] = []
    with pytest.raises(StreamCut):
        async for group in content.pace(
            ["a", "b", "c"], 0, 10, Fault(model="m", stop_after_chunks=2)
        ):
            seen.append(group)
    assert seen == [["a"], ["b"]]


def test_embeddings_of_texts_sharing_words_are_closer() -> None:
    def cosine(a: str, b: str) -> float:
        return sum(
            x * y for x, y in zip(content.embedding(a, 256), content.embedding(b, 256), strict=True)
        )

    near = cosine("paid vacation days for employees", "how many vacation days do employees get")
    far = cosine("paid vacation days for employees", "tomato soup with basil and garlic")
    assert near > 0.4
    assert abs(far) < 0.3
