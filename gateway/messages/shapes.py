"""The declared shapes of Anthropic's Messages API on the gateway (`POST /v1/messages`,
`.../count_tokens`): the bodies and the answers, from which the OpenAPI document is
written (`gateway.platform.shapes`).

The bodies are read by hand (`gateway.messages.input`, then chat's own parser on the
chat body they become); the bounds and choices below are those parsers' constants, and
the schemathesis run (tests/operator/test_fuzz.py) holds the two to each other in shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

import attrs

from gateway.messages.input import OUTPUT_EFFORTS, SERVICE_TIERS, SKIPPED_BLOCKS
from gateway.platform.shapes import Choices, Count, Doc, Pattern, Range, accepts_more
from gateway.upstream.options import (
    MAX_STOP,
    Model,
    RoutingMode,
    ServiceRequest,
    forced_provider,
)

# -- content blocks ------------------------------------------------------------------------


@accepts_more
@attrs.frozen
class AnthropicTextBlock:
    type: Literal["text"]
    text: str


@accepts_more
@attrs.frozen
class AnthropicSkippedBlock:
    """A model's private state (thinking): taken in the history and not sent on."""

    type: Annotated[str, Choices(SKIPPED_BLOCKS)]


@accepts_more
@attrs.frozen
class AnthropicBase64Source:
    type: Literal["base64"]
    media_type: str = ""
    data: str = ""


@accepts_more
@attrs.frozen
class AnthropicUrlSource:
    type: Literal["url"]
    url: str


@accepts_more
@attrs.frozen
class AnthropicImageBlock:
    type: Literal["image"]
    source: AnthropicBase64Source | AnthropicUrlSource


@accepts_more
@attrs.frozen
class AnthropicToolResultBlock:
    """A tool's result, answering the `tool_use` block `tool_use_id`."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[AnthropicTextBlock] | None = None
    is_error: bool | None = None


@accepts_more
@attrs.frozen
class AnthropicToolUseBlock:
    """A tool call the assistant made in an earlier turn."""

    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any] | None = None


AnthropicUserBlock = (
    AnthropicTextBlock | AnthropicImageBlock | AnthropicToolResultBlock | AnthropicSkippedBlock
)
AnthropicAssistantBlock = AnthropicTextBlock | AnthropicToolUseBlock | AnthropicSkippedBlock


@accepts_more
@attrs.frozen
class AnthropicUserTurn:
    role: Literal["user"]
    content: str | list[AnthropicUserBlock]


@accepts_more
@attrs.frozen
class AnthropicAssistantTurn:
    role: Literal["assistant"]
    content: str | list[AnthropicAssistantBlock]


# -- tools, thinking, output ---------------------------------------------------------------


@accepts_more
@attrs.frozen
class AnthropicClientTool:
    """A tool the model may call (`custom`, the default type)."""

    name: Annotated[str, Pattern("^[A-Za-z0-9_-]{1,64}$", "1-64 letters, digits, '_' or '-'")]
    input_schema: dict[str, Any]
    type: Literal["custom"] = "custom"
    description: str = ""


@accepts_more
@attrs.frozen
class AnthropicAnyToolChoice:
    type: Literal["auto", "any", "none"]
    disable_parallel_tool_use: bool = False


@accepts_more
@attrs.frozen
class AnthropicNamedToolChoice:
    """Call this tool (one of `tools`: `invalid_tool_choice` otherwise)."""

    type: Literal["tool"]
    name: str
    disable_parallel_tool_use: bool = False


@attrs.frozen
class MessagesMetadata:
    user_id: str | None = None


@accepts_more
@attrs.frozen
class AnthropicThinkingDisabled:
    type: Literal["disabled"]


@accepts_more
@attrs.frozen
class AnthropicThinkingEnabled:
    """Extended thinking, its budget below `max_tokens` (`invalid_thinking_budget`)."""

    type: Literal["enabled"]
    budget_tokens: Annotated[int, Range(least=1)]


@accepts_more
@attrs.frozen
class AnthropicJsonOutputFormat:
    type: Literal["json_schema"]
    schema: dict[str, Any]


@attrs.frozen
class AnthropicOutputConfig:
    effort: Annotated[str, Choices(tuple(OUTPUT_EFFORTS))] | None = None
    format: AnthropicJsonOutputFormat | None = None


NotSupported = Annotated[None, Doc("not supported: refused when set")]
Ignored = Annotated[Any, Doc("taken and not acted on")]


@attrs.frozen(kw_only=True)
class CreateMessage:
    """A request of Anthropic's Messages API, answered by any chat vendor. A null is the
    same as leaving a field out; an unknown field is refused, and so are the API's
    features the gateway does not have (set to anything but null)."""

    model: Model
    messages: Annotated[list[AnthropicUserTurn | AnthropicAssistantTurn], Count(least=1)]
    max_tokens: Annotated[int, Range(least=1)]
    system: str | list[AnthropicTextBlock] | None = None
    tools: list[AnthropicClientTool] | None = None
    tool_choice: AnthropicAnyToolChoice | AnthropicNamedToolChoice | None = None
    stop_sequences: Annotated[list[str], Count(most=MAX_STOP)] | None = None
    temperature: Annotated[float, Range(least=0.0, most=1.0)] | None = None
    top_p: Annotated[float, Range(least=0.0, most=1.0)] | None = None
    top_k: Annotated[int, Range(least=1)] | None = None
    metadata: MessagesMetadata | None = None
    thinking: AnthropicThinkingDisabled | AnthropicThinkingEnabled | None = None
    stream: bool | None = None
    service_tier: Annotated[str, Choices(SERVICE_TIERS)] | None = None
    output_config: AnthropicOutputConfig | None = None
    speed: Literal["standard"] | None = None
    cache_control: Ignored = None
    diagnostics: Ignored = None
    routing_mode: RoutingMode | None = None
    provider: forced_provider("chat") = None  # type: ignore[valid-type]
    service: ServiceRequest | None = None
    container: NotSupported = None
    mcp_servers: NotSupported = None
    context_management: NotSupported = None
    inference_geo: NotSupported = None
    user_profile_id: NotSupported = None
    workspace_id: NotSupported = None


@attrs.frozen(kw_only=True)
class CountTokens(CreateMessage):
    """A Messages request whose input tokens to count: `max_tokens` may be left out and
    is ignored, and it cannot stream."""

    max_tokens: Annotated[Any, Doc("ignored when counting")] = None
    stream: Literal[False] | None = None


# -- answers -------------------------------------------------------------------------------


class MessageUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int


class MessageObject(TypedDict):
    """The assistant's message: text and `tool_use` blocks, why it stopped, its usage,
    and the gateway's `service` and `_gateway`."""

    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    model: str
    content: list[Mapping[str, Any]]
    stop_reason: Literal["end_turn", "max_tokens", "tool_use", "refusal"]
    stop_sequence: str | None
    usage: MessageUsage


class MessageEvent(TypedDict):
    """One streamed event (`event: <type>` then `data: <event>`): `message_start`, the
    content blocks' starts, deltas and stops, `message_delta`, `message_stop`."""

    type: str


class TokenCount(TypedDict):
    input_tokens: int
