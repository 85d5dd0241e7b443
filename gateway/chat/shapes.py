"""The declared shapes of `POST /v1/chat/completions`: the body it reads and the answers
it builds, from which the OpenAPI document is written (`gateway.platform.shapes`).

The body is read by hand (`gateway.chat.input`, `gateway.chat.options_input`: the hot
path, with the legacy `functions` form converted on the way); the bounds and choices
below are that parser's own constants, so the two cannot drift apart in a number, and
the schemathesis run (tests/operator/test_fuzz.py) holds them to each other in shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import attrs

from gateway.chat.input import TOOL_NAME
from gateway.chat.options_input import (
    AUDIO_FORMATS,
    CACHE_MODES,
    INPUT_AUDIO_FORMATS,
    LOGIT_BIAS,
    MAX_CHOICES,
    MAX_TOP_LOGPROBS,
    MODALITIES,
    SEARCH_CONTEXT_SIZES,
)
from gateway.kernels.inline_data import BASE64, DOCUMENT_DATA_URL
from gateway.platform.shapes import (
    Choices,
    Count,
    Doc,
    Length,
    Pattern,
    Range,
    accepts_more,
    together,
)
from gateway.upstream.options import (
    CACHE_RETENTIONS,
    MAX_SAFETY_IDENTIFIER,
    MAX_STOP,
    NUMBER_BOUNDS,
    SERVICE_TIERS,
    VERBOSITIES,
    Metadata,
    Model,
    RoutingMode,
    ServiceRequest,
    StreamOptions,
    forced_provider,
)
from providers.catalog import REASONING_EFFORTS

Positive = Annotated[int, Range(least=1)]
ToolName = Annotated[str, Pattern(TOOL_NAME.pattern, "1-64 letters, digits, '_' or '-'")]


# -- messages ------------------------------------------------------------------------------


@accepts_more
@attrs.frozen
class ChatTextPart:
    """A text part of a message's content."""

    type: Literal["text"]
    text: str


@accepts_more
@attrs.frozen
class ChatImageUrl:
    url: str


@accepts_more
@attrs.frozen
class ChatImagePart:
    """An image part: its URL (or a `data:` URL)."""

    type: Literal["image_url"]
    image_url: ChatImageUrl


@attrs.frozen
class ChatInputAudio:
    data: Annotated[str, Doc("the audio, base64"), Pattern(f"^{BASE64}$", "base64")]
    format: Annotated[str, Choices(INPUT_AUDIO_FORMATS)]


@attrs.frozen
class ChatAudioPart:
    """Spoken input, for models with `audio_input` (`/v1/models?capability=audio_input`)."""

    type: Literal["input_audio"]
    input_audio: ChatInputAudio


@attrs.frozen
class ChatFileData:
    file_data: Annotated[
        str,
        Doc("a base64 `data:` URL of a PDF, a text file or an image"),
        Pattern(f"^{DOCUMENT_DATA_URL}$", "a base64 data: URL of a PDF, text or image"),
    ]
    filename: str | None = None


@attrs.frozen
class ChatFileId:
    file_id: Annotated[str, Doc("one of this gateway's files (POST /v1/files)"), Length(least=1)]
    filename: str | None = None


@attrs.frozen
class ChatOtherPart:
    """A document, for models with `file_input` (`/v1/models?capability=file_input`)."""

    type: Literal["file"]
    file: ChatFileData | ChatFileId


ChatContent = (
    str
    | Annotated[list[ChatTextPart | ChatImagePart | ChatAudioPart | ChatOtherPart], Count(least=1)]
)


@accepts_more
@attrs.frozen
class ChatCalledFunction:
    name: str
    arguments: str = ""


@accepts_more
@attrs.frozen
class ChatMessageToolCall:
    """A call an assistant message made, as the history carries it."""

    id: str
    function: ChatCalledFunction


@accepts_more
@attrs.frozen
class ChatPromptMessage:
    """A system, developer or user message."""

    role: Literal["system", "developer", "user"]
    content: ChatContent
    name: str | None = None
    tool_calls: None = None


@accepts_more
@attrs.frozen
class ChatAssistantMessage:
    """An assistant message with content (and possibly the tools it called)."""

    role: Literal["assistant"]
    content: ChatContent
    name: str | None = None
    tool_calls: list[ChatMessageToolCall] | None = None


@accepts_more
@attrs.frozen
class ChatAssistantCallMessage:
    """An assistant message that called tools: its content may be left out."""

    role: Literal["assistant"]
    tool_calls: Annotated[list[ChatMessageToolCall], Count(least=1)]
    content: ChatContent | None = None
    name: str | None = None


