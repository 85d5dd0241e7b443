"""Cohere's chat API v2 (`POST /v2/chat`) translated to and from the canonical types (pure).

What differs from chat completions, and is translated here:

- requests: `top_p` is `p` (at most 0.99), `stop` is `stop_sequences`, `reasoning_effort`
  is `thinking`; no `user`; `tool_choice` knows
  only `REQUIRED` and `NONE` (absent is auto), so a named function becomes `REQUIRED` with
  the tools cut down to that one; every tool needs `parameters`; `response_format`
  `json_schema` is `{"type": "json_object", "json_schema": <schema>}`; a `developer`
  message is a `system` one;
- answers: `message.content` is a list of `text` (and `thinking`) items; a tool call may
  come with a `tool_plan` (the model's reasoning, not part of the answer); finish reasons
  are upper-case (`COMPLETE`, `STOP_SEQUENCE`, `MAX_TOKENS`, `TOOL_CALL`, `ERROR`,
  `TIMEOUT`); usage is `billed_units` (what is charged) beside `tokens`;
- streams: typed SSE events (`message-start`, `content-start`, `content-delta`,
  `content-end`, `tool-plan-delta`, `tool-call-start`, `tool-call-delta`, `tool-call-end`,
  `citation-start`, `citation-end`, `message-end`), the finish and usage on `message-end`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from providers.chat_support import THINKING_BUDGETS
from providers.content_parts import refuse_unsent_parts
from providers.errors import ProviderError, StreamInterrupted, UpstreamHTTPError, UpstreamTimeout
from providers.types import JSON, ChatChunk, ChatRequest, ChatResult, ToolCall, ToolCallDelta, Usage

_PASSED_FIELDS = ("temperature", "max_tokens", "seed", "presence_penalty", "frequency_penalty")
COHERE_MAX_P = 0.99
_FINISH_REASONS = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_calls",
}
_FAILED_FINISHES = frozenset({"ERROR", "TIMEOUT"})
_EMPTY_PARAMETERS: JSON = {"type": "object", "properties": {}}
_USER_PARTS = frozenset({"text", "image_url"})


# -- request out ---------------------------------------------------------------------------


def chat_payload(request: ChatRequest, *, stream: bool, provider: str = "cohere") -> JSON:
    """The JSON body of `/v2/chat` for `request`; a document or audio part (which
    Cohere's chat takes no place for) is refused naming it."""
    refuse_unsent_parts(provider, request.messages, _USER_PARTS)
    payload: JSON = {
        "model": request.model,
        "messages": [cohere_message(message) for message in request.messages],
        "stream": stream,
    }
    for name in _PASSED_FIELDS:
        value = getattr(request, name)
        if value is not None:
            payload[name] = value
    if request.top_p is not None:
        payload["p"] = min(request.top_p, COHERE_MAX_P)  # 1 (no cut) is Cohere's highest
    if request.top_k is not None:
        payload["k"] = request.top_k
    if request.stop is not None:
        payload["stop_sequences"] = list(request.stop)
    if request.reasoning_effort is not None:
        payload["thinking"] = cohere_thinking(request.reasoning_effort)
    payload.update(tool_fields(request.tools, request.tool_choice))
    response_format = cohere_response_format(request.response_format)
    if response_format is not None:
        payload["response_format"] = response_format
    return payload


def cohere_thinking(effort: str) -> JSON:
    """`reasoning_effort` as Cohere's `thinking` (reasoning models): off for `none`, else
    on with the effort's token budget."""
    if effort == "none":
        return {"type": "disabled"}
    return {"type": "enabled", "token_budget": THINKING_BUDGETS[effort]}


def cohere_message(message: Mapping[str, Any]) -> JSON:
    """A chat-completions message in Cohere's v2 shape."""
    role = message.get("role")
    content = message.get("content")
    if role in ("system", "developer"):
        return {"role": "system", "content": _text_content(content)}
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": str(message.get("tool_call_id") or ""),
            "content": _text_content(content),
        }
    if role == "assistant":
        return _assistant_message(message)
    return {"role": "user", "content": _user_content(content)}


def _assistant_message(message: Mapping[str, Any]) -> JSON:
    out: JSON = {"role": "assistant"}
    text = _text_content(message.get("content"))
    if text:
        out["content"] = text
    calls = message.get("tool_calls") or ()
    if calls:
        out["tool_calls"] = [
            {
                "id": str(call.get("id") or ""),
                "type": "function",
                "function": {
                    "name": call["function"]["name"],
                    "arguments": call["function"].get("arguments") or "{}",
                },
            }
            for call in calls
        ]
    return out


