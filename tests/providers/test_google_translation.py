"""The Gemini translation, both ways, as plain tables: no I/O, no trio."""

from __future__ import annotations

import json
from typing import Any

import pytest

from providers.errors import (
    AuthenticationFailed,
    ContentFiltered,
    ContextLengthExceeded,
    InvalidUpstreamRequest,
    ModelNotFound,
    ModelOverloaded,
    ProviderError,
    StreamInterrupted,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from providers.google import (
    StreamTranslator,
    embedding_payload,
    estimate_tokens,
    generate_payload,
    map_google_error,
    model_path,
    openapi_schema,
    parse_generate,
    parse_model_ids,
    parse_vectors,
)
from providers.types import (
    ChatChunk,
    ChatRequest,
    EmbeddingRequest,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from streams.sse import SSEDecoder

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
WEATHER_DECLARATION = {
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
ASSISTANT_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_abc",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ],
}


def chat(messages: list[dict[str, Any]], **options: Any) -> ChatRequest:
    return ChatRequest(model="gemini-2.0-flash", messages=messages, **options)


# -- request out ---------------------------------------------------------------------------

REQUESTS: list[tuple[str, ChatRequest, dict[str, Any]]] = [
    (
        "plain user turn",
        chat([{"role": "user", "content": "Hi"}]),
        {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]},
    ),
    (
        "system messages become systemInstruction",
        chat(
            [
                {"role": "system", "content": "Be brief."},
                {"role": "system", "content": "Be kind."},
                {"role": "user", "content": "Hi"},
            ]
        ),
        {
            "systemInstruction": {"parts": [{"text": "Be brief."}, {"text": "Be kind."}]},
            "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        },
    ),
    (
        "assistant is model; consecutive same-role turns merge",
        chat(
            [
                {"role": "user", "content": "A"},
                {"role": "user", "content": "B"},
                {"role": "assistant", "content": "C"},
                {"role": "user", "content": "D"},
            ]
        ),
        {
            "contents": [
                {"role": "user", "parts": [{"text": "A"}, {"text": "B"}]},
                {"role": "model", "parts": [{"text": "C"}]},
                {"role": "user", "parts": [{"text": "D"}]},
            ]
        },
    ),
    (
        "tool calls and their results",
        chat(
            [
                {"role": "user", "content": "Weather in Paris?"},
                ASSISTANT_CALL,
                {"role": "tool", "tool_call_id": "call_abc", "content": '{"temp": 21}'},
                {"role": "tool", "tool_call_id": "call_zzz", "name": "other", "content": "ok"},
            ]
        ),
        {
            "contents": [
                {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
                {
                    "role": "model",
                    "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}],
                },
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "name": "get_weather",
                                "response": {"result": {"temp": 21}},
                            }
                        },
                        {"functionResponse": {"name": "other", "response": {"result": "ok"}}},
                    ],
                },
            ]
        },
    ),
    (
        "text and image parts",
        chat(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                        {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}},
                    ],
                }
            ]
        ),
        {
            "contents": [
                {
                    "role": "user",
                    "parts": [
                        {"text": "What is this?"},
                        {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
                        {
                            "fileData": {
                                "mimeType": "image/jpeg",
                                "fileUri": "https://x.test/cat.jpg",
                            }
                        },
                    ],
                }
            ]
        },
    ),
    (
        "generation config",
        chat(
            [{"role": "user", "content": "Hi"}],
            temperature=0.5,
            top_p=0.9,
            max_tokens=100,
            stop=["END"],
            seed=7,
            response_format={"type": "json_object"},
        ),
        {
            "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
            "generationConfig": {
                "temperature": 0.5,
                "topP": 0.9,
                "maxOutputTokens": 100,
                "seed": 7,
                "stopSequences": ["END"],
                "responseMimeType": "application/json",
            },
        },
    ),
    (
        "tools and a named tool_choice",
        chat(
            [{"role": "user", "content": "Hi"}],
            tools=[WEATHER_TOOL],
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
        ),
        {
            "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
            "tools": [{"functionDeclarations": [WEATHER_DECLARATION]}],
            "toolConfig": {
                "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
            },
        },
    ),
]


@pytest.mark.parametrize(("name", "request_", "expected"), REQUESTS, ids=[r[0] for r in REQUESTS])
def test_generate_payload(name: str, request_: ChatRequest, expected: dict[str, Any]) -> None:
    assert generate_payload(request_) == expected


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("none", {"mode": "NONE"}),
        ("auto", {"mode": "AUTO"}),
        ("required", {"mode": "ANY"}),
        (
            {"type": "function", "function": {"name": "f"}},
            {"mode": "ANY", "allowedFunctionNames": ["f"]},
        ),
    ],
)
def test_tool_choice_modes(choice: Any, config: dict[str, Any]) -> None:
    payload = generate_payload(chat([{"role": "user", "content": "x"}], tool_choice=choice))
    assert payload["toolConfig"] == {"functionCallingConfig": config}


