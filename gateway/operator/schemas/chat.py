"""POST /v1/chat/completions (served by the plain-ASGI fast path)."""

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
    forced_provider,
    header,
    nullable,
    obj,
    ref,
)
from gateway.operator.schemas.components import SERVICE_REQUEST
from gateway.upstream.options import MAX_STOP, NUMBER_BOUNDS
from providers.catalog import REASONING_EFFORTS

# The chat family's bounds (`gateway.chat.options_input`), which this registry may not
# import (one family does not import another); the schemathesis run holds them to it.
CACHE_MODES = ("implicit", "explicit")
CACHE_RETENTIONS = ("in_memory", "24h")
MAX_CHOICES = 128
MAX_SAFETY_IDENTIFIER = 128
MAX_TOP_LOGPROBS = 20
MODALITIES = ("text", "audio")
SEARCH_CONTEXT_SIZES = ("low", "medium", "high")
SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority", "fast")
VERBOSITIES = ("low", "medium", "high")
METADATA: Schema = {
    "type": "object",
    "maxProperties": 16,
    "propertyNames": {"maxLength": 64},
    "additionalProperties": {"type": "string", "maxLength": 512},
}
ROUTING_MODES = ["balanced", "cost_optimized", "performance", "low_latency", "sustain_optimized"]


def maybe(schema: Schema) -> Schema:
    """An optional body field: a JSON null is the same as leaving it out."""
    return nullable(schema)


def sampling(name: str) -> Schema:
    low, high = NUMBER_BOUNDS[name]
    return maybe({"type": "number", "minimum": low, "maximum": high})


