"""Cohere's chat translations (pure): the `/v2/chat` body out, answers and stream events in."""

from __future__ import annotations

from typing import Any

import pytest

from providers import errors
from providers.cohere.chat import chat_payload, parse_chat, parse_events, tool_fields
from providers.cohere.errors import map_cohere_error
from providers.types import ChatChunk, ChatRequest, ToolCallDelta, Usage

TOOL: Any = {"type": "function", "function": {"name": "a"}}
OTHER: Any = {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}}


def test_payload_renames_and_drops_fields() -> None:
    request = ChatRequest(
        model="command-a-03-2025",
        messages=[
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": "Hi"},
        ],
        temperature=0.3,
        max_tokens=10,
        top_p=0.9,
        stop=["END"],
        seed=7,
        user="someone",
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
    )
    assert chat_payload(request, stream=True) == {
        "model": "command-a-03-2025",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": True,
        "temperature": 0.3,
        "max_tokens": 10,
        "seed": 7,
        "p": 0.9,
        "stop_sequences": ["END"],
        "response_format": {"type": "json_object", "json_schema": {}},
    }


def test_assistant_tool_calls_and_tool_results() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}}
    request = ChatRequest(
        model="m",
        messages=[
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "42"},
        ],
    )
    assert chat_payload(request, stream=False)["messages"] == [
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
    ]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (None, {"tools": ["a", "b"]}),
        ("auto", {"tools": ["a", "b"]}),
        ("required", {"tools": ["a", "b"], "tool_choice": "REQUIRED"}),
        ("none", {"tools": ["a", "b"], "tool_choice": "NONE"}),
        (
            {"type": "function", "function": {"name": "b"}},
            {"tools": ["b"], "tool_choice": "REQUIRED"},
        ),
    ],
)
def test_tool_choice(choice: Any, expected: dict[str, Any]) -> None:
    fields = tool_fields([TOOL, OTHER], choice)
    names = [tool["function"]["name"] for tool in fields["tools"]]
    assert {**fields, "tools": names} == expected
    assert all("parameters" in tool["function"] for tool in fields["tools"])


def test_whole_answer_with_a_tool_call() -> None:
    data = {
        "id": "r1",
        "finish_reason": "TOOL_CALL",
        "message": {
            "role": "assistant",
            "tool_plan": "I will call a.",
            "tool_calls": [
                {"id": "a_1", "type": "function", "function": {"name": "a", "arguments": "{}"}}
            ],
        },
        "usage": {
            "billed_units": {"input_tokens": 5, "output_tokens": 3},
            "tokens": {"input_tokens": 14, "output_tokens": 3},
        },
    }
    result = parse_chat(data, "command-a-03-2025")
    assert (result.content, result.finish_reason, result.model) == (
        None,
        "tool_calls",
        "command-a-03-2025",
    )
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("a_1", "a", "{}")]
    assert result.usage == Usage(5, 3)


@pytest.mark.parametrize(
    ("reason", "cls"), [("ERROR", errors.UpstreamHTTPError), ("TIMEOUT", errors.UpstreamTimeout)]
)
def test_a_failed_generation_is_raised(reason: str, cls: type[errors.ProviderError]) -> None:
    with pytest.raises(cls):
        parse_chat({"id": "r", "finish_reason": reason, "message": {}}, "m")


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def test_stream_events_become_chunks() -> None:
    events = [
        _event("message-start", id="r", delta={"message": {"role": "assistant"}}),
        _event("tool-plan-delta", delta={"message": {"tool_plan": "I will"}}),
        _event(
            "tool-call-start",
            index=0,
            delta={
                "message": {
                    "tool_calls": {
                        "id": "a_1",
                        "type": "function",
                        "function": {"name": "a", "arguments": ""},
                    }
                }
            },
        ),
        _event(
            "tool-call-delta",
            index=0,
            delta={"message": {"tool_calls": {"function": {"arguments": "{}"}}}},
        ),
        _event("tool-call-end", index=0),
        _event(
            "message-end",
            delta={
                "finish_reason": "TOOL_CALL",
                "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 2}},
            },
        ),
    ]
    assert parse_events(events) == [
        ChatChunk(tool_calls=(ToolCallDelta(0, id="a_1", name="a", arguments=""),)),
        ChatChunk(tool_calls=(ToolCallDelta(0, arguments="{}"),)),
        ChatChunk(finish_reason="tool_calls", usage=Usage(5, 2)),
    ]


def test_a_stream_ending_in_error_is_interrupted() -> None:
    end = _event("message-end", delta={"finish_reason": "ERROR", "error": "boom"})
    with pytest.raises(errors.StreamInterrupted):
        parse_events([end])


def test_a_prompt_too_long_is_context_length_exceeded() -> None:
    body = (
        b'{"message": "too many tokens: total number of tokens in the prompt cannot exceed '
        b'256000 - received 300123. Try using a shorter prompt"}'
    )
    error = map_cohere_error("cohere", 400, body, {}, "command-a-03-2025")
    assert isinstance(error, errors.ContextLengthExceeded)
    assert (error.max_tokens, error.requested_tokens) == (256_000, 300_123)
