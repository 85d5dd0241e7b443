"""Mistral's pure translations, both ways: requests out, answers, stream chunks and errors in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from providers import errors
from providers.mistral import (
    ChunkReader,
    chat_payload,
    embedding_payload,
    map_mistral_error,
    mistral_call_id,
    mistral_message,
    parse_chat,
    parse_chunks,
    parse_embeddings,
    parse_model_ids,
)
from providers.types import (
    ChatChunk,
    ChatRequest,
    EmbeddingRequest,
    ToolCall,
    ToolCallDelta,
    Usage,
)

USER = {"role": "user", "content": "Hi"}
WEATHER = {
    "type": "function",
    "function": {"name": "weather", "parameters": {"type": "object", "properties": {}}},
}


# -- request out ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (
            ChatRequest(model="mistral-small-latest", messages=[USER]),
            {"model": "mistral-small-latest", "messages": [USER], "stream": False},
        ),
        (
            ChatRequest(
                model="m",
                messages=[USER],
                temperature=0.2,
                max_tokens=50,
                top_p=0.9,
                stop=("END",),
                seed=7,
                user="alice",
                presence_penalty=0.1,
                frequency_penalty=0.2,
                response_format={"type": "json_object"},
            ),
            {
                "model": "m",
                "messages": [USER],
                "temperature": 0.2,
                "max_tokens": 50,
                "top_p": 0.9,
                "stop": ["END"],
                "random_seed": 7,
                "presence_penalty": 0.1,
                "frequency_penalty": 0.2,
                "response_format": {"type": "json_object"},
                "stream": False,
            },
        ),
        (
            ChatRequest(model="m", messages=[USER], tools=[WEATHER], tool_choice="required"),
            {
                "model": "m",
                "messages": [USER],
                "tools": [WEATHER],
                "tool_choice": "any",
                "stream": False,
            },
        ),
        (
            ChatRequest(
                model="m",
                messages=[USER],
                tools=[{"type": "function", "function": {"name": "now"}}],
                tool_choice={"type": "function", "function": {"name": "now"}},
            ),
            {
                "model": "m",
                "messages": [USER],
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "now",
                            "parameters": {"type": "object", "properties": {}},
                        },
                    }
                ],
                "tool_choice": {"type": "function", "function": {"name": "now"}},
                "stream": False,
            },
        ),
    ],
    ids=["minimal", "all-fields", "required-is-any", "named-choice-and-empty-params"],
)
def test_chat_payload(request_: ChatRequest, expected: dict[str, Any]) -> None:
    assert chat_payload(request_, stream=False) == expected


def test_stream_payload_asks_no_stream_options() -> None:
    payload = chat_payload(ChatRequest(model="m", messages=[USER]), stream=True)
    assert payload["stream"] is True
    assert "stream_options" not in payload


@pytest.mark.parametrize("choice", ["auto", "none"])
def test_plain_tool_choices_pass(choice: str) -> None:
    request = ChatRequest(model="m", messages=[USER], tools=[WEATHER], tool_choice=choice)
    assert chat_payload(request, stream=False)["tool_choice"] == choice


def test_tool_call_ids_are_remapped_consistently() -> None:
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_abc123def456", "function": {"name": "weather", "arguments": "{}"}}
        ],
    }
    tool = {"role": "tool", "tool_call_id": "call_abc123def456", "name": "weather", "content": "9"}
    out_assistant, out_tool = mistral_message(assistant), mistral_message(tool)
    new_id = out_assistant["tool_calls"][0]["id"]
    assert len(new_id) == 9 and new_id.isalnum()
    assert out_tool["tool_call_id"] == new_id
    assert out_tool["name"] == "weather"
    assert "content" not in out_assistant
    assert out_assistant["tool_calls"][0]["type"] == "function"


@pytest.mark.parametrize(
    ("call_id", "kept"),
    [("D681PevKs", True), ("call_1", False), ("toolu_01A09q90qw90lq917835lq9", False), ("", False)],
)
def test_mistral_call_id(call_id: str, kept: bool) -> None:
    result = mistral_call_id(call_id)
    assert (result == call_id) is kept
    assert len(result) == 9 and result.isalnum()
    assert mistral_call_id(call_id) == result


def test_name_dropped_outside_tool_messages() -> None:
    assert mistral_message({"role": "user", "content": "x", "name": "bob"}) == {
        "role": "user",
        "content": "x",
    }


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (
            EmbeddingRequest(model="mistral-embed", inputs=["a", "b"], user="u"),
            {"model": "mistral-embed", "input": ["a", "b"]},
        ),
        (
            EmbeddingRequest(model="codestral-embed", inputs=["a"], dimensions=256),
            {"model": "codestral-embed", "input": ["a"], "output_dimension": 256},
        ),
    ],
)
def test_embedding_payload(request_: EmbeddingRequest, expected: dict[str, Any]) -> None:
    assert embedding_payload(request_) == expected


# -- answers in ----------------------------------------------------------------------------

CHAT_ANSWER = {
    "id": "cmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "mistral-small-latest",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hello."}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
}


def _answer(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {**CHAT_ANSWER, "choices": [{"index": 0, "message": message, "finish_reason": finish}]}


@pytest.mark.parametrize(
    ("data", "content", "finish", "calls"),
    [
        (CHAT_ANSWER, "Hello.", "stop", ()),
        (_answer({"role": "assistant", "content": "Hel"}, "model_length"), "Hel", "length", ()),
        (
            _answer(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
                        {"type": "text", "text": "Paris."},
                    ],
                },
                "stop",
            ),
            "Paris.",
            "stop",
            (),
        ),
        (
            _answer(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "D681PevKs",
                            "function": {"name": "weather", "arguments": {"city": "Paris"}},
                        },
                        {"id": "a1b2c3d4e", "function": {"name": "time", "arguments": "{}"}},
                    ],
                },
                "tool_calls",
            ),
            "",
            "tool_calls",
            (
                ToolCall("D681PevKs", "weather", '{"city":"Paris"}'),
                ToolCall("a1b2c3d4e", "time", "{}"),
            ),
        ),
    ],
    ids=["text", "model-length", "thinking-chunks", "tool-calls-object-args"],
)
def test_parse_chat(
    data: dict[str, Any], content: str, finish: str, calls: tuple[ToolCall, ...]
) -> None:
    result = parse_chat(data)
    assert (result.content, result.finish_reason, result.tool_calls) == (content, finish, calls)
    assert result.usage == Usage(5, 2)
    assert (result.id, result.model) == ("cmpl-1", "mistral-small-latest")


def test_parse_chat_error_finish_raises() -> None:
    with pytest.raises(errors.UpstreamHTTPError):
        parse_chat(_answer({"role": "assistant", "content": "x"}, "error"))


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "mistral-small-latest",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


USAGE = {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}

STREAMS: list[tuple[str, list[dict[str, Any]], list[ChatChunk]]] = [
    (
        "text",
        [
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"content": "Hello"}),
            _chunk({"content": " world."}),
            _chunk({"content": ""}, "stop", usage=USAGE),
        ],
        [
            ChatChunk(content="Hello"),
            ChatChunk(content=" world."),
            ChatChunk(finish_reason="stop", usage=Usage(4, 3)),
        ],
    ),
    (
        "tool-calls-whole-same-index",
        [
            _chunk({"role": "assistant", "content": ""}),
            _chunk(
                {
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "D681PevKs",
                            "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                            "index": 0,
                        }
                    ],
                }
            ),
            _chunk(
                {
                    "tool_calls": [
                        {
                            "id": "a1b2c3d4e",
                            "function": {"name": "time", "arguments": {}},
                            "index": 0,
                        }
                    ]
                },
                "tool_calls",
                usage=USAGE,
            ),
        ],
        [
            ChatChunk(tool_calls=(ToolCallDelta(0, "D681PevKs", "weather", '{"city":"Paris"}'),)),
            ChatChunk(
                tool_calls=(ToolCallDelta(1, "a1b2c3d4e", "time", "{}"),),
                finish_reason="tool_calls",
                usage=Usage(4, 3),
            ),
        ],
    ),
    (
        "model-length-and-usage-only",
        [
            _chunk({"content": "Hi"}, "model_length"),
            {"id": "c1", "model": "m", "choices": [], "usage": USAGE},
        ],
        [ChatChunk(content="Hi", finish_reason="length"), ChatChunk(usage=Usage(4, 3))],
    ),
]


@pytest.mark.parametrize(
    ("chunks", "expected"), [s[1:] for s in STREAMS], ids=[s[0] for s in STREAMS]
)
def test_parse_stream(chunks: list[dict[str, Any]], expected: list[ChatChunk]) -> None:
    assert parse_chunks(chunks) == expected


def test_stream_continuation_without_id_joins_last_call() -> None:
    reader = ChunkReader()
    (first,) = reader.feed(
        _chunk({"tool_calls": [{"id": "abcdefghi", "function": {"name": "f", "arguments": "{"}}]})
    )
    (more,) = reader.feed(
        _chunk({"tool_calls": [{"id": "null", "function": {"name": "f", "arguments": "}"}}]})
    )
    assert first.tool_calls[0].index == more.tool_calls[0].index == 0
    assert more.tool_calls[0].id is None


def test_stream_error_finish_is_interrupted() -> None:
    with pytest.raises(errors.StreamInterrupted):
        parse_chunks([_chunk({"content": "x"}, "error")])


def test_parse_embeddings_and_models() -> None:
    data = {
        "id": "e1",
        "object": "list",
        "model": "mistral-embed",
        "data": [
            {"object": "embedding", "embedding": [0.5, 0.25], "index": 1},
            {"object": "embedding", "embedding": [1.0, 0.0], "index": 0},
        ],
        "usage": {"prompt_tokens": 6, "completion_tokens": 0, "total_tokens": 6},
    }
    result = parse_embeddings(data, "x")
    assert result.vectors == [[1.0, 0.0], [0.5, 0.25]]
    assert result.usage == Usage(6, 0)
    assert result.model == "mistral-embed"
    listing = {"object": "list", "data": [{"id": "mistral-small-latest"}, {"id": "mistral-embed"}]}
    assert parse_model_ids(listing) == ["mistral-small-latest", "mistral-embed"]


# -- errors --------------------------------------------------------------------------------


def _flat(message: Any, kind: str, code: str | None = None) -> bytes:
    body = {"object": "error", "message": message, "type": kind, "param": None, "code": code}
    return json.dumps(body).encode()


DETAIL = [{"type": "extra_forbidden", "loc": ["body", "user"], "msg": "Extra inputs"}]
ERRORS: list[tuple[int, bytes, type[errors.ProviderError]]] = [
    (401, b'{"message":"Unauthorized","request_id":"r1"}', errors.AuthenticationFailed),
    (403, b'{"message":"Forbidden"}', errors.AuthenticationFailed),
    (400, _flat("Invalid model: nope", "invalid_model", "1500"), errors.ModelNotFound),
    (404, b'{"detail":"Not Found"}', errors.ModelNotFound),
    (
        400,
        _flat(
            "Prompt contains 40000 tokens and 0 draft tokens, too large for model with "
            "32768 maximum context length",
            "invalid_request_error",
        ),
        errors.ContextLengthExceeded,
    ),
    (
        400,
        _flat("Assistant message must have content", "invalid_request_error"),
        errors.InvalidUpstreamRequest,
    ),
    (422, json.dumps({"detail": DETAIL}).encode(), errors.InvalidUpstreamRequest),
    (422, _flat({"detail": DETAIL}, "invalid_request_error"), errors.InvalidUpstreamRequest),
    (429, _flat("Rate limit exceeded", "rate_limited", "1300"), errors.ModelOverloaded),
    (429, b'{"message":"Requests rate limit exceeded"}', errors.ModelOverloaded),
    (500, _flat("Internal error", "internal_server_error"), errors.UpstreamHTTPError),
    (502, b"<html>bad gateway</html>", errors.UpstreamHTTPError),
    (503, b'{"message":"Service unavailable"}', errors.UpstreamUnavailable),
    (504, b"", errors.UpstreamTimeout),
]


@pytest.mark.parametrize(("status", "body", "cls"), ERRORS)
def test_error_status_maps_to_class(
    status: int, body: bytes, cls: type[errors.ProviderError]
) -> None:
    error = map_mistral_error("mistral", status, body, {"retry-after": "3"}, "m")
    assert type(error) is cls
    assert error.provider == "mistral"


def test_error_details_are_kept() -> None:
    context = map_mistral_error("mistral", 400, ERRORS[4][1], {}, "m")
    assert isinstance(context, errors.ContextLengthExceeded)
    assert (context.requested_tokens, context.max_tokens) == (40000, 32768)
    invalid = map_mistral_error("mistral", 422, ERRORS[6][1], {}, "m")
    assert isinstance(invalid, errors.InvalidUpstreamRequest)
    assert invalid.param == "user"
    assert invalid.message == "user: Extra inputs"
    limited = map_mistral_error("mistral", 429, ERRORS[8][1], {"retry-after": "3"}, "m")
    assert isinstance(limited, errors.ModelOverloaded)
    assert (limited.retry_after, limited.retryable) == (3, True)
    failed = map_mistral_error("mistral", 500, ERRORS[10][1], {}, "m")
    assert isinstance(failed, errors.UpstreamHTTPError)
    assert (failed.vendor_type, failed.retryable) == ("internal_server_error", True)
