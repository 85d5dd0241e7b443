"""The other front doors over chat: OpenAI's Responses API and Anthropic's Messages API
(docs/responses-api.md, docs/messages-api.md)."""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    BOOL,
    INT,
    STR,
    Operation,
    all_required,
    arr,
    deleted,
    header,
    listing,
    nullable,
    obj,
    query,
)
from gateway.operator.schemas.chat import ROUTING_MODES

RESPONSES_TAG = "responses"
MESSAGES_TAG = "messages"
CHAT_ERRORS = (400, 401, 403, 404, 408, 413, 429, 502, 503, 504)

RESPONSE_REQUEST = obj(
    ("model", "input"),
    model=STR,
    input={"anyOf": [STR, arr(ANY_OBJ)]},
    instructions=STR,
    tools=arr(obj(("type", "name"), type={"const": "function"}, name=STR, parameters=ANY_OBJ)),
    tool_choice={"anyOf": [STR, ANY_OBJ]},
    text=obj(format=ANY_OBJ),
    max_output_tokens={"type": "integer", "minimum": 1},
    temperature={"type": "number", "minimum": 0, "maximum": 2},
    top_p={"type": "number", "minimum": 0, "maximum": 1},
    reasoning=obj(effort=STR),
    metadata=ANY_OBJ,
    store=BOOL,
    stream=BOOL,
    previous_response_id=STR,
    parallel_tool_calls=BOOL,
    user=STR,
    routing_mode={"enum": ROUTING_MODES},
    provider=STR,
    service=ANY_OBJ,
)
RESPONSE = obj(
    ("id", "object", "created_at", "status", "model", "output"),
    id=STR,
    object={"const": "response"},
    created_at=INT,
    status={"enum": ["completed", "incomplete", "failed", "in_progress"]},
    model=STR,
    output=arr(ANY_OBJ),
    usage=nullable(ANY_OBJ),
    error=nullable(ANY_OBJ),
    incomplete_details=nullable(ANY_OBJ),
    previous_response_id=nullable(STR),
    service=ANY_OBJ,
)
RESPONSE_EVENT = obj(("type", "sequence_number"), type=STR, sequence_number=INT)
STORED_ERRORS = (401, 403, 404)

MESSAGE_REQUEST = obj(
    ("model", "max_tokens", "messages"),
    model=STR,
    max_tokens={"type": "integer", "minimum": 1},
    messages=arr(obj(("role", "content"), role={"enum": ["user", "assistant"]})),
    system={"anyOf": [STR, arr(ANY_OBJ)]},
    tools=arr(ANY_OBJ),
    tool_choice=ANY_OBJ,
    stop_sequences=arr(STR),
    temperature={"type": "number", "minimum": 0, "maximum": 1},
    top_p={"type": "number", "minimum": 0, "maximum": 1},
    top_k={"type": "integer", "minimum": 1},
    metadata=obj(user_id=STR),
    thinking=ANY_OBJ,
    output_config=ANY_OBJ,
    stream=BOOL,
)
MESSAGE = obj(
    ("id", "type", "role", "model", "content", "stop_reason", "usage"),
    id=STR,
    type={"const": "message"},
    role={"const": "assistant"},
    model=STR,
    content=arr(ANY_OBJ),
    stop_reason={"enum": ["end_turn", "max_tokens", "tool_use", "refusal"]},
    stop_sequence=nullable(STR),
    usage=obj(input_tokens=INT, output_tokens=INT),
)
ANTHROPIC_HEADERS = (
    header("x-api-key", "a gateway key, as Anthropic's SDK sends it (or Authorization)"),
    header("anthropic-version", "accepted; changes nothing"),
    header("anthropic-beta", "accepted; changes nothing"),
)
ANTHROPIC_NOTE = (
    "Errors on this route are in Anthropic's shape: `{type: 'error', error: {type, "
    "message, code, ...}, request_id}`."
)

OPERATIONS = {
    "fast.responses": Operation(
        "Create a response (OpenAI's Responses API over any chat vendor), streamed or not",
        RESPONSES_TAG,
        RESPONSE,
        request=RESPONSE_REQUEST,
        stream=RESPONSE_EVENT,
        errors=CHAT_ERRORS,
    ),
    "responses.retrieve": Operation(
        "A stored response", RESPONSES_TAG, RESPONSE, body_required=False, errors=STORED_ERRORS
    ),
    "responses.delete": Operation(
        "Erase a stored response", RESPONSES_TAG, deleted("response"), errors=STORED_ERRORS
    ),
    "responses.input_items": Operation(
        "The input items of a stored response's request",
        RESPONSES_TAG,
        listing(ANY_OBJ, first_id=nullable(STR), last_id=nullable(STR), has_more=BOOL),
        body_required=False,
        query=(
            query("limit", INT, "1-100, default 20"),
            query("order", {"enum": ["asc", "desc"]}, "default desc"),
            query("after", STR, "an item id"),
            query("before", STR, "an item id"),
        ),
        errors=(400, *STORED_ERRORS),
    ),
    "responses.connect": Operation(
        "The Responses API's WebSocket mode: upgrade, then `response.create` events",
        RESPONSES_TAG,
        None,
        status=101,
        body_required=False,
        errors=(401, 405),
        description="Each `response.create` event (the create body's fields) is one turn, "
        "answered with the streamed events as JSON messages; turns run one at a time. A "
        "turn that cannot start gets one `error` event `{type, status, error}`. Without a "
        "valid key: an `error` event, then close code 4401.",
    ),
    "fast.messages": Operation(
        "Create a message (Anthropic's Messages API over any chat vendor), streamed or not",
        MESSAGES_TAG,
        MESSAGE,
        request=MESSAGE_REQUEST,
        stream=obj(("type",), type=STR),
        errors=(*CHAT_ERRORS, 529),
        headers=ANTHROPIC_HEADERS,
        description=ANTHROPIC_NOTE,
    ),
    "fast.messages_count_tokens": Operation(
        "Count a Messages request's input tokens",
        MESSAGES_TAG,
        all_required(input_tokens=INT),
        request=obj(("model", "messages"), model=STR, messages=arr(ANY_OBJ)),
        errors=(400, 401, 403, 404),
        headers=ANTHROPIC_HEADERS,
        description=ANTHROPIC_NOTE,
    ),
}
