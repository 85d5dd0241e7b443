"""POST /v1/chat/completions (served by the plain-ASGI fast path)."""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    BOOL,
    INT,
    STR,
    STRS,
    Operation,
    arr,
    header,
    obj,
    ref,
)

ROUTING_MODES = ["balanced", "cost_optimized", "performance", "low_latency", "sustain_optimized"]

CHAT_REQUEST = obj(
    ("model", "messages"),
    model={"type": "string", "description": "A model id, or `auto` for routing"},
    messages=arr(
        obj(
            ("role",),
            role={"enum": ["system", "developer", "user", "assistant", "tool"]},
            content={"anyOf": [STR, arr(ANY_OBJ), {"type": "null"}]},
            name=STR,
            tool_calls=arr(ANY_OBJ),
            tool_call_id=STR,
        ),
        minItems=1,
    ),
    temperature={"type": "number", "minimum": 0, "maximum": 2},
    top_p={"type": "number", "minimum": 0, "maximum": 1},
    max_tokens={"type": "integer", "minimum": 1},
    stream=BOOL,
    stop={"anyOf": [STR, STRS]},
    presence_penalty={"type": "number", "minimum": -2, "maximum": 2},
    frequency_penalty={"type": "number", "minimum": -2, "maximum": 2},
    tools=arr(ANY_OBJ),
    tool_choice={"anyOf": [STR, ANY_OBJ]},
    routing_mode={"enum": ROUTING_MODES},
    provider=STR,
    service=obj(
        cache={"enum": ["skip"]},
        fallbacks=STRS,
        tags=ANY_OBJ,
        rate_limit_handling=obj(strategy={"enum": ["queue", "fallback"]}, max_wait_ms=INT),
        retry=obj(max_attempts=INT, retryable_errors=STRS),
    ),
    seed=INT,
    user=STR,
    n=INT,
    logit_bias=ANY_OBJ,
    response_format=obj(
        ("type",), type={"enum": ["text", "json_object", "json_schema"]}, json_schema=ANY_OBJ
    ),
    stream_options=ANY_OBJ,
    parallel_tool_calls=BOOL,
    functions=arr(ANY_OBJ),
    function_call={"anyOf": [STR, ANY_OBJ]},
    metadata=ANY_OBJ,
)

OPERATIONS = {
    "fast.chat_completions": Operation(
        "Chat completion (OpenAI-compatible), streamed or not",
        "chat",
        ref("ChatCompletion"),
        request=CHAT_REQUEST,
        stream=ref("ChatCompletionChunk"),
        errors=(400, 401, 403, 404, 408, 413, 429, 502, 503, 504),
        headers=(
            header("X-Routing-Mode", "routing mode, as `routing_mode`"),
            header("X-Service-Project", "project id for usage records"),
            header("X-Service-Team", "team id for usage records"),
            header("X-Service-Tags", "comma-separated tags"),
            header("X-Service-Task-Type", "overrides the task classification"),
            header("X-Service-Trace-Id", "a trace id of the caller's"),
        ),
    ),
}
