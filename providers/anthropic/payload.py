"""The Messages API request body, built from the canonical chat request (pure)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote_to_bytes

from providers import content_parts
from providers.chat_support import ANTHROPIC_MIN_BUDGET, THINKING_BUDGETS
from providers.content_parts import refuse_unsent_parts
from providers.types import (
    JSON,
    ChatRequest,
)

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
MESSAGES_PATH = "/v1/messages"


SERVICE_TIERS = {"auto": "auto", "default": "standard_only"}
SENT_PARTS = frozenset({"image_url", "file"})  # no audio


def messages_payload(
    request: ChatRequest, *, stream: bool, default_max_tokens: int, provider: str = "anthropic"
) -> JSON:
    """The JSON body of a Messages API call for `request`; an audio part (which the
    Messages API takes no place for) is refused naming it.

    What the planner let through is translated (`providers.chat_support` refuses the
    rest before any call): `stop` as `stop_sequences`, `reasoning_effort` as thinking,
    `parallel_tool_calls: false` as `disable_parallel_tool_use`, JSON output as
    `output_config.format`, the end-user id as `metadata.user_id`, `service_tier`
    default as `standard_only`.
    """
    refuse_unsent_parts(provider, request.messages, SENT_PARTS)
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
    payload.update(_thinking(request, default_max_tokens))
    output = _output_config(request)
    if output:
        payload["output_config"] = {**payload.get("output_config", {}), **output}
    user = request.safety_identifier or request.user
    if user:
        payload["metadata"] = {"user_id": user}
    if request.service_tier in SERVICE_TIERS:
        payload["service_tier"] = SERVICE_TIERS[request.service_tier]
    if stream:
        payload["stream"] = True
    return payload


def _thinking(request: ChatRequest, default_max_tokens: int) -> JSON:
    """`reasoning_effort` in the model's style: a thinking budget (older models; the
    answer's `max_tokens` is raised by the budget when the client set none, or the budget
    is kept below the client's), or adaptive thinking with an effort (current models)."""
    effort = request.reasoning_effort
    if effort is None:
        return {}
    if request.thinking_style == "budget":
        if effort == "none":
            return {"thinking": {"type": "disabled"}}
        budget = max(ANTHROPIC_MIN_BUDGET, THINKING_BUDGETS[effort])
        if request.max_tokens is None:
            return {
                "thinking": {"type": "enabled", "budget_tokens": budget},
                "max_tokens": default_max_tokens + budget,
            }
        budget = min(budget, request.max_tokens - 1)
        return {"thinking": {"type": "enabled", "budget_tokens": budget}}
    if effort == "none":
        return {"thinking": {"type": "disabled"}}
    return {"thinking": {"type": "adaptive"}, "output_config": {"effort": effort}}


def _output_config(request: ChatRequest) -> JSON:
    """JSON output as structured outputs: a `json_schema` format with its schema, and
    `json_object` as the schema of any object."""
    response_format = request.response_format or {}
    kind = response_format.get("type")
    if kind == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema") or {"type": "object"}
        return {"format": {"type": "json_schema", "schema": schema}}
    if kind == "json_object":
        return {"format": {"type": "json_schema", "schema": {"type": "object"}}}
    return {}


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
    """A message's `content` (a string or a list of parts) as text, image and document
    blocks (Anthropic reads no audio: routing sends audio only to models that do)."""
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
        elif kind == "file":
            blocks.append(document_block(content_parts.document(part)))
    return blocks


def document_block(doc: content_parts.Document) -> JSON:
    """A document as Anthropic's `document` block: a PDF as base64, a text file as a
    text source, an image as an image block; the filename is the block's title."""
    if doc.media_type.startswith("image/"):
        return image_block(doc.data_url)
    if doc.is_text:
        source: JSON = {
            "type": "text",
            "media_type": "text/plain",
            "data": content_parts.decoded_text(doc.data),
        }
    else:
        source = {"type": "base64", "media_type": doc.media_type, "data": doc.data}
    block: JSON = {"type": "document", "source": source}
    if doc.filename:
        block["title"] = doc.filename
    return block


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
    """Temperature (0-1 here: the planner refuses more), top_p and stop sequences."""
    out: JSON = {}
    if request.temperature is not None:
        out["temperature"] = request.temperature
    if request.top_p is not None:
        out["top_p"] = request.top_p
    if request.top_k is not None:
        out["top_k"] = request.top_k
    if request.stop:
        stop = request.stop
        out["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    return out


def _tooling(request: ChatRequest) -> JSON:
    out: JSON = {}
    if request.tools:
        out["tools"] = [anthropic_tool(tool) for tool in request.tools]
    choice = anthropic_tool_choice(request.tool_choice)
    if request.tools and request.parallel_tool_calls is False and choice != {"type": "none"}:
        choice = {**(choice or {"type": "auto"}), "disable_parallel_tool_use": True}
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
