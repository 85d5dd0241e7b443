"""Adapter for the Anthropic Messages API (`POST /v1/messages`, version 2023-06-01).

The gateway's canonical request has the chat-completions shape; Anthropic differs in ways
that matter on the wire, and each is handled by one pure function below:

- the system prompt is a top-level `system` field, not a message: every system message
  (wherever it stands) is merged into it, in order;
- messages hold typed content blocks, roles must alternate user/assistant, and tool
  results travel as `tool_result` blocks inside a *user* message: consecutive messages
  that land on the same role are merged into one;
- `max_tokens` is required: the endpoint's `default_max_tokens` setting (else 4096) fills
  it when the client gave none;
- `temperature` ranges 0-1, not 0-2: values above 1 are *clamped* to 1 rather than
  scaled, so that the common values (0, 0.2, 0.7, the default 1.0) keep their meaning;
  only the rarely used 1-2 range loses resolution;
- `presence_penalty`, `frequency_penalty`, `seed` and `response_format` have no
  Anthropic counterpart and are dropped.

Answers (JSON, or a stream of named SSE events read by `AnthropicStreamTranslator`) come
back as canonical objects, and error bodies (`{"type": "error", "error": {type, message}}`)
as the `providers.errors` hierarchy.
"""

from __future__ import annotations

import base64
import enum
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote_to_bytes

