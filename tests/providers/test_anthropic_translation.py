"""The Anthropic adapter's pure translation, both ways, as plain tables."""

from __future__ import annotations

import json
from typing import Any

import pytest

from providers.anthropic import (
    AnthropicStreamTranslator,
    finish_reason,
    image_block,
    map_anthropic_error,
    messages_payload,
    parse_message,
)
from providers.chat_support import refusal
from providers.errors import (
    AuthenticationFailed,
    ContextLengthExceeded,
    InvalidUpstreamRequest,
    ModelNotFound,
    ModelOverloaded,
    ProviderError,
    StreamInterrupted,
    UpstreamHTTPError,
)
from providers.types import ChatChunk, ChatRequest, ChatResult, ToolCall, ToolCallDelta, Usage

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


X = {"type": "object", "required": ["x"]}


def _payload(**fields: Any) -> dict[str, Any]:
    fields.setdefault("messages", [{"role": "user", "content": "hi"}])
    return messages_payload(
        ChatRequest(model="claude-x", **fields), stream=False, default_max_tokens=4096
    )


# -- request out ---------------------------------------------------------------------------


def test_minimal_request_defaults_max_tokens() -> None:
    assert _payload() == {
        "model": "claude-x",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"max_tokens": 50}, {"max_tokens": 50}),
        ({"temperature": 0.3}, {"temperature": 0.3}),
        ({"top_p": 0.9}, {"top_p": 0.9}),
        ({"stop": ["END", "STOP"]}, {"stop_sequences": ["END", "STOP"]}),
        ({"user": "u-42"}, {"metadata": {"user_id": "u-42"}}),
        ({"user": "u-1", "safety_identifier": "s-2"}, {"metadata": {"user_id": "s-2"}}),
        ({"service_tier": "default"}, {"service_tier": "standard_only"}),
        ({"service_tier": "auto"}, {"service_tier": "auto"}),
        (
            {"tools": [WEATHER_TOOL], "parallel_tool_calls": False},
            {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
        ),
        (
            {"tools": [WEATHER_TOOL], "tool_choice": "required", "parallel_tool_calls": False},
            {"tool_choice": {"type": "any", "disable_parallel_tool_use": True}},
        ),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "a", "schema": {"type": "object", "required": ["x"]}},
                }
            },
            {
                "output_config": {
                    "format": {
                        "type": "json_schema",
                        "schema": {"type": "object", "required": ["x"]},
                    }
                }
            },
        ),
        (
            {"response_format": {"type": "json_object"}},
            {"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}},
        ),
        (
            {"reasoning_effort": "low", "thinking_style": "budget"},
            {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 1024 + 4096},
        ),
        (
            {"reasoning_effort": "high", "thinking_style": "budget", "max_tokens": 2000},
            {"thinking": {"type": "enabled", "budget_tokens": 1999}, "max_tokens": 2000},
        ),
        (
            {"reasoning_effort": "medium", "thinking_style": "effort"},
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}},
        ),
        (
            {"reasoning_effort": "none", "thinking_style": "effort"},
            {"thinking": {"type": "disabled"}},
        ),
        ({"tool_choice": "auto"}, {"tool_choice": {"type": "auto"}}),
        ({"tool_choice": "none"}, {"tool_choice": {"type": "none"}}),
        ({"tool_choice": "required"}, {"tool_choice": {"type": "any"}}),
        (
            {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
            {"tool_choice": {"type": "tool", "name": "get_weather"}},
        ),
        (
            {"tools": [WEATHER_TOOL]},
            {
                "tools": [
                    {
                        "name": "get_weather",
                        "description": "Weather of a city",
                        "input_schema": WEATHER_TOOL["function"]["parameters"],
                    }
                ]
            },
        ),
    ],
)
def test_request_fields(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    payload = _payload(**fields)
    for key, value in expected.items():
        assert payload[key] == value


@pytest.mark.parametrize(
    "dropped", ["presence_penalty", "frequency_penalty", "seed", "n", "logprobs", "store"]
)
def test_fields_without_counterpart_are_refused_before_the_call(dropped: str) -> None:
    """Anthropic has no such field: the planner refuses them (never dropped in silence),
    and the payload never carries them."""
    value: Any = True if dropped in ("logprobs", "store") else 2
    request = ChatRequest(
        model="m", messages=[{"role": "user", "content": "hi"}], **{dropped: value}
    )
    assert refusal("anthropic", request, None) is not None
    payload = _payload(**{dropped: value})
    assert dropped not in payload
    assert set(payload) == {"model", "max_tokens", "messages"}


def test_stream_flag() -> None:
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    assert messages_payload(request, stream=True, default_max_tokens=10)["stream"] is True


def test_system_messages_are_merged_into_system() -> None:
    payload = _payload(
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": [{"type": "text", "text": "Be kind."}]},
        ]
    )
    assert payload["system"] == "Be brief.\n\nBe kind."
    assert [m["role"] for m in payload["messages"]] == ["user"]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        pytest.param(
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
            [{"role": "user", "content": [text("a"), text("b")]}],
            id="consecutive-users-merged",
        ),
        pytest.param(
            [
                {"role": "user", "content": "weather?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                        },
                        {
                            "id": "call_2",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "cold"},
                {"role": "tool", "tool_call_id": "call_2", "content": "warm"},
                {"role": "user", "content": "thanks"},
            ],
            [
                {"role": "user", "content": [text("weather?")]},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "call_1",
                            "name": "get_weather",
                            "input": {"city": "Oslo"},
                        },
                        {
                            "type": "tool_use",
                            "id": "call_2",
                            "name": "get_weather",
                            "input": {"city": "Rome"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "call_1", "content": "cold"},
                        {"type": "tool_result", "tool_use_id": "call_2", "content": "warm"},
                        text("thanks"),
                    ],
                },
            ],
            id="tool-round-trip-results-merged",
        ),
        pytest.param(
            [
                {
                    "role": "assistant",
                    "content": "Let me look.",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "not json"}}],
                }
            ],
            [
                {
                    "role": "assistant",
                    "content": [
                        text("Let me look."),
                        {"type": "tool_use", "id": "c", "name": "f", "input": {}},
                    ],
                }
            ],
            id="assistant-text-and-bad-arguments",
        ),
        pytest.param(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is this?"},
                        {"type": "image_url", "image_url": {"url": "https://x.test/cat.png"}},
                    ],
                }
            ],
            [
                {
                    "role": "user",
                    "content": [
                        text("what is this?"),
                        {
                            "type": "image",
                            "source": {"type": "url", "url": "https://x.test/cat.png"},
                        },
                    ],
                }
            ],
            id="image-by-url",
        ),
        pytest.param(
            [{"role": "user", "content": ""}, {"role": "user", "content": "x"}],
            [{"role": "user", "content": [text("x")]}],
            id="empty-content-skipped",
        ),
    ],
)
def test_messages_translation(messages: list[Any], expected: list[Any]) -> None:
    assert _payload(messages=messages)["messages"] == expected