@accepts_more
@attrs.frozen
class ChatToolMessage:
    """A tool's result, answering the call `tool_call_id`."""

    role: Literal["tool"]
    content: ChatContent
    tool_call_id: str
    name: str | None = None
    tool_calls: None = None


ChatMessage = ChatPromptMessage | ChatAssistantMessage | ChatAssistantCallMessage | ChatToolMessage


# -- tools and output controls -------------------------------------------------------------


@accepts_more
@attrs.frozen
class ChatFunction:
    """A function the model may call."""

    name: ToolName
    description: str = ""
    parameters: dict[str, Any] | None = None


@attrs.frozen
class ChatFunctionTool:
    type: Literal["function"]
    function: ChatFunction


@accepts_more
@attrs.frozen
class ChatNamedFunction:
    name: str


@attrs.frozen
class ChatFunctionChoice:
    """Call this function (one of `tools`: `invalid_tool_choice` otherwise)."""

    type: Literal["function"]
    function: ChatNamedFunction


@accepts_more
@attrs.frozen
class ChatPlainFormat:
    type: Literal["text", "json_object"]


@accepts_more
@attrs.frozen
class ChatJsonSchema:
    name: Annotated[str, Length(least=1)]


@accepts_more
@attrs.frozen
class ChatJsonSchemaFormat:
    type: Literal["json_schema"]
    json_schema: ChatJsonSchema


@attrs.frozen
class ChatPrediction:
    """Predicted output: text, or text parts."""

    type: Literal["content"]
    content: str | list[ChatTextPart]


@attrs.frozen
class ChatVoiceId:
    """A custom voice, by its id."""

    id: str


@attrs.frozen
class ChatAudioOptions:
    """How an audio model speaks its answer (with `modalities: ["text", "audio"]`)."""

    voice: Annotated[str, Length(least=1), Doc("a voice name (alloy, ash, ...)")] | ChatVoiceId
    format: Annotated[str, Choices(AUDIO_FORMATS)]


@accepts_more
@attrs.frozen
class ChatWebSearchOptions:
    search_context_size: Annotated[str, Choices(SEARCH_CONTEXT_SIZES)] = "medium"


@accepts_more
@attrs.frozen
class ChatModeration:
    """Moderate the answer with this model."""

    model: str


@accepts_more
@attrs.frozen
class ChatCacheOptions:
    mode: Annotated[str, Choices(CACHE_MODES)] = "implicit"
    ttl: Literal["30m"] = "30m"


# -- the body ------------------------------------------------------------------------------

_GIVEN = {"not": {"type": "null"}}


def _given(*names: str) -> dict[str, Any]:
    return {"anyOf": [{"required": [n], "properties": {n: _GIVEN}} for n in names]}


# What the fields mean together: one form of tools (`tools`/`tool_choice` or the
# deprecated `functions`/`function_call`), one token bound, `top_logprobs` with
# `logprobs`, `audio` with the audio modality (`gateway.chat.input` checks each).
CHAT_RULES: tuple[dict[str, Any], ...] = (
    {"not": {"allOf": [_given("tools", "tool_choice"), _given("functions", "function_call")]}},
    {"not": {"allOf": [_given("max_tokens"), _given("max_completion_tokens")]}},
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
)


@together(*CHAT_RULES)
@attrs.frozen(kw_only=True)
class ChatCompletionRequest:
    """A chat-completions request: OpenAI's parameters and the gateway's extensions
    (`routing_mode`, `provider`, `service`, `top_k`). A null is the same as leaving a
    field out; an unknown field is refused."""

    model: Model
    messages: Annotated[list[ChatMessage], Count(least=1)]
    temperature: Annotated[float, Range(*NUMBER_BOUNDS["temperature"])] | None = None
    top_p: Annotated[float, Range(*NUMBER_BOUNDS["top_p"])] | None = None
    presence_penalty: Annotated[float, Range(*NUMBER_BOUNDS["presence_penalty"])] | None = None
    frequency_penalty: Annotated[float, Range(*NUMBER_BOUNDS["frequency_penalty"])] | None = None
    max_tokens: Positive | None = None
    max_completion_tokens: Positive | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    stop: str | Annotated[list[str], Count(most=MAX_STOP)] | None = None
    tools: list[ChatFunctionTool] | None = None
    tool_choice: Literal["auto", "none", "required"] | ChatFunctionChoice | None = None
    functions: list[ChatFunction] | None = None
    function_call: Literal["none", "auto"] | ChatNamedFunction | None = None
    parallel_tool_calls: bool | None = None
    response_format: ChatPlainFormat | ChatJsonSchemaFormat | None = None
    seed: int | None = None
    user: str | None = None
    n: Annotated[int, Range(least=1, most=MAX_CHOICES)] | None = None
    logit_bias: (
        dict[
            Annotated[str, Pattern("^[0-9]+$", "a token id")],
            Annotated[float, Range(least=LOGIT_BIAS[0], most=LOGIT_BIAS[1])],
        ]
        | None
    ) = None
    logprobs: bool | None = None
    top_logprobs: Annotated[int, Range(least=0, most=MAX_TOP_LOGPROBS)] | None = None
    reasoning_effort: Annotated[str, Choices(REASONING_EFFORTS)] | None = None
    verbosity: Annotated[str, Choices(VERBOSITIES)] | None = None
    service_tier: Annotated[str, Choices(SERVICE_TIERS)] | None = None
    store: bool | None = None
    metadata: Metadata | None = None
    prediction: ChatPrediction | None = None
    modalities: Annotated[list[Annotated[str, Choices(MODALITIES)]], Count(least=1)] | None = None
    audio: ChatAudioOptions | None = None
    web_search_options: ChatWebSearchOptions | None = None
    moderation: ChatModeration | None = None
    safety_identifier: Annotated[str, Length(most=MAX_SAFETY_IDENTIFIER)] | None = None
    prompt_cache_key: str | None = None
    prompt_cache_options: ChatCacheOptions | None = None
    prompt_cache_retention: Annotated[str, Choices(CACHE_RETENTIONS)] | None = None
    top_k: Positive | None = None
    routing_mode: RoutingMode | None = None
    provider: forced_provider("chat") = None  # type: ignore[valid-type]
    service: ServiceRequest | None = None