from providers.errors import (
    AuthenticationFailed,
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
from providers.http import HttpProvider, read_json
from providers.openai import retry_after_seconds
from providers.types import (
    JSON,
    ChatChunk,
    ChatRequest,
    ChatResult,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from providers.upstream import UpstreamStream

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
MESSAGES_PATH = "/v1/messages"

# -- request out ---------------------------------------------------------------------------


def messages_payload(request: ChatRequest, *, stream: bool, default_max_tokens: int) -> JSON:
    """The JSON body of a Messages API call for `request`."""
    payload: JSON = {
        "model": request.model,
        "max_tokens": request.max_tokens or default_max_tokens,
        "messages": anthropic_messages(request.messages),
    }
    system = system_prompt(request.messages)
    if system:
        payload["system"] = system
    payload.update(_sampling(request))
    payload.update(_tooling(request))
    if request.user:
        payload["metadata"] = {"user_id": request.user}
    if stream:
        payload["stream"] = True
    return payload


def system_prompt(messages: Iterable[Mapping[str, Any]]) -> str:
    """Every system message's text, in order, separated by blank lines."""
    texts = [_plain_text(m.get("content")) for m in messages if m.get("role") == "system"]
    return "\n\n".join(text for text in texts if text)


def anthropic_messages(messages: Iterable[Mapping[str, Any]]) -> list[JSON]:
    """The non-system messages as Anthropic turns, same-role neighbours merged."""
    turns: list[JSON] = []
    for message in messages:
        if message.get("role") == "system":
            continue
        role, blocks = message_blocks(message)
        if not blocks:
            continue  # Anthropic rejects empty content; an empty turn carries nothing.
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def message_blocks(message: Mapping[str, Any]) -> tuple[str, list[JSON]]:
    """One chat-completions message as (Anthropic role, content blocks)."""
    role = message.get("role")
    if role == "tool":
        return "user", [_tool_result_block(message)]
    blocks = content_blocks(message.get("content"))
    if role == "assistant":
        blocks.extend(_tool_use_block(call) for call in message.get("tool_calls") or ())
        return "assistant", blocks
    return "user", blocks


def content_blocks(content: Any) -> list[JSON]:
    """A message's `content` (a string or a list of parts) as text and image blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[JSON] = []
    for part in content:
        kind = part.get("type")
        if kind == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url", "") if isinstance(image, Mapping) else str(image or "")
            blocks.append(image_block(url))
    return blocks


def image_block(url: str) -> JSON:
    """An image part: a `data:` URL travels inline as base64, any other URL by reference."""
    if not url.startswith("data:"):
        return {"type": "image", "source": {"type": "url", "url": url}}
    header, _, data = url[5:].partition(",")
    media_type, *params = header.split(";")
    if "base64" not in params:
        data = base64.b64encode(unquote_to_bytes(data)).decode("ascii")
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type or "image/png", "data": data},
    }


def _tool_use_block(call: Mapping[str, Any]) -> JSON:
    function = call.get("function") or {}
    return {
        "type": "tool_use",
        "id": call.get("id", ""),
        "name": function.get("name", ""),
        "input": _arguments_object(function.get("arguments")),
    }


def _arguments_object(arguments: Any) -> Any:
    """Tool arguments as an object: a JSON string is parsed; garbage becomes `{}`, since
    Anthropic requires `input` to be an object and the model's call already happened."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        parsed = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _tool_result_block(message: Mapping[str, Any]) -> JSON:
    content = message.get("content")
    block: JSON = {"type": "tool_result", "tool_use_id": message.get("tool_call_id", "")}
    if isinstance(content, str):
        block["content"] = content
    elif content:
        block["content"] = content_blocks(content)
    return block


def _plain_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content or ()
    return "\n".join(p.get("text", "") for p in parts if p.get("type") == "text")


def _sampling(request: ChatRequest) -> JSON:
    out: JSON = {}
    if request.temperature is not None:
        out["temperature"] = min(max(request.temperature, 0.0), 1.0)
    if request.top_p is not None:
        out["top_p"] = request.top_p
    if request.stop:
        stop = request.stop
        out["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    return out


def _tooling(request: ChatRequest) -> JSON:
    out: JSON = {}
    if request.tools:
        out["tools"] = [anthropic_tool(tool) for tool in request.tools]
    choice = anthropic_tool_choice(request.tool_choice)
    if choice is not None:
        out["tool_choice"] = choice
    return out


def anthropic_tool(tool: Mapping[str, Any]) -> JSON:
    """A chat-completions function tool as Anthropic's {name, description, input_schema}."""
    function = tool.get("function") or tool
    out: JSON = {
        "name": function.get("name", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if function.get("description"):
        out["description"] = function["description"]
    return out


def anthropic_tool_choice(choice: str | Mapping[str, Any] | None) -> JSON | None:
    """`auto`/`none`/`required`/{function: {name}} as Anthropic's auto/none/any/tool."""
    if choice is None:
        return None
    if isinstance(choice, str):
        kind = {"auto": "auto", "none": "none", "required": "any", "any": "any"}.get(choice)
        return {"type": kind} if kind else None
    name = (choice.get("function") or {}).get("name") or choice.get("name")
    return {"type": "tool", "name": name} if name else None


# -- answers in ----------------------------------------------------------------------------

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def finish_reason(stop_reason: str | None) -> str:
    """Anthropic's `stop_reason` as a chat-completions finish reason (unknown: `stop`)."""
    return _FINISH_REASONS.get(stop_reason or "", "stop")


def parse_usage(data: Mapping[str, Any] | None) -> Usage:
    if not data:
        return Usage()
    return Usage(int(data.get("input_tokens") or 0), int(data.get("output_tokens") or 0))


def parse_message(data: Mapping[str, Any]) -> ChatResult:
    """A Messages API JSON answer as a `ChatResult`: text blocks joined, tool_use as calls."""
    blocks = data.get("content") or ()
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    calls = tuple(
        ToolCall(id=b.get("id", ""), name=b.get("name", ""), arguments=json.dumps(b["input"]))
        for b in blocks
        if b.get("type") == "tool_use"
    )
    return ChatResult(
        id=data.get("id", ""),
        model=data.get("model", ""),
        content="".join(texts) if texts else None,
        finish_reason=finish_reason(data.get("stop_reason")),
        usage=parse_usage(data.get("usage")),
        tool_calls=calls,
    )


class Phase(enum.Enum):
    """Where a Messages stream stands."""

    AWAITING_START = "awaiting_start"
    STREAMING = "streaming"
    STOPPED = "stopped"


# Which event types each phase accepts; anything else in that phase is a protocol fault.
# Unknown event types are skipped in STREAMING: Anthropic may add new ones at any time.
_ACCEPTED: Mapping[Phase, frozenset[str] | None] = {
    Phase.AWAITING_START: frozenset({"message_start", "ping", "error"}),
    Phase.STREAMING: None,  # everything
    Phase.STOPPED: frozenset(),
}
_NEXT_PHASE: Mapping[tuple[Phase, str], Phase] = {
    (Phase.AWAITING_START, "message_start"): Phase.STREAMING,
    (Phase.STREAMING, "message_stop"): Phase.STOPPED,
}


class AnthropicStreamTranslator:
    """Turns decoded Messages stream events into canonical chunks, one event at a time.

    Pure and I/O-free: feed each event's JSON (`feed`), then call `finish` at the end of
    the transfer, which raises `StreamInterrupted` unless `message_stop` was seen. Tool
    calls are numbered by their order among tool_use blocks (0, 1, ...), not by content
    block index, since canonical deltas index tool calls.
    """

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model
        self.phase = Phase.AWAITING_START
        self._input_tokens = 0
        self._tool_ordinal: dict[int, int] = {}
        self._handlers: Mapping[str, Callable[[Mapping[str, Any]], list[ChatChunk]]] = {
            "message_start": self._message_start,
            "content_block_start": self._block_start,
            "content_block_delta": self._block_delta,
            "message_delta": self._message_delta,
            "error": self._error,
        }

    @property
    def done(self) -> bool:
        return self.phase is Phase.STOPPED

    def feed(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        """The chunks event `event` (its decoded `data`) yields; raises on an `error` event."""
        kind = str(event.get("type", ""))
        accepted = _ACCEPTED[self.phase]
        if accepted is not None and kind not in accepted:
            raise UpstreamHTTPError(
                self.provider,
                f"unexpected {kind or 'untyped'} event while {self.phase.value}",
                status=502,
            )
        self.phase = _NEXT_PHASE.get((self.phase, kind), self.phase)
        handler = self._handlers.get(kind)
        return handler(event) if handler else []

    def finish(self) -> None:
        """The transfer ended: anything short of `message_stop` is an interrupted stream."""
        if self.phase is not Phase.STOPPED:
            raise StreamInterrupted(self.provider, "the upstream stream ended before message_stop")

    def _message_start(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        usage = (event.get("message") or {}).get("usage") or {}
        self._input_tokens = int(usage.get("input_tokens") or 0)
        return []

    def _block_start(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        block = event.get("content_block") or {}
        if block.get("type") == "text" and block.get("text"):
            return [ChatChunk(content=block["text"])]
        if block.get("type") != "tool_use":
            return []
        ordinal = self._tool_ordinal.setdefault(int(event.get("index", 0)), len(self._tool_ordinal))
        delta = ToolCallDelta(index=ordinal, id=block.get("id"), name=block.get("name"))
        return [ChatChunk(tool_calls=(delta,))]

    def _block_delta(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        delta = event.get("delta") or {}
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            return [ChatChunk(content=delta["text"])]
        ordinal = self._tool_ordinal.get(int(event.get("index", 0)))
        if kind == "input_json_delta" and delta.get("partial_json") and ordinal is not None:
            piece = ToolCallDelta(index=ordinal, arguments=delta["partial_json"])
            return [ChatChunk(tool_calls=(piece,))]
        return []  # thinking, signature and citation deltas have no canonical form

    def _message_delta(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        stop_reason = (event.get("delta") or {}).get("stop_reason")
        usage = event.get("usage") or {}
        # message_delta usage is cumulative; input tokens appear there only sometimes.
        prompt = int(usage.get("input_tokens") or self._input_tokens)
        counted = Usage(prompt, int(usage.get("output_tokens") or 0)) if usage else None
        finish = finish_reason(stop_reason) if stop_reason else None
        if finish is None and counted is None:
            return []
        return [ChatChunk(finish_reason=finish, usage=counted)]

    def _error(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        error = event.get("error") or {}
        kind = str(error.get("type") or "api_error")
        raise map_error_object(self.provider, _STATUS_OF_TYPE.get(kind, 500), error, {}, self.model)


# -- errors --------------------------------------------------------------------------------

# The HTTP status Anthropic documents for each error type; used for stream `error` events,
# which arrive after a 200 and so carry only the type.
_STATUS_OF_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_TOO_LONG = re.compile(r"prompt is too long|exceed context limit", re.IGNORECASE)
_TOKEN_COUNTS = re.compile(r"(\d+) tokens > (\d+) maximum|(\d+) \+ \d+ > (\d+)")


def map_anthropic_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str], model: str
) -> ProviderError:
    """An Anthropic error answer (`{"type": "error", "error": {type, message}}`) mapped."""
    parsed = read_json(body)
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return map_error_object(
        provider, status, error if isinstance(error, dict) else {}, headers, model
    )


def map_error_object(
    provider: str, status: int, error: Mapping[str, Any], headers: Mapping[str, str], model: str
) -> ProviderError:
    """The `error` object of an answer with HTTP `status`, as our hierarchy.

    413 `request_too_large` is a byte limit (32 MB) enforced before any tokenising, so it is
    an invalid request rather than a context-length error with token counts we lack.
    """
    kind = str(error.get("type") or "")
    message = str(error.get("message") or f"upstream answered HTTP {status}")
    if status in (401, 403):
        return AuthenticationFailed(provider, message)
    if status == 404:
        return ModelNotFound(provider, message, model=model)
    if status == 400 and _TOO_LONG.search(message):
        return _context_length(provider, message, model)
    if status in (429, 529):
        return ModelOverloaded(
            provider, message, model=model, retry_after=retry_after_seconds(headers)
        )
    if status == 503:
        return UpstreamUnavailable(provider, message, retry_after=retry_after_seconds(headers))
    if status == 504:
        return UpstreamTimeout(provider, message, timeout_ms=0)
    if status in (400, 413, 422):
        return InvalidUpstreamRequest(provider, message)
    return UpstreamHTTPError(provider, message, status=status, vendor_type=kind or None)


def _context_length(provider: str, message: str, model: str) -> ContextLengthExceeded:
    found = _TOKEN_COUNTS.search(message)
    requested = maximum = None
    if found:
        requested = int(found.group(1) or found.group(3))
        maximum = int(found.group(2) or found.group(4))
    return ContextLengthExceeded(
        provider, message, model=model, max_tokens=maximum, requested_tokens=requested
    )


# -- the adapter ---------------------------------------------------------------------------


class AnthropicProvider(HttpProvider):
    """Chat (whole and streamed) and model listing over the Anthropic Messages API.

    `endpoint.base_url` is the vendor root (`https://api.anthropic.com`); the optional
    setting `default_max_tokens` fills Anthropic's required `max_tokens`.
    """

    def auth_headers(self) -> dict[str, str]:
        return {"x-api-key": self.endpoint.api_key, "anthropic-version": ANTHROPIC_VERSION}

    def map_error(
        self, status: int, body: bytes, headers: Mapping[str, str], model: str
    ) -> ProviderError:
        return map_anthropic_error(self.provider_id, status, body, headers, model)

    @property
    def default_max_tokens(self) -> int:
        return int(self.endpoint.settings.get("default_max_tokens") or DEFAULT_MAX_TOKENS)

    def payload(self, request: ChatRequest, *, stream: bool) -> JSON:
        return messages_payload(request, stream=stream, default_max_tokens=self.default_max_tokens)

    async def chat(self, request: ChatRequest) -> ChatResult:
        """A whole answer; cancellation abandons the upstream request."""
        data = await self.post_json(
            MESSAGES_PATH, self.payload(request, stream=False), model=request.model
        )
        return parse_message(data)

    @asynccontextmanager
    async def chat_stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[ChatChunk]]:
        """The answer's chunks as they arrive; the upstream response closes on exit."""
        payload = self.payload(request, stream=True)
        async with self.open_stream(MESSAGES_PATH, payload, model=request.model) as resp:
            yield self._chunks(resp, request.model)

    async def _chunks(self, response: UpstreamStream, model: str) -> AsyncIterator[ChatChunk]:
        """The canonical chunks of a Messages stream.

        The transfer is always read to its end, even past `message_stop` or an `error`
        event (Anthropic ends the response right after either): leaving the byte iterators
        suspended would strand httpx's nested async generators until garbage collection.
        An error is raised once the transfer has ended.
        """
        translator = AnthropicStreamTranslator(self.provider_id, model)
        failure: ProviderError | None = None
        async for event in self.sse_events(response):
            data = read_json(event.data)
            if failure is not None or translator.done or not isinstance(data, dict):
                continue
            data.setdefault("type", event.event)
            try:
                chunks = translator.feed(data)
            except ProviderError as exc:
                failure = exc
                continue
            for chunk in chunks:
                yield chunk
        if failure is not None:
            raise failure
        translator.finish()

    async def list_models(self) -> list[str]:
        """Every model id, following Anthropic's `has_more`/`last_id` pagination."""
        ids: list[str] = []
        path = "/v1/models?limit=1000"
        for _ in range(50):  # a bound, in case an upstream keeps saying has_more
            data = await self.get_json(path)
            ids.extend(_model_ids(data.get("data") or ()))
            if not data.get("has_more") or not data.get("last_id"):
                break
            path = f"/v1/models?limit=1000&after_id={data['last_id']}"
        return ids


def _model_ids(items: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(item["id"]) for item in items if "id" in item]
