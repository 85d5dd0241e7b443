"""Reading an Anthropic Messages body (`POST /v1/messages`, `.../count_tokens`) (pure).

Every field is translated into the canonical chat request, or refused with a 400 naming
it. The chat request is built as a chat-completions body and read by chat's own parser
(so what chat learns reaches this door too); the checks here come first, in this API's
names (`messages[1].content[0].tool_use_id`).

Content blocks: `text`; `image` (base64 or URL source) and `document` (a base64 PDF, a
plain-text source or one of the gateway's files; `gateway.messages.documents`) from the
user; `tool_use` from the assistant, answered by the user's `tool_result` blocks (each
becomes a `tool` message, before the rest of that user turn). `thinking` and
`redacted_thinking` blocks carry a model's private state that no other model can read and
no adapter has a place for: they are accepted in the history and not sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from gateway.messages.documents import document_parts
from gateway.platform.errors import ApiError, invalid_request, invalid_tool_choice
from gateway.platform.params import optional_bool, required_string, whole_number
from gateway.upstream.options import MAX_STOP

REFUSED: Mapping[str, str] = {
    "container": "code-execution containers are not supported",
    "mcp_servers": "remote MCP servers are not supported",
    "context_management": "server-side context management is not supported",
    "inference_geo": "choosing where inference runs is not supported (see data residency)",
    "user_profile_id": "Anthropic user profiles are not supported",
    "workspace_id": "the key's workspace is used (X-Workspace-ID chooses another)",
}
# Hints that change nothing in the answer, taken and not acted on (docs: Choices).
HINTS = ("cache_control", "diagnostics")
KNOWN = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "system",
        "tools",
        "tool_choice",
        "stop_sequences",
        "temperature",
        "top_p",
        "top_k",
        "metadata",
        "thinking",
        "stream",
        "service_tier",
        "output_config",
        "speed",
        *REFUSED,
        *HINTS,
        # the gateway's own extensions, as on chat completions
        "service",
        "provider",
        "routing_mode",
    }
)
SKIPPED_BLOCKS = ("thinking", "redacted_thinking")
SERVICE_TIERS = ("auto", "standard_only")
# Thinking budgets as reasoning efforts (`reasoning_effort`), by the budget's size, and
# `output_config.effort` (its two levels above `high` are `high`: chat's highest).
EFFORTS = ((2_048, "low"), (8_192, "medium"))
ADAPTIVE_EFFORT = "high"  # Anthropic's default `output_config.effort`
OUTPUT_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


@attrs.frozen
class MessagesRequest:
    chat_body: dict[str, Any]
    stream: bool


def parse_messages_body(body: Any, *, counting: bool = False) -> MessagesRequest:
    """Validate a decoded body; `counting` (count_tokens) needs no `max_tokens`."""
    if not isinstance(body, dict):
        raise invalid_request("The request body must be a JSON object.")
    _check_fields(body, counting)
    model = required_string(body, "model")
    max_tokens = None if counting else _max_tokens(body.get("max_tokens"))
    messages = [*_system(body.get("system")), *_messages(body.get("messages"))]
    if not messages:  # every turn held only thinking blocks, which are not sent on
        raise ApiError(
            400,
            "nothing_to_answer",
            "'messages' holds nothing to answer: thinking blocks are not sent to a model.",
            param="messages",
        )
    chat: dict[str, Any] = {"model": model, "messages": messages}
    fields = {
        "max_tokens": max_tokens,
        "stream": optional_bool(body, "stream") or None,
        "stop": _stop_sequences(body.get("stop_sequences")),
        "temperature": _bounded(body, "temperature", 1.0),
        "top_p": _bounded(body, "top_p", 1.0),
        "top_k": _top_k(body.get("top_k")),
        "user": _user(body.get("metadata")),
        "reasoning_effort": _effort(body.get("output_config"))
        or _thinking(body.get("thinking"), max_tokens),
        "response_format": _output_format(body.get("output_config")),
        "service": body.get("service"),
        "provider": body.get("provider"),
        "routing_mode": body.get("routing_mode"),
    }
    chat.update({name: value for name, value in fields.items() if value is not None})
    tools = _tools(body.get("tools"))
    if tools:
        chat["tools"] = tools
        chat.update(_tool_choice(body.get("tool_choice"), tools))
    elif body.get("tool_choice") is not None:
        raise invalid_tool_choice("'tool_choice' needs 'tools'.", param="tool_choice")
    return MessagesRequest(chat, bool(chat.get("stream")))


def _check_fields(body: Mapping[str, Any], counting: bool) -> None:
    for name in body:
        if name not in KNOWN:
            raise invalid_request(f"{name}: Extra inputs are not permitted", param=name)
    for name, reason in REFUSED.items():
        if body.get(name) is not None:
            raise invalid_request(f"'{name}': {reason}.", param=name)
    if body.get("service_tier") not in (None, *SERVICE_TIERS):
        raise invalid_request(
            f"'service_tier' must be one of {', '.join(SERVICE_TIERS)}.",
            param="service_tier",
            value=body.get("service_tier"),
        )
    if body.get("speed") not in (None, "standard"):
        raise invalid_request(
            "'speed': only 'standard' is supported.", param="speed", value=body.get("speed")
        )
    if counting and body.get("stream"):
        raise invalid_request("'stream' is not a count_tokens field.", param="stream")


def _max_tokens(value: Any) -> int:
    if value is None:
        raise invalid_request("max_tokens: Field required", param="max_tokens")
    whole = whole_number(value)
    if whole is None or whole < 1:
        raise invalid_request(
            "max_tokens: Input should be an integer of at least 1", param="max_tokens", value=value
        )
    return whole


def _bounded(body: Mapping[str, Any], name: str, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= high:
        raise invalid_request(
            f"{name}: Input should be a number from 0 to {high:g}", param=name, value=value
        )
    return float(value)


def _top_k(value: Any) -> int | None:
    if value is None:
        return None
    whole = whole_number(value)
    if whole is None or whole < 1:
        raise invalid_request("top_k: Input should be an integer of at least 1", param="top_k")
    return whole


def _stop_sequences(value: Any) -> list[str] | None:
    if value is None or value == []:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise invalid_request(
            "stop_sequences: Input should be a list of strings", param="stop_sequences"
        )
    if len(value) > MAX_STOP:
        raise invalid_request(
            f"stop_sequences: at most {MAX_STOP} are supported here.", param="stop_sequences"
        )
    return value


def _user(metadata: Any) -> str | None:
    if metadata is None:
        return None
    user = metadata.get("user_id") if isinstance(metadata, dict) else None
    if (
        not isinstance(metadata, dict)
        or set(metadata) - {"user_id"}
        or not isinstance(user, str | None)
    ):
        raise invalid_request(
            "metadata: only 'user_id' (a string) is accepted", param="metadata", value=metadata
        )
    return user


def _thinking(value: Any, max_tokens: int | None) -> str | None:
    """`thinking` as a reasoning effort: none when disabled, else by its budget; adaptive
    (the model decides how much to think) at Anthropic's default effort, `high`
    (`output_config.effort`, when given, is read before this)."""
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "disabled":
        return None
    if kind == "adaptive" and isinstance(value, dict):
        _check_display(value.get("display"))
        return ADAPTIVE_EFFORT
    budget = whole_number(value.get("budget_tokens")) if isinstance(value, dict) else None
    if kind != "enabled" or budget is None or budget < 1:
        raise invalid_request(
            "thinking: must be {type: 'adaptive'}, {type: 'enabled', budget_tokens} or "
            "{type: 'disabled'}",
            param="thinking",
            value=value,
        )
    if max_tokens is not None and budget >= max_tokens:
        raise ApiError(
            400,
            "invalid_thinking_budget",
            "thinking.budget_tokens: must be less than max_tokens",
            param="thinking.budget_tokens",
        )
    return next((effort for limit, effort in EFFORTS if budget < limit), "high")


def _check_display(display: Any) -> None:
    """`display`: how thinking is shown. The answer carries no thinking block on this
    door (`reasoning` is not relayed as one), so both values are honoured."""
    if display not in (None, "summarized", "omitted"):
        raise invalid_request(
            "thinking.display: must be 'summarized' or 'omitted'",
            param="thinking.display",
            value=display,
        )


def _output_config(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or set(value) - {"effort", "format"}:
        raise invalid_request(
            "output_config: only 'effort' and 'format' are accepted",
            param="output_config",
            value=value,
        )
    return value


def _effort(value: Any) -> str | None:
    effort = _output_config(value).get("effort")
    if effort is not None and (not isinstance(effort, str) or effort not in OUTPUT_EFFORTS):
        raise invalid_request(
            f"output_config.effort: must be one of {', '.join(OUTPUT_EFFORTS)}",
            param="output_config.effort",
            value=effort,
        )
    return OUTPUT_EFFORTS.get(effort) if effort is not None else None


def _output_format(value: Any) -> dict[str, Any] | None:
    """`output_config.format` (a JSON schema) as chat's `response_format`."""
    form = _output_config(value).get("format")
    if form is None:
        return None
    schema = form.get("schema") if isinstance(form, dict) else None
    if (
        not isinstance(form, dict)
        or form.get("type") != "json_schema"
        or not isinstance(schema, dict)
    ):
        raise invalid_request(
            "output_config.format: must be {type: 'json_schema', schema}",
            param="output_config.format",
            value=form,
        )
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}


