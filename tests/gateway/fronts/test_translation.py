"""The two dialects' requests as the chat messages the engine sends (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.messages.input import parse_messages_body
from gateway.platform.errors import ApiError
from gateway.responses.input import parse_responses_body
from gateway.responses.items import chat_messages, input_items


def test_calls_of_one_turn_join_the_assistant_text_before_them() -> None:
    items = input_items(
        [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
            {"type": "function_call", "call_id": "c1", "name": "w", "arguments": '{"c":"P"}'},
            {"type": "function_call", "call_id": "c2", "name": "w", "arguments": '{"c":"R"}'},
            {"type": "function_call_output", "call_id": "c1", "output": "Sunny"},
            {"type": "function_call_output", "call_id": "c2", "output": [
                {"type": "input_text", "text": "Rain"}
            ]},
            {"type": "reasoning", "summary": []},
        ]
    )  # fmt: skip
    assert chat_messages(items) == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "w", "arguments": '{"c":"P"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "w", "arguments": '{"c":"R"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "Rain"},
    ]
    assert all(item["id"] for item in items)  # each stored item has an id for input_items


def test_instructions_come_first_and_are_not_carried_over() -> None:
    history = input_items("Earlier question")
    request = parse_responses_body(
        {"model": "m", "input": "Now", "instructions": "Be brief."}, history
    )
    roles = [m["role"] for m in request.chat_body["messages"]]
    assert roles == ["system", "user", "user"]
    assert request.input_items[0]["content"] == [{"type": "input_text", "text": "Now"}]


def test_an_image_part_is_an_image_url_part() -> None:
    [message] = chat_messages(input_items([{"role": "user", "content": [
        {"type": "input_text", "text": "What is this?"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
    ]}]))  # fmt: skip
    assert message["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAAA", "detail": "auto"},
    }


def test_tool_results_come_before_the_rest_of_a_user_turn() -> None:
    request = parse_messages_body(
        {
            "model": "m",
            "max_tokens": 5000,
            "system": [{"type": "text", "text": "Be brief."}],
            "messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "...", "signature": "s"},
                    {"type": "tool_use", "id": "t1", "name": "w", "input": {"c": "P"}},
                ]},
                {"role": "user", "content": [
                    {"type": "text", "text": "Here:"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "Sunny",
                     "is_error": False},
                ]},
            ],
            "thinking": {"type": "enabled", "budget_tokens": 4000},
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
            "tools": [{"name": "w", "input_schema": {"type": "object"}}],
        }
    )  # fmt: skip
    chat = request.chat_body
    assert [m["role"] for m in chat["messages"]] == ["system", "user", "assistant", "tool", "user"]
    assert chat["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"c":"P"}'
    assert chat["reasoning_effort"] == "medium"
    assert (chat["tool_choice"], chat["parallel_tool_calls"]) == ("required", False)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"max_tokens": None}, "max_tokens"),
        ({"tools": [{"type": "bash_20250124", "name": "bash"}]}, "tools.0.type"),
        ({"messages": [{"role": "user", "content": [{"type": "document"}]}]},
         "messages.0.content.0.source"),
        ({"messages": [{"role": "user", "content": [{"type": "search_result"}]}]},
         "messages.0.content.0.type"),
        ({"thinking": {"type": "enabled", "budget_tokens": 50}}, "thinking.budget_tokens"),
        ({"stop_sequences": ["a", "b", "c", "d", "e"]}, "stop_sequences"),
        ({"container": "c"}, "container"),
        ({"speed": "fast"}, "speed"),
        ({"temperature": 1.5}, "temperature"),
    ],
)  # fmt: skip
def test_what_the_messages_door_refuses(body: dict[str, Any], param: str) -> None:
    base = {"model": "m", "max_tokens": 20, "messages": [{"role": "user", "content": "Hi"}]}
    with pytest.raises(ApiError) as caught:
        parse_messages_body({**base, **body})
    assert caught.value.status == 400 and caught.value.extra["param"] == param