def test_openapi_schema_narrows_json_schema() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string", "additionalProperties": False}},
            "note": {"type": ["string", "null"]},
        },
    }
    assert openapi_schema(schema) == {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string", "nullable": True},
        },
    }


def test_model_path_and_embedding_payload() -> None:
    assert model_path("models/gemini-2.0-flash", "generateContent") == (
        "/v1beta/models/gemini-2.0-flash:generateContent"
    )
    request = EmbeddingRequest(model="text-embedding-004", inputs=["a", "bb"], dimensions=8)
    assert embedding_payload(request) == {
        "requests": [
            {
                "model": "models/text-embedding-004",
                "content": {"parts": [{"text": "a"}]},
                "outputDimensionality": 8,
            },
            {
                "model": "models/text-embedding-004",
                "content": {"parts": [{"text": "bb"}]},
                "outputDimensionality": 8,
            },
        ]
    }


def test_embedding_payload_of_one_batch() -> None:
    request = EmbeddingRequest(model="models/gemini-embedding-001", inputs=["a", "b", "c"])
    payload = embedding_payload(request, ["b", "c"])
    assert [item["content"]["parts"][0]["text"] for item in payload["requests"]] == ["b", "c"]
    assert {item["model"] for item in payload["requests"]} == {"models/gemini-embedding-001"}
    assert all("outputDimensionality" not in item for item in payload["requests"])


# -- answers in ----------------------------------------------------------------------------

USAGE = {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8}


def answer(parts: list[dict[str, Any]], finish: str = "STOP") -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
        ],
        "usageMetadata": USAGE,
        "modelVersion": "gemini-2.0-flash-001",
        "responseId": "resp-1",
    }


ANSWERS: list[tuple[str, dict[str, Any], str | None, str, tuple[ToolCall, ...]]] = [
    ("text joined", answer([{"text": "Hello"}, {"text": " world"}]), "Hello world", "stop", ()),
    ("max tokens", answer([{"text": "Hel"}], "MAX_TOKENS"), "Hel", "length", ()),
    (
        "function calls",
        answer(
            [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_time", "args": {}}},
            ]
        ),
        None,
        "tool_calls",
        (
            ToolCall("call_0", "get_weather", '{"city": "Paris"}'),
            ToolCall("call_1", "get_time", "{}"),
        ),
    ),
    (
        "safety block without text",
        {"candidates": [{"finishReason": "SAFETY", "index": 0, "safetyRatings": []}]},
        None,
        "content_filter",
        (),
    ),
    ("recitation", answer([{"text": "x"}], "RECITATION"), "x", "content_filter", ()),
    ("other", answer([{"text": "x"}], "OTHER"), "x", "stop", ()),
]


@pytest.mark.parametrize(
    ("name", "data", "content", "finish", "calls"), ANSWERS, ids=[a[0] for a in ANSWERS]
)
def test_parse_generate(
    name: str,
    data: dict[str, Any],
    content: str | None,
    finish: str,
    calls: tuple[ToolCall, ...],
) -> None:
    result = parse_generate(data, "gemini-2.0-flash")
    assert (result.content, result.finish_reason, result.tool_calls) == (content, finish, calls)


def test_parse_generate_ids_and_usage() -> None:
    result = parse_generate(answer([{"text": "x"}]), "gemini-2.0-flash")
    assert (result.id, result.model, result.usage) == (
        "resp-1",
        "gemini-2.0-flash-001",
        Usage(5, 3),
    )


def test_blocked_prompt_raises_content_filtered() -> None:
    data = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": USAGE}
    with pytest.raises(ContentFiltered) as caught:
        parse_generate(data, "gemini-2.0-flash")
    assert caught.value.filter_reason == "SAFETY"


def test_embeddings_and_models() -> None:
    assert parse_vectors({"embeddings": [{"values": [1, 2]}, {"values": [3.5]}]}) == [
        [1.0, 2.0],
        [3.5],
    ]
    assert parse_vectors({"embedding": {"values": [0.5]}}) == [[0.5]]
    assert estimate_tokens(["abcd", "abcde", ""]) == 1 + 2 + 1
    models = {"models": [{"name": "models/gemini-2.0-flash"}, {"name": "models/embedding-001"}]}
    assert parse_model_ids(models) == ["gemini-2.0-flash", "embedding-001"]


# -- streams -------------------------------------------------------------------------------