# -- the answers ---------------------------------------------------------------------------


class ChatFunctionCalled(TypedDict):
    name: str
    arguments: str


class ChatToolCall(TypedDict):
    """A tool the model called."""

    id: str
    type: Literal["function"]
    function: ChatFunctionCalled


class ChatAnswerMessage(TypedDict):
    """The assistant's message: its text, and the tools it called (`function_call`
    instead, for a request in the legacy `functions` form)."""

    role: Literal["assistant"]
    content: str | None
    tool_calls: NotRequired[list[ChatToolCall]]
    function_call: NotRequired[ChatFunctionCalled]
    audio: NotRequired[ChatAnswerAudio]


class ChatAnswerAudio(TypedDict):
    """The spoken answer of an audio model (the audio modality), as its vendor sent it:
    `id` names it in the next turn until `expires_at` (Unix seconds)."""

    id: str
    data: str
    expires_at: int
    transcript: str


class ChatLogprobs(TypedDict):
    """The log probabilities of the choice's tokens (when `logprobs` was asked)."""

    content: list[Mapping[str, Any]]
    refusal: None


FinishReason = Annotated[
    str, Doc("`stop`, `length`, `tool_calls`, `content_filter` (or `function_call`)")
]


class ChatCompletionChoice(TypedDict):
    index: int
    message: ChatAnswerMessage
    finish_reason: FinishReason
    logprobs: ChatLogprobs | None


class ChatUsage(TypedDict):
    """Tokens of the request: its prompt, its answer, both; of them, the audio tokens an
    audio model heard and spoke (priced apart), when there were any."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: NotRequired[ChatAudioTokens]
    completion_tokens_details: NotRequired[ChatAudioTokens]


class ChatAudioTokens(TypedDict):
    audio_tokens: int


class ChatCacheHit(TypedDict):
    hit: bool


class ChatCost(TypedDict):
    """What the call cost at list prices, in USD."""

    input: float
    output: float
    total: float


class ChatService(TypedDict):
    """The gateway's metadata of the call: who served it, how fast, at what cost."""

    request_id: str
    provider: str
    latency_ms: float
    cache: ChatCacheHit
    cost: ChatCost


class ChatCompletion(TypedDict):
    """A chat completion (OpenAI's shape) with the gateway's `service` and `_gateway`
    objects (`_gateway`: routing, fallbacks, tools, energy and carbon; docs/chat.md)."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChatCompletionChoice]
    usage: ChatUsage
    service: ChatService
    _gateway: dict[str, Any]
    moderation: NotRequired[Mapping[str, Any]]


class ChatChunkChoice(TypedDict):
    index: int
    delta: dict[str, Any]
    finish_reason: FinishReason | None
    logprobs: ChatLogprobs | None


class ChatCompletionChunk(TypedDict):
    """One event of a streamed completion (`data: <chunk>`, then `data: [DONE]`): a
    choice's delta; the last one carries the gateway's `service` and `_gateway`, a
    chunk of its own the `usage` (`stream_options.include_usage`) or the vendor's
    `moderation`."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    choices: list[ChatChunkChoice]
    obfuscation: NotRequired[str]
    moderation: NotRequired[Mapping[str, Any]]
    usage: NotRequired[ChatUsage]
    service: NotRequired[ChatService]
    _gateway: NotRequired[dict[str, Any]]
