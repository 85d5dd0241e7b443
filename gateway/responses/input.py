"""Reading a `POST /v1/responses` body (pure).

Every field of the API's create request is either translated into the canonical chat
request, repeated in the answer, or refused with a 400 naming it; none is dropped in
silence. The chat request is built as a chat-completions body and read by chat's own
parser, so the parameters chat learns (and its checks of them) reach this door too; the
checks here come first and speak in this API's names (`input[1].content`, `text.format`,
`max_output_tokens`).

`instructions` are the conversation's first (system) message; as in the API they are
not carried over from a previous response. The conversation is the previous response's
stored items (`history`), then this request's `input`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from gateway.platform.errors import ApiError, invalid_request, invalid_tool_choice
from gateway.platform.params import (
    optional_bool,
    optional_object,
    optional_positive_int,
    optional_string,
    required_string,
)
from gateway.responses.items import conversation

# Fields with no meaning here, refused when set (the reason goes in the message).
REFUSED: Mapping[str, str] = {
    "conversation": "the Conversations API is not supported; use previous_response_id",
    "prompt": "stored prompt templates are not supported",
    "context_management": "server-side compaction is not supported",
    "moderation": "moderation policies are not supported",
    "image": "image generation settings are not supported",
    "access_programs": "access programs are not supported",
    "background_options": "background options are not supported",
    "prompt_cache_options": "explicit prompt caching is not supported",
}
# Hints that change nothing in the answer, taken and not acted on (docs: Choices).
HINTS = ("max_tool_calls", "stream_options")
TRANSLATED = (
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "text",
    "max_output_tokens",
    "temperature",
    "top_p",
    "reasoning",
    "metadata",
    "store",
    "stream",
    "background",
    "previous_response_id",
    "parallel_tool_calls",
    "user",
    "safety_identifier",
    "service_tier",
    "truncation",
    "include",
    "prompt_cache_key",
    "prompt_cache_retention",
    "top_logprobs",
    # the gateway's own extensions, as on chat completions
    "service",
    "provider",
    "routing_mode",
)
KNOWN = frozenset((*REFUSED, *HINTS, *TRANSLATED))
LOGPROBS = "message.output_text.logprobs"
# reasoning.encrypted_content is vacuous: the gateway makes no reasoning items
INCLUDABLE = ("reasoning.encrypted_content", LOGPROBS)
MAX_TOP_LOGPROBS = 20
TEXT_FORMATS = ("text", "json_object", "json_schema")
METADATA_PAIRS, METADATA_KEY_CHARS, METADATA_VALUE_CHARS = 16, 64, 512


@attrs.frozen
class ResponsesRequest:
    """A valid request: the chat-completions body for the engine, this request's input
    items (stored, and listed by `input_items`) and what the response object repeats."""

    chat_body: dict[str, Any]
    input_items: tuple[dict[str, Any], ...]
    echo: dict[str, Any]
    store: bool
    stream: bool
    previous_response_id: str | None
    background: bool = False
    """Whether it runs in the background (`gateway.responses.background`)."""
    logprobs: bool = False
    """Whether the answer's text carries its tokens' log probabilities."""
    kept_on_truncation: int | None = None
    """None: the conversation is sent whole (`truncation: "disabled"`); else it may lose
    items from its start to fit the model's window, after its first messages this many
    (the instructions), which are never dropped."""


def previous_response_id(body: Any) -> str | None:
    """The previous response named, read before the rest (its items come first)."""
    if not isinstance(body, dict):
        raise invalid_request("The request body must be a JSON object.")
    return optional_string(body, "previous_response_id") or None


def parse_responses_body(body: Any, history: Sequence[Mapping[str, Any]]) -> ResponsesRequest:
    """Validate a decoded body; `history` is the previous response's conversation."""
    previous = previous_response_id(body)
    _check_fields(body)
    model = required_string(body, "model")
    if body.get("input") is None:
        raise invalid_request("'input' is required.", param="input")
    if body["input"] == []:
        raise invalid_request("'input' must be a text or at least one item.", param="input")
    items, messages = conversation(body["input"], history)
    instructions = optional_string(body, "instructions")
    tools = _tools(body.get("tools"))
    if instructions:
        messages.insert(0, {"role": "system", "content": instructions})
    if not messages:
        raise ApiError(400, "nothing_to_answer", "'input' holds nothing to answer.", param="input")
    chat: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": optional_bool(body, "stream"),
    }
    chat.update(_chat_fields(body, tools))
    logprobs = _logprobs(body, chat)
    return ResponsesRequest(
        chat_body=chat,
        input_items=tuple(items),
        echo=_echo(body, model, instructions, tools),
        store=body.get("store") is not False,
        stream=chat["stream"],
        previous_response_id=previous,
        background=_background(body),
        logprobs=logprobs,
        kept_on_truncation=(1 if instructions else 0) if _truncates(body) else None,
    )