def _text_content(content: Any) -> str:
    """A content as one string: Cohere takes text parts too, but a string is simplest and
    the only shape every role accepts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        str(part.get("text") or "")
        for part in content
        if isinstance(part, Mapping) and part.get("type") == "text"
    )


def _user_content(content: Any) -> str | list[JSON]:
    """User content: a string, or the text and `image_url` parts (which Cohere's vision
    models take in the chat-completions shape)."""
    if content is None or isinstance(content, str):
        return content or ""
    return [
        dict(part)
        for part in content
        if isinstance(part, Mapping) and part.get("type") in _USER_PARTS
    ]


def cohere_tool(tool: Mapping[str, Any]) -> JSON:
    function = dict(tool.get("function") or {})
    function.setdefault("parameters", _EMPTY_PARAMETERS)
    return {"type": "function", "function": function}


def tool_fields(
    tools: Sequence[Mapping[str, Any]] | None, choice: str | Mapping[str, Any] | None
) -> JSON:
    """`tools` and `tool_choice` in Cohere's terms.

    Cohere has no way to name the function to call, so a named choice keeps only that
    function and requires a call: the model can then call nothing else.
    """
    if not tools:
        return {}
    chosen = list(tools)
    fields: JSON = {}
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name")
        chosen = [t for t in tools if (t.get("function") or {}).get("name") == name] or chosen
        fields["tool_choice"] = "REQUIRED"
    elif choice == "required":
        fields["tool_choice"] = "REQUIRED"
    elif choice == "none":
        fields["tool_choice"] = "NONE"
    fields["tools"] = [cohere_tool(tool) for tool in chosen]
    return fields


def cohere_response_format(value: Mapping[str, Any] | None) -> JSON | None:
    """JSON mode, with the schema when one is given; plain text needs no field."""
    if value is None or value.get("type") not in ("json_object", "json_schema"):
        return None
    out: JSON = {"type": "json_object"}
    schema = (value.get("json_schema") or {}).get("schema")
    if value.get("type") == "json_schema" and schema is not None:
        out["json_schema"] = schema
    return out


# -- answers in ----------------------------------------------------------------------------


def parse_usage(usage: Mapping[str, Any] | None) -> Usage:
    """The billed tokens (what Cohere charges), else the raw token counts."""
    usage = usage or {}
    figures = usage.get("billed_units") or usage.get("tokens") or {}
    return Usage(
        prompt_tokens=int(figures.get("input_tokens") or 0),
        completion_tokens=int(figures.get("output_tokens") or 0),
    )


def canonical_finish(provider: str, reason: Any, error: Any = None) -> str:
    """Cohere's finish reason in canonical terms; a failed generation is raised."""
    if reason == "TIMEOUT":
        raise UpstreamTimeout(provider, str(error or "the model timed out"), timeout_ms=0)
    if reason in _FAILED_FINISHES:
        raise UpstreamHTTPError(
            provider, str(error or "the model failed while generating"), status=502
        )
    return _FINISH_REASONS.get(str(reason), "stop")


def text_of(content: Any) -> str | None:
    """The answer's text: its `text` items joined (`thinking` is not part of it)."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    texts = [
        str(item.get("text") or "")
        for item in content
        if isinstance(item, Mapping) and item.get("type", "text") == "text"
    ]
    return "".join(texts) if texts else None


def parse_chat(data: Mapping[str, Any], model: str, provider: str = "cohere") -> ChatResult:
    """A whole `/v2/chat` answer; Cohere's answer names no model, so the caller's is used."""
    message = data.get("message") or {}
    calls = tuple(
        ToolCall(
            id=str(call.get("id") or ""),
            name=str((call.get("function") or {}).get("name") or ""),
            arguments=str((call.get("function") or {}).get("arguments") or ""),
        )
        for call in message.get("tool_calls") or ()
    )
    return ChatResult(
        id=str(data.get("id") or ""),
        model=model,
        content=text_of(message.get("content")),
        finish_reason=canonical_finish(provider, data.get("finish_reason")),
        usage=parse_usage(data.get("usage")),
        tool_calls=calls,
    )


def read_event(data: Mapping[str, Any], provider: str = "cohere") -> ChatChunk | None:
    """The canonical chunk for one decoded stream event; None when it carries nothing a
    client sees (starts and ends of blocks, the tool plan, citations)."""
    kind = data.get("type")
    message = (data.get("delta") or {}).get("message") or {}
    index = int(data.get("index") or 0)
    if kind in ("content-start", "content-delta"):
        text = (message.get("content") or {}).get("text")
        return ChatChunk(content=str(text)) if text else None
    if kind == "tool-call-start":
        call = message.get("tool_calls") or {}
        function = call.get("function") or {}
        piece = ToolCallDelta(
            index=index,
            id=str(call.get("id") or ""),
            name=str(function.get("name") or ""),
            arguments=str(function.get("arguments") or ""),
        )
        return ChatChunk(tool_calls=(piece,))
    if kind == "tool-call-delta":
        arguments = ((message.get("tool_calls") or {}).get("function") or {}).get("arguments")
        return (
            ChatChunk(tool_calls=(ToolCallDelta(index, arguments=str(arguments)),))
            if arguments
            else None
        )
    if kind == "message-end":
        return _end_chunk(data.get("delta") or {}, provider)
    return None


def _end_chunk(delta: Mapping[str, Any], provider: str) -> ChatChunk:
    try:
        finish = canonical_finish(provider, delta.get("finish_reason"), delta.get("error"))
    except ProviderError as exc:
        raise StreamInterrupted(provider, str(exc)) from exc
    usage = parse_usage(delta.get("usage")) if delta.get("usage") else None
    return ChatChunk(finish_reason=finish, usage=usage)


def parse_events(events: Sequence[Mapping[str, Any]], provider: str = "cohere") -> list[ChatChunk]:
    """A whole decoded stream as canonical chunks (for tests and replay)."""
    return [chunk for data in events if (chunk := read_event(data, provider)) is not None]
