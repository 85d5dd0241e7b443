"""The other front doors over chat: OpenAI's Responses API and Anthropic's Messages API
(docs/responses-api.md, docs/messages-api.md)."""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    BOOL,
    INT,
    MODEL,
    STR,
    Operation,
    Schema,
    all_required,
    arr,
    closed,
    deleted,
    forced_provider,
    header,
    listing,
    nullable,
    obj,
    query,
)
from gateway.operator.schemas.components import SERVICE_REQUEST
from providers.catalog import REASONING_EFFORTS

CACHE_RETENTIONS = ("in_memory", "24h")
SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority", "fast")
VERBOSITIES = ("low", "medium", "high")
METADATA: Schema = {
    "type": "object",
    "maxProperties": 16,
    "propertyNames": {"maxLength": 64},
    "additionalProperties": {"type": "string", "maxLength": 512},
}
ROUTING_MODES = ["balanced", "cost_optimized", "performance", "low_latency", "sustain_optimized"]
RESPONSES_TAG = "responses"
MESSAGES_TAG = "messages"
CHAT_ERRORS = (400, 401, 403, 404, 408, 413, 429, 502, 503, 504)


def maybe(schema: Schema) -> Schema:
    """An optional body field: a JSON null is the same as leaving it out."""
    return nullable(schema)


INPUT_TEXT = all_required(type={"const": "input_text"}, text=STR)
INPUT_IMAGE = obj(
    ("type", "image_url"),
    type={"const": "input_image"},
    image_url={"type": "string", "minLength": 1},
    detail=maybe({"enum": ["auto", "low", "high", "original"]}),
)
OUTPUT_PART: Schema = {
    "anyOf": [
        all_required(type={"const": "output_text"}, text=STR),
        all_required(type={"const": "refusal"}, refusal=STR),
    ]
}


def parts(part: Schema) -> Schema:
    return {"anyOf": [STR, arr(part, minItems=1)]}


