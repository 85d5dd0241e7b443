"""A simulated Anthropic Messages request, read and checked as Anthropic checks it (the
checks clients hit), into the `Ask` the simulator plans its answer from. Pure: a broken
rule raises `Invalid` with Anthropic's wording, which `providers.sim.anthropic` answers as
its 400 `invalid_request_error`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from providers.sim import content

MESSAGE_FIELDS = frozenset(
    {
        "model", "max_tokens", "messages", "system", "metadata", "stop_sequences", "stream",
        "temperature", "top_p", "top_k", "tools", "tool_choice", "thinking", "output_config",
        "service_tier", "speed", "container", "context_management", "mcp_servers",
        "inference_geo", "cache_control", "diagnostics", "user_profile_id",
    }
)  # fmt: skip
"""The Messages API's body fields; any other is refused ("Extra inputs are not permitted")."""
EFFORTS = frozenset({"low", "medium", "high", "xhigh", "max"})
SERVICE_TIERS = frozenset({"auto", "standard_only"})
MIN_THINKING_BUDGET = 1024


@attrs.frozen
class Ask:
    """What a valid Messages request asks of the simulated model."""

    model: str
    max_tokens: int
    texts: tuple[str, ...]  # system, then each message, as plain text
    last_is_user_words: bool
    tools: tuple[Mapping[str, Any], ...]  # as {name, parameters} for `content`
    tool_choice: str | Mapping[str, Any] | None
    stop_sequences: tuple[str, ...]
    stream: bool
    tools_tokens: int = 0
    schema: Mapping[str, Any] | None = None  # output_config.format's JSON schema
    thinks: bool = False  # thinking enabled (a budget) or adaptive
    documents: tuple[str, ...] = ()  # each document block, as `content.received` notes

    @property
    def prompt(self) -> str:
        return "\n".join(self.texts)

    @property
    def input_tokens(self) -> int:
        return content.count_prompt_tokens(self.texts) + self.tools_tokens


class Invalid(Exception):
    """The request breaks a rule Anthropic enforces; the message is Anthropic's wording."""


def read_ask(body: Any) -> Ask:
    """Validate a Messages request body as Anthropic does (the checks clients hit)."""
    if not isinstance(body, dict):
        raise Invalid("request body must be a JSON object")
    for field in body:
        if field not in MESSAGE_FIELDS:
            raise Invalid(f"{field}: Extra inputs are not permitted")
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            raise Invalid(f"{field}: Field required")
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise Invalid("max_tokens: Input should be greater than or equal to 1")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise Invalid("messages: at least one message is required")
    if any(not isinstance(m, dict) or m.get("role") not in ("user", "assistant") for m in messages):
        raise Invalid("messages: roles must be 'user' or 'assistant'")
    tools = _checked_tools(body.get("tools"))
    if body.get("service_tier", "auto") not in SERVICE_TIERS:
        raise Invalid("service_tier: Input should be 'auto' or 'standard_only'")
    last = messages[-1]
    return Ask(
        model=str(body["model"]),
        max_tokens=max_tokens,
        texts=(*_system_texts(body.get("system")), *(_text(m.get("content")) for m in messages)),
        last_is_user_words=last.get("role") == "user" and not _has_tool_result(last),
        tools=tuple(_content_tool(tool) for tool in tools),
        tool_choice=_content_choice(body.get("tool_choice")),
        stop_sequences=tuple(body.get("stop_sequences") or ()),
        stream=bool(body.get("stream")),
        tools_tokens=content.count_tokens(json.dumps(tools)) if tools else 0,
        schema=_output_schema(body.get("output_config")),
        thinks=_thinking(body),
        documents=tuple(note for m in messages for note in _document_notes(m.get("content"))),
    )