def _check_fields(body: Mapping[str, Any]) -> None:
    for name, value in body.items():  # one pass over what the client sent
        if name not in KNOWN:
            raise invalid_request(f"Unrecognized request argument supplied: {name}.", param=name)
        if name in REFUSED and value not in (None, False):
            raise invalid_request(f"'{name}': {REFUSED[name]}.", param=name, value=value)
    # include_obfuscation pads deltas against side channels; no padding is added here
    optional_object(body, "stream_options")
    _truncates(body)
    _check_include(body.get("include"))


def _background(body: Mapping[str, Any]) -> bool:
    """`background: true` runs the response after its answer, which is read back from the
    store: it needs `store` (as the API says)."""
    background = optional_bool(body, "background")
    if background and body.get("store") is False:
        raise invalid_request(
            "'background': true needs 'store': true (a background response is read back "
            "from the store).",
            param="store",
            value=False,
        )
    return background


def _truncates(body: Mapping[str, Any]) -> bool:
    """Whether the conversation may be shortened to fit (`truncation: "auto"`)."""
    value = body.get("truncation")
    if value not in (None, "disabled", "auto"):
        raise invalid_request(
            "'truncation' must be 'auto' or 'disabled'.", param="truncation", value=value
        )
    return value == "auto"


def _logprobs(body: Mapping[str, Any], chat: dict[str, Any]) -> bool:
    """Log probabilities are asked by `include` (`message.output_text.logprobs`) or by
    `top_logprobs` above 0; they become chat's `logprobs` and `top_logprobs`, so a model
    that cannot give them is chat's 400 `unsupported_parameter`."""
    top = body.get("top_logprobs")
    if top is not None and (
        isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= MAX_TOP_LOGPROBS
    ):
        raise invalid_request(
            f"'top_logprobs' must be an integer from 0 to {MAX_TOP_LOGPROBS}.",
            param="top_logprobs",
            value=top,
        )
    asked = LOGPROBS in (body.get("include") or ()) or bool(top)
    if asked:
        chat["logprobs"] = True
        if top:
            chat["top_logprobs"] = top
    return asked


def _check_include(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        raise invalid_request("'include' must be an array.", param="include", value=value)
    for i, entry in enumerate(value):
        if entry not in INCLUDABLE:
            raise invalid_request(
                f"'include[{i}]' {entry!r} is not supported.", param=f"include[{i}]", value=entry
            )


# Fields chat takes as they are (and checks itself), by their name there.
COPIED: Mapping[str, str] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "prompt_cache_key": "prompt_cache_key",
    "prompt_cache_retention": "prompt_cache_retention",
    "parallel_tool_calls": "parallel_tool_calls",
    "service_tier": "service_tier",
    "service": "service",
    "provider": "provider",
    "routing_mode": "routing_mode",
}