@pytest.mark.parametrize(
    ("url", "source"),
    [
        (
            "data:image/png;base64,iVBORw0KGgo=",
            {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        ),
        (
            "data:image/gif,GIF89a",
            {"type": "base64", "media_type": "image/gif", "data": "R0lGODlh"},
        ),
        ("http://x.test/a.jpg", {"type": "url", "url": "http://x.test/a.jpg"}),
    ],
)
def test_image_block(url: str, source: dict[str, str]) -> None:
    assert image_block(url) == {"type": "image", "source": source}


# -- answers in ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        (None, "stop"),
    ],
)
def test_finish_reason(stop_reason: str | None, expected: str) -> None:
    assert finish_reason(stop_reason) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [text("Hello"), text(" world")],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 12, "output_tokens": 3},
            },
            ChatResult("msg_1", "claude-x", "Hello world", "stop", Usage(12, 3)),
        ),
        (
            {
                "id": "msg_2",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [
                    text("Checking."),
                    {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 5, "output_tokens": 9},
            },
            ChatResult(
                "msg_2",
                "claude-x",
                "Checking.",
                "tool_calls",
                Usage(5, 9),
                (ToolCall("toolu_1", "f", '{"a": 1}'),),
            ),
        ),
        (
            {
                "id": "msg_3",
                "model": "claude-x",
                "content": [{"type": "tool_use", "id": "t", "name": "g", "input": {}}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
            ChatResult(
                "msg_3", "claude-x", None, "tool_calls", Usage(1, 1), (ToolCall("t", "g", "{}"),)
            ),
        ),
    ],
)
def test_parse_message(data: dict[str, Any], expected: ChatResult) -> None:
    assert parse_message(data) == expected


# A recorded-style stream: text, then a tool call whose input arrives in several pieces.
RECORDED_STREAM: list[dict[str, Any]] = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_9",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-x",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 472, "output_tokens": 2},
        },
    },
    {"type": "ping"},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " me"}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_7", "name": "get_weather", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": ""},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"city": '},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'},
    },
    {"type": "content_block_stop", "index": 1},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 89},
    },
    {"type": "message_stop"},
]

EXPECTED_CHUNKS = [
    ChatChunk(content="Let"),
    ChatChunk(content=" me"),
    ChatChunk(tool_calls=(ToolCallDelta(index=0, id="toolu_7", name="get_weather"),)),
    ChatChunk(tool_calls=(ToolCallDelta(index=0, arguments='{"city": '),)),
    ChatChunk(tool_calls=(ToolCallDelta(index=0, arguments='"Oslo"}'),)),
    ChatChunk(finish_reason="tool_calls", usage=Usage(472, 89)),
]


def _translate(events: list[dict[str, Any]]) -> list[ChatChunk]:
    translator = AnthropicStreamTranslator("anthropic", "claude-x")
    chunks = [chunk for event in events for chunk in translator.feed(event)]
    translator.finish()
    return chunks


def test_recorded_stream_translates_exactly() -> None:
    assert _translate(RECORDED_STREAM) == EXPECTED_CHUNKS


