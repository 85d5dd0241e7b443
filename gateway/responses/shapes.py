"""The declared shapes of the Responses API's routes: the create body, the query of the
input items, and the answers, from which the OpenAPI document is written
(`gateway.platform.shapes`).

The body is read by hand (`gateway.responses.input`, then chat's own parser on the chat
body it becomes); the bounds below are those parsers' constants, and the schemathesis
run (tests/operator/test_fuzz.py) holds the two to each other in shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import attrs

from gateway.kernels.inline_data import BASE64, DOCUMENT_DATA_URL
from gateway.platform.shapes import (
    NOT_NULL,
    Choices,
    Count,
    Doc,
    Length,
    Pattern,
    Range,
    accepts_more,
)
from gateway.responses.input import INCLUDABLE, MAX_TOP_LOGPROBS, TEXT_FORMATS
from gateway.upstream.options import (
    CACHE_RETENTIONS,
    MAX_SAFETY_IDENTIFIER,
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

# -- input items ---------------------------------------------------------------------------


@accepts_more
@attrs.frozen
class ResponseInputText:
    type: Literal["input_text"]
    text: str


@accepts_more
@attrs.frozen
class ResponseInputImage:
    """An image by URL (or a `data:` URL)."""

    type: Literal["input_image"]
    image_url: Annotated[str, Length(least=1)]
    detail: Literal["auto", "low", "high", "original"] | None = None


@attrs.frozen
class ResponseInputFileData:
    """A document inline (chat's `file` part; `file_url` is refused)."""

    type: Literal["input_file"]
    file_data: Annotated[
        str, Pattern(f"^{DOCUMENT_DATA_URL}$", "a base64 data: URL of a PDF, text or image")
    ]
    filename: str | None = None


@attrs.frozen
class ResponseInputFileId:
    """One of this gateway's files (POST /v1/files) by its id."""

    type: Literal["input_file"]
    file_id: Annotated[str, Length(least=1)]
    filename: str | None = None


ResponseInputFile = ResponseInputFileData | ResponseInputFileId


@attrs.frozen
class ResponseInputAudioData:
    data: Annotated[str, Pattern(f"^{BASE64}$", "base64")]
    format: Literal["wav", "mp3"]


@accepts_more
@attrs.frozen
class ResponseInputAudio:
    type: Literal["input_audio"]
    input_audio: ResponseInputAudioData


@accepts_more
@attrs.frozen
class ResponseOutputText:
    type: Literal["output_text"]
    text: str


@accepts_more
@attrs.frozen
class ResponseRefusalPart:
    type: Literal["refusal"]
    refusal: str


MessageType = Annotated[Literal["message"] | None, NOT_NULL]


@accepts_more
@attrs.frozen
class ResponseInputMessage:
    """A user, system or developer message: a text, or input parts."""

    role: Literal["user", "system", "developer"]
    content: (
        str
        | Annotated[
            list[ResponseInputText | ResponseInputImage | ResponseInputFile | ResponseInputAudio],
            Count(least=1),
        ]
    )
    type: MessageType = None


@accepts_more
@attrs.frozen
class ResponseOutputMessage:
    """An assistant message of an earlier turn."""

    role: Literal["assistant"]
    content: str | Annotated[list[ResponseOutputText | ResponseRefusalPart], Count(least=1)]
    type: MessageType = None


@accepts_more
@attrs.frozen
class ResponseFunctionCallItem:
    """A function call the model made in an earlier turn."""

    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str


@accepts_more
@attrs.frozen
class ResponseFunctionCallOutput:
    """The output of a function call, answering `call_id`."""

    type: Literal["function_call_output"]
    call_id: str
    output: str | list[ResponseInputText]


ResponseInputItem = (
    ResponseInputMessage
    | ResponseOutputMessage
    | ResponseFunctionCallItem
    | ResponseFunctionCallOutput
)


# -- tools and output controls -------------------------------------------------------------


@accepts_more
@attrs.frozen
class ResponseFunctionTool:
    """A function the model may call (the only kind of tool: the gateway runs none)."""

    type: Literal["function"]
    name: Annotated[str, Pattern("^[A-Za-z0-9_-]{1,64}$", "1-64 letters, digits, '_' or '-'")]
    description: str | None = None
    parameters: dict[str, Any] | None = None


@accepts_more
@attrs.frozen
class ResponseNamedFunctionChoice:
    """Call this function (one of `tools`: `invalid_tool_choice` otherwise)."""

    type: Literal["function"]
    name: str


@accepts_more
@attrs.frozen
class ResponsePlainTextFormat:
    type: Annotated[str, Choices(tuple(f for f in TEXT_FORMATS if f != "json_schema"))]


@accepts_more
@attrs.frozen
class ResponseJsonSchemaTextFormat:
    type: Literal["json_schema"]
    name: Annotated[str, Length(least=1)]
    schema: dict[str, Any]


@accepts_more
@attrs.frozen
class ResponseTextOptions:
    format: ResponsePlainTextFormat | ResponseJsonSchemaTextFormat | None = None
    verbosity: Annotated[str, Choices(VERBOSITIES)] | None = None


@accepts_more
@attrs.frozen
class ResponseReasoningOptions:
    effort: Annotated[str, Choices(REASONING_EFFORTS)] | None = None


NotSupported = Annotated[Literal[False] | None, Doc("not supported: refused when set")]


@attrs.frozen(kw_only=True)
class CreateResponse:
    """A request of OpenAI's Responses API, answered by any chat vendor. A null is the
    same as leaving a field out; an unknown field is refused, and so are the API's
    features the gateway does not have (set to anything but null or false)."""

    model: Model
    input: Annotated[
        str | Annotated[list[ResponseInputItem], Count(least=1)],
        Doc("a text, or input items (at least one)"),
    ]
    instructions: str | None = None
    tools: list[ResponseFunctionTool] | None = None
    tool_choice: Literal["auto", "none", "required"] | ResponseNamedFunctionChoice | None = None
    text: ResponseTextOptions | None = None
    max_output_tokens: Annotated[int, Range(least=1)] | None = None
    temperature: Annotated[float, Range(*NUMBER_BOUNDS["temperature"])] | None = None
    top_p: Annotated[float, Range(*NUMBER_BOUNDS["top_p"])] | None = None
    reasoning: ResponseReasoningOptions | None = None
    metadata: Metadata | None = None
    store: bool | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    max_tool_calls: int | None = None
    previous_response_id: str | None = None
    parallel_tool_calls: bool | None = None
    user: str | None = None
    safety_identifier: Annotated[str, Length(most=MAX_SAFETY_IDENTIFIER)] | None = None
    service_tier: Annotated[str, Choices(SERVICE_TIERS)] | None = None
    truncation: Literal["auto", "disabled"] | None = None
    include: list[Annotated[str, Choices(INCLUDABLE)]] | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: Annotated[str, Choices(CACHE_RETENTIONS)] | None = None
    top_logprobs: Annotated[int, Range(least=0, most=MAX_TOP_LOGPROBS)] | None = None
    routing_mode: RoutingMode | None = None
    provider: forced_provider("chat") = None  # type: ignore[valid-type]
    service: ServiceRequest | None = None
    background: Annotated[bool, Doc("run after the answer (needs `store`)")] | None = None
    conversation: NotSupported = None
    prompt: NotSupported = None
    context_management: NotSupported = None
    moderation: NotSupported = None
    image: NotSupported = None
    access_programs: NotSupported = None
    background_options: NotSupported = None
    prompt_cache_options: NotSupported = None


@attrs.frozen
class InputItemsQuery:
    """A page of the input items: `after`/`before` an item id, newest first by default."""

    limit: Annotated[int, Range(least=1, most=100)] = 20
    order: Literal["asc", "desc"] = "desc"
    after: str | None = None
    before: str | None = None


@attrs.frozen
class RetrieveQuery:
    """`stream=true` replays a streamed background response's events after
    `starting_after` (a `sequence_number`), then follows it live."""

    stream: Annotated[bool, Doc("the events of a streamed background response")] = False
    starting_after: (
        Annotated[int, Range(least=-1), Doc("the events after this `sequence_number`")] | None
    ) = None
    include_obfuscation: Annotated[bool, Doc("taken; no padding is added")] | None = None


# -- answers -------------------------------------------------------------------------------


class ResponseError(TypedDict):
    code: str
    message: str


class IncompleteDetails(TypedDict):
    reason: Annotated[str, Doc("`max_output_tokens` or `content_filter`")]


class InputTokensDetails(TypedDict):
    cached_tokens: int


class OutputTokensDetails(TypedDict):
    reasoning_tokens: int


class ResponseUsage(TypedDict):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class ResponseObject(TypedDict):
    """A response: its output items (a `message`, a `function_call` per tool call), its
    status (`completed`, or `incomplete` with the reason; `in_progress` while streamed),
    the fields the request set, repeated, and the gateway's `service` and `_gateway`."""

    id: str
    object: Literal["response"]
    created_at: int
    status: Literal["completed", "incomplete", "failed", "in_progress", "queued", "cancelled"]
    background: bool
    error: ResponseError | None
    incomplete_details: IncompleteDetails | None
    model: str
    output: list[Mapping[str, Any]]
    usage: ResponseUsage | None
    previous_response_id: str | None
    instructions: NotRequired[str | None]
    metadata: NotRequired[dict[str, str]]
    tools: NotRequired[list[dict[str, Any]]]
    service: NotRequired[dict[str, Any]]
    _gateway: NotRequired[dict[str, Any]]


class ResponseEvent(TypedDict):
    """One streamed event (`event: <type>` then `data: <event>`): `response.created`,
    the output's deltas, `response.completed` with the whole response."""

    type: str
    sequence_number: int


class InputItemList(TypedDict):
    """A page of a stored response's input items."""

    object: Literal["list"]
    data: list[dict[str, Any]]
    first_id: str | None
    last_id: str | None
    has_more: bool


class DeletedResponse(TypedDict):
    id: str
    object: Literal["response"]
    deleted: Literal[True]