MESSAGE_TYPE: Schema = {"const": "message"}
INPUT_ITEM: Schema = {
    "anyOf": [
        obj(
            ("role", "content"),
            type=MESSAGE_TYPE,
            role={"enum": ["user", "system", "developer"]},
            content=parts({"anyOf": [INPUT_TEXT, INPUT_IMAGE]}),
        ),
        obj(
            ("role", "content"),
            type=MESSAGE_TYPE,
            role={"const": "assistant"},
            content=parts(OUTPUT_PART),
        ),
        all_required(type={"const": "function_call"}, call_id=STR, name=STR, arguments=STR),
        all_required(
            type={"const": "function_call_output"},
            call_id=STR,
            output={"anyOf": [STR, arr(INPUT_TEXT)]},
        ),
    ]
}
TEXT_FORMAT: Schema = {
    "anyOf": [
        obj(("type",), type={"enum": ["text", "json_object"]}),
        obj(
            ("type", "name", "schema"),
            type={"const": "json_schema"},
            name={"type": "string", "minLength": 1},
            schema=ANY_OBJ,
        ),
    ]
}
FUNCTION_TOOL = obj(
    ("type", "name"),
    type={"const": "function"},
    name={"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
    description=maybe(STR),
    parameters=maybe(ANY_OBJ),
)
# A function named in `tool_choice` must be among `tools` (`invalid_tool_choice`).
RESPONSE_TOOL_CHOICE: Schema = {
    "anyOf": [
        {"enum": ["auto", "none", "required"]},
        all_required(type={"const": "function"}, name=STR),
    ]
}
# The fields the gateway refuses when set (the reason is in the 400's message).
REFUSED_FIELDS = (
    "background",
    "conversation",
    "prompt",
    "context_management",
    "moderation",
    "image",
    "access_programs",
    "background_options",
    "prompt_cache_options",
)
RESPONSE_FIELDS: dict[str, Schema] = dict(
    model=MODEL,
    input=parts(INPUT_ITEM) | {"description": "a text, or input items (at least one)"},
    instructions=maybe(STR),
    tools=maybe(arr(FUNCTION_TOOL)),
    tool_choice=maybe(RESPONSE_TOOL_CHOICE),
    text=maybe(obj(format=maybe(TEXT_FORMAT), verbosity=maybe({"enum": list(VERBOSITIES)}))),
    max_output_tokens=maybe({"type": "integer", "minimum": 1}),
    temperature=maybe({"type": "number", "minimum": 0, "maximum": 2}),
    top_p=maybe({"type": "number", "minimum": 0, "maximum": 1}),
    reasoning=maybe(obj(effort=maybe({"enum": list(REASONING_EFFORTS)}))),
    metadata=maybe(METADATA),
    store=maybe(BOOL),
    stream=maybe(BOOL),
    stream_options=maybe(closed(include_usage=BOOL, include_obfuscation=BOOL)),
    max_tool_calls=maybe(INT),
    previous_response_id=maybe(STR),
    parallel_tool_calls=maybe(BOOL),
    user=maybe(STR),
    safety_identifier=maybe({"type": "string", "maxLength": 128}),
    service_tier=maybe({"enum": list(SERVICE_TIERS)}),
    truncation=maybe({"const": "disabled"}),
    include=maybe(arr({"const": "reasoning.encrypted_content"})),
    prompt_cache_key=maybe(STR),
    prompt_cache_retention=maybe({"enum": list(CACHE_RETENTIONS)}),
    top_logprobs=maybe({"const": 0}),
    routing_mode=maybe({"enum": ROUTING_MODES}),
    provider=forced_provider("chat"),
    service=maybe(SERVICE_REQUEST),
    **{name: {"enum": [None, False], "description": "not supported"} for name in REFUSED_FIELDS},
)
RESPONSE_REQUEST = closed(("model", "input"), **RESPONSE_FIELDS)
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

TEXT_BLOCK = all_required(type={"const": "text"}, text=STR)
SKIPPED_BLOCK = obj(("type",), type={"enum": ["thinking", "redacted_thinking"]})
IMAGE_SOURCE: Schema = {
    "anyOf": [
        obj(("type",), type={"const": "base64"}, media_type=STR, data=STR),
        all_required(type={"const": "url"}, url=STR),
    ]
}
USER_BLOCK: Schema = {
    "anyOf": [
        TEXT_BLOCK,
        all_required(type={"const": "image"}, source=IMAGE_SOURCE),
        obj(
            ("type", "tool_use_id"),
            type={"const": "tool_result"},
            tool_use_id=STR,
            content=maybe({"anyOf": [STR, arr(TEXT_BLOCK)]}),
            is_error=maybe(BOOL),
        ),
        SKIPPED_BLOCK,
    ]
}
ASSISTANT_BLOCK: Schema = {
    "anyOf": [
        TEXT_BLOCK,
        obj(
            ("type", "id", "name"),
            type={"const": "tool_use"},
            id=STR,
            name=STR,
            input=maybe(ANY_OBJ),
        ),
        SKIPPED_BLOCK,
    ]
}
ANTHROPIC_MESSAGE: Schema = {
    "anyOf": [
        all_required(role={"const": "user"}, content={"anyOf": [STR, arr(USER_BLOCK)]}),
        all_required(role={"const": "assistant"}, content={"anyOf": [STR, arr(ASSISTANT_BLOCK)]}),
    ]
}
CLIENT_TOOL = obj(
    ("name", "input_schema"),
    type={"const": "custom"},
    name=STR,
    input_schema=ANY_OBJ,
    description=STR,
)
# `tool` must name one of `tools`, and any choice needs `tools` (`invalid_tool_choice`).
ANTHROPIC_TOOL_CHOICE: Schema = {
    "anyOf": [
        obj(("type",), type={"enum": ["auto", "any", "none"]}, disable_parallel_tool_use=BOOL),
        obj(("type", "name"), type={"const": "tool"}, name=STR, disable_parallel_tool_use=BOOL),
    ]
}
# The fields the gateway refuses when set (the reason is in the 400's message).
NOT_SUPPORTED: Schema = {"type": "null", "description": "not supported"}
ANTHROPIC_REFUSED = (
    "container",
    "mcp_servers",
    "context_management",
    "inference_geo",
    "user_profile_id",
    "workspace_id",
)
MESSAGE_FIELDS: dict[str, Schema] = dict(
    model=MODEL,
    messages=arr(ANTHROPIC_MESSAGE, minItems=1),
    max_tokens={"type": "integer", "minimum": 1},
    system=maybe({"anyOf": [STR, arr(TEXT_BLOCK)]}),
    tools=maybe(arr(CLIENT_TOOL)),
    tool_choice=maybe(ANTHROPIC_TOOL_CHOICE),
    stop_sequences=maybe(arr(STR, maxItems=4)),
    temperature=maybe({"type": "number", "minimum": 0, "maximum": 1}),
    top_p=maybe({"type": "number", "minimum": 0, "maximum": 1}),
    top_k=maybe({"type": "integer", "minimum": 1}),
    metadata=maybe(closed(user_id=maybe(STR))),
    thinking=maybe(
        {
            "anyOf": [
                obj(("type",), type={"const": "disabled"}),
                obj(
                    ("type", "budget_tokens"),
                    type={"const": "enabled"},
                    budget_tokens={"type": "integer", "minimum": 1},
                ),
            ],
            "description": "`budget_tokens` below `max_tokens` (`invalid_thinking_budget`)",
        }
    ),
    stream=maybe(BOOL),
    service_tier=maybe({"enum": ["auto", "standard_only"]}),
    output_config=maybe(
        closed(
            effort=maybe({"enum": ["low", "medium", "high", "xhigh", "max"]}),
            format=maybe(all_required(type={"const": "json_schema"}, schema=ANY_OBJ)),
        )
    ),
    speed=maybe({"const": "standard"}),
    cache_control={"description": "taken and not acted on"},
    diagnostics={"description": "taken and not acted on"},
    routing_mode=maybe({"enum": ROUTING_MODES}),
    provider=forced_provider("chat"),
    service=maybe(SERVICE_REQUEST),
    **dict.fromkeys(ANTHROPIC_REFUSED, NOT_SUPPORTED),
)
# A thinking budget must be below max_tokens, which JSON Schema cannot compare.
MESSAGE_REQUEST = closed(("model", "max_tokens", "messages"), **MESSAGE_FIELDS)
COUNTED = {k: v for k, v in MESSAGE_FIELDS.items() if k not in ("max_tokens", "stream")}
COUNT_REQUEST = closed(
    ("model", "messages"),
    **COUNTED,
    max_tokens={"description": "ignored when counting"},
    stream=maybe({"const": False}),
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
        request=COUNT_REQUEST,
        errors=(400, 401, 403, 404),
        headers=ANTHROPIC_HEADERS,
        description=ANTHROPIC_NOTE,
    ),
}
