"""The Responses wire's pure translation (`providers.openai_responses`): the canonical
request out, the answer and its events in."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from providers.errors import InvalidUpstreamRequest, StreamInterrupted
from providers.openai_responses import (
    EventReader,
    parse_response,
    responses_only,
    responses_payload,
    result_chunks,
)
from providers.types import ChatRequest, ToolCallDelta, Usage

TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object"}, "strict": True},
}


def test_which_models_go_through_the_responses_wire() -> None:
    assert responses_only("o3-pro") and responses_only("o3-pro-2025-06-10")
    assert responses_only("gpt-5.5-pro") and responses_only("gpt-6.2-astra-law")
    assert not responses_only("gpt-5.5") and not responses_only("gpt-4o-mini")
    assert not responses_only("claude-opus-5-5") and not responses_only("no-such-model")


def test_a_conversation_with_a_tool_call_goes_out_as_items() -> None:
    request = ChatRequest(
        model="o3-pro",
        messages=[
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "function": {"name": "get_weather", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
        ],
        max_tokens=300,
        reasoning_effort="high",
        tools=[TOOL],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": {}}},
        metadata={"team": "a"},
    )
    assert responses_payload("openai", request, stream=True) == {
        "model": "o3-pro",
        "input": [
            {"type": "message", "role": "developer", "content": "Be brief."},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Weather?"}],
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"},
        ],
        "metadata": {"team": "a"},
        "max_output_tokens": 300,
        "reasoning": {"effort": "high"},
        "text": {"format": {"type": "json_schema", "name": "w", "schema": {}}},
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "parameters": {"type": "object"},
                "strict": True,
            }
        ],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "stream": True,
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [("seed", 7), ("stop", ["x"]), ("logit_bias", {"1": 2}), ("n", 2), ("modalities", ["audio"])],
)
def test_a_parameter_the_wire_has_no_place_for_is_refused(field: str, value: Any) -> None:
    request = ChatRequest(model="o3-pro", messages=[{"role": "user", "content": "Hi"}])
    with pytest.raises(InvalidUpstreamRequest) as caught:
        responses_payload("openai", attrs.evolve(request, **{field: value}), stream=False)
    assert caught.value.param == field


def test_an_answer_cut_short_with_a_call_is_read() -> None:
    result = parse_response(
        {
            "id": "resp_1",
            "model": "o3-pro",
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [
                {"type": "reasoning", "summary": []},
                {"type": "message", "content": [{"type": "output_text", "text": "Hel"}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{"},
            ],
            "usage": {"input_tokens": 5, "output_tokens": 9},
        }
    )
    choice = result.choices[0]
    assert choice.content == "Hel" and choice.finish_reason == "length"
    assert [(c.id, c.name, c.arguments) for c in choice.tool_calls] == [("c1", "f", "{")]
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (5, 9)
    first, last = result_chunks(result)
    assert first.content == "Hel" and first.tool_calls[0].name == "f"
    assert last.finish_reason == "length" and last.usage == result.usage


def test_the_events_are_read_into_chunks() -> None:
    reader = EventReader("openai")
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {}},
        {"type": "response.output_text.delta", "delta": "Hi"},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {"type": "function_call", "call_id": "c1", "name": "f"},
        },
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{}"},
        {"type": "response.completed", "response": {"usage": {"input_tokens": 3}}},
    ]
    chunks = [c for e in events for c in reader.chunks(e)]
    assert [c.content for c in chunks] == ["Hi", None, None, None]
    assert chunks[1].tool_calls == (ToolCallDelta(index=0, id="c1", name="f", arguments=""),)
    assert chunks[2].tool_calls == (ToolCallDelta(index=0, id=None, name=None, arguments="{}"),)
    assert chunks[3].finish_reason == "tool_calls" and chunks[3].usage == Usage(3, 0)
    assert reader.finished
    with pytest.raises(StreamInterrupted):
        reader.chunks({"type": "response.failed", "response": {"error": {"message": "boom"}}})