def _chat_fields(body: Mapping[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The chat-completions fields this request sets (unset ones are left out), read
    from the fields the client sent (a handful) rather than from every field known."""
    fields = {COPIED[name]: value for name, value in body.items() if name in COPIED}
    text = body.get("text")
    checked = {
        "max_tokens": optional_positive_int(body, "max_output_tokens"),
        "user": optional_string(body, "user"),
        "safety_identifier": optional_string(body, "safety_identifier"),
        "verbosity": _verbosity(text),
        "metadata": _metadata(body.get("metadata")),
        "response_format": _response_format(text),
        "reasoning_effort": _reasoning_effort(body.get("reasoning")),
    }
    fields.update(checked)
    if tools:
        fields["tools"] = [_chat_tool(tool) for tool in tools]
        fields["tool_choice"] = _tool_choice(body.get("tool_choice"), tools)
    elif body.get("tool_choice") not in (None, "auto", "none"):
        raise invalid_tool_choice(
            "'tool_choice' needs 'tools'.", param="tool_choice", value=body.get("tool_choice")
        )
    return {name: value for name, value in fields.items() if value is not None}


# -- tools ---------------------------------------------------------------------------------


def _tools(value: Any) -> list[dict[str, Any]]:
    """Function tools, as the response object repeats them; any other type is a 400
    naming it (the gateway runs no tools of its own)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_request("'tools' must be an array.", param="tools", value=value)
    return [_tool(tool, f"tools[{i}]") for i, tool in enumerate(value)]


def _tool(tool: Any, where: str) -> dict[str, Any]:
    kind = tool.get("type") if isinstance(tool, dict) else None
    if kind != "function":
        raise invalid_request(
            f"'{where}.type' {kind!r} is not supported: only 'function' tools are; the "
            "gateway runs no built-in tools.",
            param=f"{where}.type",
            value=kind,
        )
    assert isinstance(tool, dict)
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise invalid_request(f"'{where}.name' must be a string.", param=f"{where}.name")
    parameters = tool.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise invalid_request(
            f"'{where}.parameters' must be a JSON-schema object.", param=f"{where}.parameters"
        )
    return {
        "type": "function",
        "name": name,
        "description": tool.get("description"),
        "parameters": parameters,
        "strict": tool.get("strict", True),
    }


def _chat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = {"name": tool["name"], "strict": tool["strict"]}
    if tool["description"] is not None:
        function["description"] = tool["description"]
    if tool["parameters"] is not None:
        function["parameters"] = tool["parameters"]
    return {"type": "function", "function": function}


def _tool_choice(value: Any, tools: Sequence[Mapping[str, Any]]) -> Any:
    if value is None or value in ("auto", "none", "required"):
        return value
    name = value.get("name") if isinstance(value, dict) else None
    if not isinstance(value, dict) or value.get("type") != "function" or not isinstance(name, str):
        raise invalid_request(
            "'tool_choice' must be 'auto', 'none', 'required' or {type: 'function', name}.",
            param="tool_choice",
            value=value,
        )
    if name not in {tool["name"] for tool in tools}:
        raise invalid_tool_choice(
            f"'tool_choice' names '{name}', which is not among 'tools'.",
            param="tool_choice",
            value=value,
        )
    return {"type": "function", "function": {"name": name}}


# -- text, reasoning, metadata -------------------------------------------------------------


def _response_format(text: Any) -> dict[str, Any] | None:
    """`text.format` as chat's `response_format`."""
    if text is None:
        return None
    if not isinstance(text, dict):
        raise invalid_request("'text' must be an object.", param="text", value=text)
    form = text.get("format")
    if form is None:
        return None
    kind = form.get("type") if isinstance(form, dict) else None
    if kind not in TEXT_FORMATS:
        raise invalid_request(
            f"'text.format.type' must be one of {', '.join(TEXT_FORMATS)}.",
            param="text.format.type",
            value=kind,
        )
    assert isinstance(form, dict)
    if kind != "json_schema":
        return None if kind == "text" else {"type": kind}
    return {"type": "json_schema", "json_schema": _json_schema(form)}


def _json_schema(form: Mapping[str, Any]) -> dict[str, Any]:
    name, schema = form.get("name"), form.get("schema")
    if not isinstance(name, str) or not name:
        raise invalid_request(
            "'text.format.name' is required for a json_schema format.", param="text.format.name"
        )
    if not isinstance(schema, dict):
        raise invalid_request(
            "'text.format.schema' must be a JSON-schema object.", param="text.format.schema"
        )
    out: dict[str, Any] = {"name": name, "schema": schema}
    for field in ("description", "strict"):
        if form.get(field) is not None:
            out[field] = form[field]
    return out


def _verbosity(text: Any) -> str | None:
    """`text.verbosity`, chat's `verbosity` (checked there)."""
    return text.get("verbosity") if isinstance(text, dict) else None


def _reasoning_effort(reasoning: Any) -> str | None:
    if reasoning is None:
        return None
    if not isinstance(reasoning, dict):
        raise invalid_request("'reasoning' must be an object.", param="reasoning", value=reasoning)
    effort = reasoning.get("effort")
    if effort is not None and not isinstance(effort, str):
        raise invalid_request(
            "'reasoning.effort' must be a string.", param="reasoning.effort", value=effort
        )
    return effort


def _metadata(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    problem = _metadata_problem(value)
    if problem is not None:
        raise invalid_request(f"'metadata' {problem}.", param="metadata", value=value)
    return dict(value)


def _metadata_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "must be an object of strings"
    if len(value) > METADATA_PAIRS:
        return f"holds at most {METADATA_PAIRS} pairs"
    for key, item in value.items():
        if len(key) > METADATA_KEY_CHARS:
            return f"keys are at most {METADATA_KEY_CHARS} characters"
        if not isinstance(item, str) or len(item) > METADATA_VALUE_CHARS:
            return f"values are strings of at most {METADATA_VALUE_CHARS} characters"
    return None


# -- what the answer repeats ---------------------------------------------------------------


def _echo(
    body: Mapping[str, Any], model: str, instructions: str | None, tools: list[dict[str, Any]]
) -> dict[str, Any]:
    reasoning = body.get("reasoning") or {}
    text = body.get("text") or {}
    return {
        "instructions": instructions,
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata") or {},
        "model": model,
        "parallel_tool_calls": body.get("parallel_tool_calls", True) is not False,
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "service_tier": body.get("service_tier") or "default",
        "store": body.get("store") is not False,
        "background": body.get("background") is True,
        "temperature": body.get("temperature"),
        "text": {
            "format": text.get("format") or {"type": "text"},
            "verbosity": text.get("verbosity") or "medium",
        },
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": tools,
        "top_logprobs": body.get("top_logprobs") or 0,
        "top_p": body.get("top_p"),
        "truncation": body.get("truncation") or "disabled",
        "user": body.get("user"),
        "safety_identifier": body.get("safety_identifier"),
        "prompt_cache_key": body.get("prompt_cache_key"),
    }