TEXT_PART = all_required(type={"const": "text"}, text=STR)
IMAGE_PART = all_required(type={"const": "image_url"}, image_url=obj(("url",), url=STR))
OTHER_PART = obj(("type",), type={"enum": ["input_audio", "file"]})
CONTENT: Schema = {
    "anyOf": [
        STR,
        arr(
            {
                "anyOf": [
                    TEXT_PART,
                    IMAGE_PART,
                    obj(("type",), type={"enum": ["input_audio", "file"]}),
                ]
            },
            minItems=1,
        ),
    ]
}
TOOL_CALL = obj(
    ("id", "function"),
    id=STR,
    function=obj(("name",), name=STR, arguments=STR),
)
NAME = maybe(STR)
NO_CALLS: Schema = {"type": "null"}
# One message; `content` is needed unless an assistant message calls tools, and
# `tool_calls` belongs to assistant messages only.
MESSAGE: Schema = {
    "anyOf": [
        obj(
            ("role", "content"),
            role={"enum": ["system", "developer", "user"]},
            content=CONTENT,
            name=NAME,
            tool_calls=NO_CALLS,
        ),
        obj(
            ("role", "content"),
            role={"const": "assistant"},
            content=CONTENT,
            name=NAME,
            tool_calls=maybe(arr(TOOL_CALL)),
        ),
        obj(
            ("role", "tool_calls"),
            role={"const": "assistant"},
            content=maybe(CONTENT),
            name=NAME,
            tool_calls=arr(TOOL_CALL, minItems=1),
        ),
        obj(
            ("role", "content", "tool_call_id"),
            role={"const": "tool"},
            content=CONTENT,
            tool_call_id=STR,
            name=NAME,
            tool_calls=NO_CALLS,
        ),
    ]
}
FUNCTION = obj(
    ("name",),
    name={"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
    description=STR,
    parameters=maybe(ANY_OBJ),
)
TOOL = all_required(type={"const": "function"}, function=FUNCTION)
# A choice naming a function must name one of `tools` (`invalid_tool_choice`).
TOOL_CHOICE: Schema = {
    "anyOf": [
        {"enum": ["auto", "none", "required"]},
        all_required(type={"const": "function"}, function=obj(("name",), name=STR)),
    ]
}
LEGACY_CALL: Schema = {"anyOf": [{"enum": ["none", "auto"]}, obj(("name",), name=STR)]}
COUNT: Schema = {"type": "integer", "minimum": 1}
CHAT_FIELDS: dict[str, Schema] = dict(
    model=MODEL,
    messages=arr(MESSAGE, minItems=1),
    temperature=sampling("temperature"),
    top_p=sampling("top_p"),
    presence_penalty=sampling("presence_penalty"),
    frequency_penalty=sampling("frequency_penalty"),
    max_tokens=maybe(COUNT),
    max_completion_tokens=maybe(COUNT),
    stream=maybe(BOOL),
    stream_options=maybe(closed(include_usage=BOOL, include_obfuscation=BOOL)),
    stop=maybe({"anyOf": [STR, arr(STR, maxItems=MAX_STOP)]}),
    tools=maybe(arr(TOOL)),
    tool_choice=maybe(TOOL_CHOICE),
    functions=maybe(arr(FUNCTION)),
    function_call=maybe(LEGACY_CALL),
    parallel_tool_calls=maybe(BOOL),
    response_format=maybe(
        {
            "anyOf": [
                obj(("type",), type={"enum": ["text", "json_object"]}),
                obj(
                    ("type", "json_schema"),
                    type={"const": "json_schema"},
                    json_schema=obj(("name",), name={"type": "string", "minLength": 1}),
                ),
            ]
        }
    ),
    seed=maybe(INT),
    user=maybe(STR),
    n=maybe({"type": "integer", "minimum": 1, "maximum": MAX_CHOICES}),
    logit_bias=maybe(
        {
            "type": "object",
            "propertyNames": {"pattern": "^[0-9]+$"},
            "additionalProperties": {"type": "number", "minimum": -100, "maximum": 100},
        }
    ),
    logprobs=maybe(BOOL),
    top_logprobs=maybe({"type": "integer", "minimum": 0, "maximum": MAX_TOP_LOGPROBS}),
    reasoning_effort=maybe({"enum": list(REASONING_EFFORTS)}),
    verbosity=maybe({"enum": list(VERBOSITIES)}),
    service_tier=maybe({"enum": list(SERVICE_TIERS)}),
    store=maybe(BOOL),
    metadata=maybe(METADATA),
    prediction=maybe(
        all_required(
            type={"const": "content"},
            content={"anyOf": [STR, arr(TEXT_PART)]},
        )
    ),
    modalities=maybe(arr({"enum": list(MODALITIES)}, minItems=1)),
    audio=maybe(ANY_OBJ),
    web_search_options=maybe(obj(search_context_size={"enum": list(SEARCH_CONTEXT_SIZES)})),
    moderation=maybe(obj(("model",), model=STR)),
    safety_identifier=maybe({"type": "string", "maxLength": MAX_SAFETY_IDENTIFIER}),
    prompt_cache_key=maybe(STR),
    prompt_cache_options=maybe(obj(mode={"enum": list(CACHE_MODES)}, ttl={"const": "30m"})),
    prompt_cache_retention=maybe({"enum": list(CACHE_RETENTIONS)}),
    top_k=maybe(COUNT),
    routing_mode=maybe({"enum": ROUTING_MODES}),
    provider=forced_provider("chat"),
    service=maybe(SERVICE_REQUEST),
)
# What the fields mean together: one form of tools (`tools`/`tool_choice` or the
# deprecated `functions`/`function_call`), one token bound, `top_logprobs` with
# `logprobs`, `audio` with the audio modality.
GIVEN: Schema = {"not": {"type": "null"}}


def given(*names: str) -> Schema:
    return {"anyOf": [{"required": [n], "properties": {n: GIVEN}} for n in names]}


CHAT_RULES: list[Schema] = [
    {"not": {"allOf": [given("tools", "tool_choice"), given("functions", "function_call")]}},
    {"not": {"allOf": [given("max_tokens"), given("max_completion_tokens")]}},
    {
        "if": {"required": ["top_logprobs"], "properties": {"top_logprobs": {"minimum": 1}}},
        "then": {"required": ["logprobs"], "properties": {"logprobs": {"const": True}}},
    },
    {
        "if": {
            "required": ["modalities"],
            "properties": {"modalities": {"type": "array", "contains": {"const": "audio"}}},
        },
        "then": {"required": ["audio"], "properties": {"audio": {"type": "object"}}},
    },
]
CHAT_REQUEST = closed(("model", "messages"), **CHAT_FIELDS) | {"allOf": CHAT_RULES}

OPERATIONS = {
    "fast.chat_completions": Operation(
        "Chat completion (OpenAI-compatible), streamed or not",
        "chat",
        ref("ChatCompletion"),
        request=CHAT_REQUEST,
        stream=ref("ChatCompletionChunk"),
        errors=(400, 401, 403, 404, 408, 413, 429, 502, 503, 504),
        headers=(
            {
                "name": "X-Routing-Mode",
                "in": "header",
                "required": False,
                "schema": {"enum": ROUTING_MODES},
                "description": "routing mode, as `routing_mode`",
            },
            header("X-Service-Project", "project id for usage records"),
            header("X-Service-Team", "team id for usage records"),
            header("X-Service-Tags", "comma-separated tags"),
            header("X-Service-Task-Type", "overrides the task classification"),
            header("X-Service-Trace-Id", "a trace id of the caller's"),
        ),
    ),
}