# As the API sends it (alt=sse): one GenerateContentResponse per event, CRLF line ends.
_META = '"usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}, "modelVersion": "g"}'
RECORDED_SSE = (
    b'data: {"candidates": [{"content": {"parts": [{"text": "The"}], "role": "model"}, '
    + b'"index": 0}], '
    + _META.encode()
    + b"\r\n\r\n"
    b'data: {"candidates": [{"content": {"parts": [{"text": " sky is"}], "role": "model"}, '
    + b'"index": 0}], '
    + _META.encode()
    + b"\r\n\r\n"
    b'data: {"candidates": [{"content": {"parts": [{"text": " blue."}], "role": "model"}, '
    b'"finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 9, '
    b'"candidatesTokenCount": 4, "totalTokenCount": 13}, "modelVersion": "g"}\r\n\r\n'
)


def run_stream(events: list[dict[str, Any]]) -> list[ChatChunk]:
    translator = StreamTranslator("google")
    chunks: list[ChatChunk] = []
    for event in events:
        chunks.extend(translator.feed(event))
    return chunks + translator.close()


def test_recorded_text_stream() -> None:
    events = [json.loads(event.data) for event in SSEDecoder().feed(RECORDED_SSE)]
    assert run_stream(events) == [
        ChatChunk(content="The"),
        ChatChunk(content=" sky is"),
        ChatChunk(content=" blue."),
        ChatChunk(finish_reason="stop", usage=Usage(9, 4)),
    ]


def test_function_call_stream() -> None:
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    events = [answer([call]), {"candidates": [{"finishReason": "STOP"}], "usageMetadata": USAGE}]
    events[0]["candidates"][0].pop("finishReason")
    assert run_stream(events) == [
        ChatChunk(tool_calls=(ToolCallDelta(0, "call_0", "get_weather", '{"city": "Paris"}'),)),
        ChatChunk(finish_reason="tool_calls", usage=Usage(5, 3)),
    ]


def test_stream_without_finish_is_interrupted() -> None:
    translator = StreamTranslator("google")
    assert translator.feed({"candidates": [{"content": {"parts": [{"text": "a"}]}}]}) == [
        ChatChunk(content="a")
    ]
    with pytest.raises(StreamInterrupted):
        translator.close()


def test_stream_error_event_and_block() -> None:
    with pytest.raises(ModelOverloaded):
        StreamTranslator().feed({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}})
    with pytest.raises(ContentFiltered):
        StreamTranslator().feed({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})


# -- errors --------------------------------------------------------------------------------


def error_body(code: int, status: str, message: str = "boom", **extra: Any) -> bytes:
    return json.dumps(
        {"error": {"code": code, "message": message, "status": status, **extra}}
    ).encode()


ERRORS: list[tuple[int, bytes, type[ProviderError]]] = [
    (400, error_body(400, "INVALID_ARGUMENT"), InvalidUpstreamRequest),
    (
        400,
        error_body(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed"
            " (1048576).",
        ),
        ContextLengthExceeded,
    ),
    (
        400,
        error_body(
            400,
            "INVALID_ARGUMENT",
            "API key not valid.",
            details=[
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
            ],
        ),
        AuthenticationFailed,
    ),
    (401, error_body(401, "UNAUTHENTICATED"), AuthenticationFailed),
    (403, error_body(403, "PERMISSION_DENIED"), AuthenticationFailed),
    (404, error_body(404, "NOT_FOUND"), ModelNotFound),
    (429, error_body(429, "RESOURCE_EXHAUSTED"), ModelOverloaded),
    (500, error_body(500, "INTERNAL"), UpstreamHTTPError),
    (503, error_body(503, "UNAVAILABLE"), UpstreamUnavailable),
    (504, error_body(504, "DEADLINE_EXCEEDED"), UpstreamTimeout),
    (502, b"<html>bad gateway</html>", UpstreamHTTPError),
]


@pytest.mark.parametrize(("status", "body", "cls"), ERRORS)
def test_map_google_error(status: int, body: bytes, cls: type[ProviderError]) -> None:
    error = map_google_error("google", status, body, {}, "gemini-2.0-flash")
    assert type(error) is cls
    assert error.provider == "google"


def test_error_details() -> None:
    context = map_google_error("google", 400, ERRORS[1][1], {}, "gemini-2.0-flash")
    assert isinstance(context, ContextLengthExceeded)
    assert (context.requested_tokens, context.max_tokens) == (1200000, 1048576)
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12.5s"}
    body = error_body(429, "RESOURCE_EXHAUSTED", details=[retry_info])
    overloaded = map_google_error("google", 429, body, {}, "m")
    assert isinstance(overloaded, ModelOverloaded)
    assert overloaded.retry_after == 13
    internal = map_google_error("google", 500, error_body(500, "INTERNAL"), {}, "m")
    assert isinstance(internal, UpstreamHTTPError)
    assert (internal.status, internal.vendor_type, internal.retryable) == (500, "INTERNAL", True)