def test_tool_calls_are_numbered_among_tool_blocks_only() -> None:
    start = RECORDED_STREAM[0]
    blocks = [
        {"type": "content_block_start", "index": i, "content_block": block}
        for i, block in enumerate(
            [
                {"type": "thinking", "thinking": ""},
                {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                {"type": "text", "text": ""},
                {"type": "tool_use", "id": "b", "name": "g", "input": {}},
            ]
        )
    ]
    delta = {
        "type": "content_block_delta",
        "index": 3,
        "delta": {"type": "input_json_delta", "partial_json": "{}"},
    }
    chunks = _translate([start, *blocks, delta, {"type": "message_stop"}])
    assert chunks == [
        ChatChunk(tool_calls=(ToolCallDelta(index=0, id="a", name="f"),)),
        ChatChunk(tool_calls=(ToolCallDelta(index=1, id="b", name="g"),)),
        ChatChunk(tool_calls=(ToolCallDelta(index=1, arguments="{}"),)),
    ]


def test_message_delta_input_tokens_win_over_message_start() -> None:
    events = [
        RECORDED_STREAM[0],
        {
            "type": "message_delta",
            "delta": {"stop_reason": "max_tokens"},
            "usage": {"input_tokens": 500, "output_tokens": 7},
        },
        {"type": "message_stop"},
    ]
    assert _translate(events) == [ChatChunk(finish_reason="length", usage=Usage(500, 7))]


@pytest.mark.parametrize("cut", range(len(RECORDED_STREAM)))
def test_stream_without_message_stop_is_interrupted(cut: int) -> None:
    with pytest.raises(StreamInterrupted):
        _translate(RECORDED_STREAM[:cut])


@pytest.mark.parametrize(
    ("error_type", "exception"),
    [
        ("overloaded_error", ModelOverloaded),
        ("rate_limit_error", ModelOverloaded),
        ("api_error", UpstreamHTTPError),
        ("invalid_request_error", InvalidUpstreamRequest),
    ],
)
def test_stream_error_event_raises_mapped_error(
    error_type: str, exception: type[ProviderError]
) -> None:
    error = {"type": "error", "error": {"type": error_type, "message": "boom"}}
    with pytest.raises(exception, match="boom"):
        _translate([RECORDED_STREAM[0], RECORDED_STREAM[2], error])


def test_content_before_message_start_is_a_protocol_fault() -> None:
    with pytest.raises(UpstreamHTTPError, match="unexpected content_block_start"):
        _translate([RECORDED_STREAM[2]])


def test_unknown_event_types_are_skipped() -> None:
    events = [RECORDED_STREAM[0], {"type": "future_event", "x": 1}, {"type": "message_stop"}]
    assert _translate(events) == []


# -- errors --------------------------------------------------------------------------------


def _error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


@pytest.mark.parametrize(
    ("status", "kind", "message", "exception"),
    [
        (400, "invalid_request_error", "max_tokens: Field required", InvalidUpstreamRequest),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            ContextLengthExceeded,
        ),
        (401, "authentication_error", "invalid x-api-key", AuthenticationFailed),
        (403, "permission_error", "no access", AuthenticationFailed),
        (404, "not_found_error", "model: claude-nope", ModelNotFound),
        (413, "request_too_large", "Request exceeds the maximum size", InvalidUpstreamRequest),
        (429, "rate_limit_error", "Number of requests has exceeded", ModelOverloaded),
        (500, "api_error", "Internal server error", UpstreamHTTPError),
        (529, "overloaded_error", "Overloaded", ModelOverloaded),
    ],
)
def test_error_statuses(
    status: int, kind: str, message: str, exception: type[ProviderError]
) -> None:
    error = map_anthropic_error(
        "anthropic", status, _error_body(kind, message), {"retry-after": "7"}, "claude-x"
    )
    assert type(error) is exception
    assert error.message == message
    assert error.provider == "anthropic"


def test_error_details() -> None:
    headers = {"retry-after": "7"}
    too_long = map_anthropic_error(
        "anthropic",
        400,
        _error_body("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
        headers,
        "claude-x",
    )
    assert isinstance(too_long, ContextLengthExceeded)
    assert (too_long.requested_tokens, too_long.max_tokens) == (210000, 200000)
    limited = map_anthropic_error(
        "anthropic", 429, _error_body("rate_limit_error", "slow"), headers, "claude-x"
    )
    assert isinstance(limited, ModelOverloaded)
    assert (limited.retry_after, limited.model, limited.retryable) == (7, "claude-x", True)
    internal = map_anthropic_error(
        "anthropic", 500, _error_body("api_error", "oops"), headers, "claude-x"
    )
    assert isinstance(internal, UpstreamHTTPError)
    assert (internal.status, internal.vendor_type, internal.retryable) == (500, "api_error", True)
    missing = map_anthropic_error("anthropic", 404, _error_body("not_found_error", "x"), {}, "m")
    assert isinstance(missing, ModelNotFound)
    assert missing.model == "m"


def test_error_body_that_is_not_json() -> None:
    error = map_anthropic_error("anthropic", 502, b"<html>bad gateway</html>", {}, "m")
    assert isinstance(error, UpstreamHTTPError)
    assert error.status == 502