def _output_schema(config: Any) -> Mapping[str, Any] | None:
    """`output_config`: its `effort` one of Anthropic's levels, its `format` a JSON schema."""
    if config is None:
        return None
    if not isinstance(config, dict) or config.get("effort", "high") not in EFFORTS:
        raise Invalid(
            "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"
        )
    fmt = config.get("format")
    if fmt is None:
        return None
    if (
        not isinstance(fmt, dict)
        or fmt.get("type") != "json_schema"
        or not isinstance(fmt.get("schema"), dict)
    ):
        raise Invalid("output_config.format: a json_schema format with its schema is required")
    return dict(fmt["schema"])


def _thinking(body: Mapping[str, Any]) -> bool:
    """Whether the request turns thinking on, checked as Anthropic checks it: a budget of
    at least 1,024 tokens below `max_tokens`, no temperature but 1, no forced tool."""
    thinking = body.get("thinking")
    if thinking is None:
        return False
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind not in ("enabled", "adaptive", "disabled"):
        raise Invalid("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'")
    if kind == "disabled":
        return False
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
            raise Invalid(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            )
        if budget >= body["max_tokens"]:
            raise Invalid("`max_tokens` must be greater than `thinking.budget_tokens`")
    if body.get("temperature") not in (None, 1):
        raise Invalid("`temperature` may only be set to 1 when thinking is enabled")
    choice = body.get("tool_choice") or {}
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        raise Invalid("Thinking may not be enabled when tool_choice forces tool use.")
    return True


def _checked_tools(tools: Any) -> list[Mapping[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise Invalid("tools: Input should be a valid list")
    for position, tool in enumerate(tools):
        for field in ("name", "input_schema"):
            if not isinstance(tool, dict) or field not in tool:
                raise Invalid(f"tools.{position}.{field}: Field required")
    return tools


def _system_texts(system: Any) -> list[str]:
    text = _text(system)
    return [text] if text else []


def _text(value: Any) -> str:
    """A content value (string or blocks) as plain text, as the model would read it."""
    if isinstance(value, str):
        return value
    parts: list[str] = []
    for block in value or ():
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_result":
            parts.append(_text(block.get("content")))
        elif kind == "tool_use":
            parts.append(json.dumps(block.get("input") or {}, separators=(",", ":")))
    return " ".join(parts)


DOCUMENT_SOURCES = {"base64": "application/pdf", "text": "text/plain"}
"""The document sources the simulator reads, with the one media type each takes."""


def _document_notes(value: Any) -> list[str]:
    """Each `document` block of a message, checked as Anthropic checks it (a base64 PDF
    or a plain-text source), as `document <title or media type>`."""
    notes: list[str] = []
    for block in value if isinstance(value, list) else ():
        if not isinstance(block, dict) or block.get("type") != "document":
            continue
        source: dict[str, Any] = block.get("source") or {}
        if not isinstance(source, dict):
            source = {}
        kind = source.get("type")
        if kind == "url" and isinstance(source.get("url"), str):
            notes.append(f"document {block.get('title') or source['url']}")
            continue
        if DOCUMENT_SOURCES.get(str(kind)) != source.get("media_type") or not isinstance(
            source.get("data"), str
        ):
            raise Invalid(
                "messages.content.document.source: a base64 source takes application/pdf "
                "and a text source text/plain, each with its data"
            )
        notes.append(f"document {block.get('title') or source['media_type']}")
    return notes


def _has_tool_result(message: Mapping[str, Any]) -> bool:
    blocks = message.get("content")
    return isinstance(blocks, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks
    )


def _content_tool(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"name": tool.get("name", ""), "parameters": tool.get("input_schema") or {}}


def _content_choice(choice: Any) -> str | Mapping[str, Any] | None:
    """Anthropic's tool_choice in the terms `content.wants_tool_call` understands."""
    if not isinstance(choice, dict):
        return None
    kind = choice.get("type")
    if kind == "tool":
        return {"name": choice.get("name")}
    return {"any": "required", "none": "none", "auto": "auto"}.get(str(kind))