# -- system and messages -------------------------------------------------------------------


def _system(value: Any) -> list[dict[str, Any]]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [{"role": "system", "content": value}]
    if not isinstance(value, list):
        raise invalid_request(
            "system: Input should be a string or a list of text blocks", param="system"
        )
    texts = []
    for i, block in enumerate(value):
        if (
            not isinstance(block, dict)
            or block.get("type") != "text"
            or not isinstance(block.get("text"), str)
        ):
            raise invalid_request(f"system.{i}: Input should be a text block", param=f"system.{i}")
        texts.append(block["text"])
    return [{"role": "system", "content": "\n\n".join(texts)}]


def _messages(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise invalid_request("messages: at least one message is required", param="messages")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(value):
        where = f"messages.{i}"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            raise invalid_request(
                f"{where}.role: Input should be 'user' or 'assistant'", param=f"{where}.role"
            )
        assert isinstance(message, dict)
        blocks = _blocks(message.get("content"), f"{where}.content")
        out.extend(
            _user_turn(blocks, where) if role == "user" else [_assistant_turn(blocks, where)]
        )
    return out


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise invalid_request(f"{where}: Input should be a string or a list of blocks", param=where)
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            raise invalid_request(f"{where}.{i}: Input should be an object", param=f"{where}.{i}")
    return content


def _user_turn(blocks: Sequence[Mapping[str, Any]], where: str) -> list[dict[str, Any]]:
    """Tool results first (each a `tool` message, as chat expects them right after the
    calls), then the rest of the turn as one user message."""
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for i, block in enumerate(blocks):
        kind, at = block.get("type"), f"{where}.content.{i}"
        if kind == "tool_result":
            results.append(_tool_result(block, at))
        elif kind == "text":
            parts.append({"type": "text", "text": _text(block, at)})
        elif kind == "image":
            parts.append(_image(block, at))
        elif kind == "document":
            parts.extend(document_parts(block, at))
        elif kind not in SKIPPED_BLOCKS:
            raise _unsupported_block(kind, at, ("text", "image", "document", "tool_result"))
    if not parts:
        return results
    if all(part["type"] == "text" for part in parts):
        return [*results, {"role": "user", "content": "".join(p["text"] for p in parts)}]
    return [*results, {"role": "user", "content": parts}]


def _assistant_turn(blocks: Sequence[Mapping[str, Any]], where: str) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for i, block in enumerate(blocks):
        kind, at = block.get("type"), f"{where}.content.{i}"
        if kind == "text":
            texts.append(_text(block, at))
        elif kind == "tool_use":
            calls.append(_tool_use(block, at))
        elif kind not in SKIPPED_BLOCKS:
            raise _unsupported_block(kind, at, ("text", "tool_use"))
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    elif message["content"] is None:
        message["content"] = ""
    return message


def _unsupported_block(kind: Any, where: str, allowed: Sequence[str]) -> Exception:
    return invalid_request(
        f"{where}.type: {kind!r} is not supported here (use {', '.join(allowed)})",
        param=f"{where}.type",
        value=kind,
    )


def _text(block: Mapping[str, Any], where: str) -> str:
    if not isinstance(block.get("text"), str):
        raise invalid_request(f"{where}.text: Input should be a string", param=f"{where}.text")
    return str(block["text"])


def _image(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "base64" and isinstance(source, dict):
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif kind == "url" and isinstance(source, dict) and isinstance(source.get("url"), str):
        url = source["url"]
    else:
        raise invalid_request(
            f"{where}.source: Input should be a base64 or url image source", param=f"{where}.source"
        )
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_use(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
        raise invalid_request(f"{where}: a tool_use block needs 'id' and 'name'", param=where)
    arguments = json.dumps(block.get("input") or {}, separators=(",", ":"))
    function = {"name": block["name"], "arguments": arguments}
    return {"id": block["id"], "type": "function", "function": function}


def _tool_result(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(block.get("tool_use_id"), str):
        raise invalid_request(f"{where}.tool_use_id: Field required", param=f"{where}.tool_use_id")
    content = block.get("content")
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text":
                raise _unsupported_block(
                    part.get("type") if isinstance(part, dict) else None,
                    f"{where}.content.{i}",
                    ("text",),
                )
            texts.append(_text(part, f"{where}.content.{i}"))
        content = "".join(texts)
    if not isinstance(content, str | None):
        raise invalid_request(
            f"{where}.content: Input should be a string or text blocks", param=f"{where}.content"
        )
    text = content or ""
    if block.get("is_error"):
        text = f"Error: {text}"
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": text}


# -- tools ---------------------------------------------------------------------------------


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_request("tools: Input should be a list", param="tools")
    return [_tool(tool, f"tools.{i}") for i, tool in enumerate(value)]


def _tool(tool: Any, where: str) -> dict[str, Any]:
    kind = tool.get("type", "custom") if isinstance(tool, dict) else None
    if kind != "custom" or not isinstance(tool, dict):
        raise invalid_request(
            f"{where}.type: {kind!r} is not supported: only client tools (name, "
            "input_schema) are; the gateway runs no server tools.",
            param=f"{where}.type",
            value=kind,
        )
    if not isinstance(tool.get("name"), str):
        raise invalid_request(f"{where}.name: Field required", param=f"{where}.name")
    if not isinstance(tool.get("input_schema"), dict):
        raise invalid_request(
            f"{where}.input_schema: Field required", param=f"{where}.input_schema"
        )
    function = {"name": tool["name"], "parameters": tool["input_schema"]}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(value: Any, tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`tool_choice` (auto, any, tool, none) and its `disable_parallel_tool_use`."""
    if value is None:
        return {}
    kind = value.get("type") if isinstance(value, dict) else None
    choices: dict[Any, Any] = {"auto": "auto", "any": "required", "none": "none"}
    if kind == "tool" and isinstance(value, dict):
        name = value.get("name")
        if name not in {tool["function"]["name"] for tool in tools}:
            raise invalid_tool_choice(
                "tool_choice.name: names no tool of 'tools'", param="tool_choice.name", value=name
            )
        choice: Any = {"type": "function", "function": {"name": name}}
    elif kind in choices:
        choice = choices[kind]
    else:
        raise invalid_request(
            "tool_choice: must be {type: auto | any | tool | none}",
            param="tool_choice",
            value=value,
        )
    fields: dict[str, Any] = {"tool_choice": choice}
    if isinstance(value, dict) and value.get("disable_parallel_tool_use"):
        fields["parallel_tool_calls"] = False
    return fields
