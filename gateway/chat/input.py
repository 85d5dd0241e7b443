"""Reading a chat-completions request body into validated, typed parameters.

Every rule names the offending parameter and value in its 400, so a client sees exactly
what to fix. Legacy `functions`/`function_call` (and the `function` role in the history)
are converted to their `tools` equivalents here, once, so nothing downstream knows them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from gateway.chat.file_parts import check_audio_part, check_file_part
from gateway.chat.options_input import check_known_fields, parse_options, stream_flags
from gateway.platform.errors import invalid_request, invalid_tool_choice
from gateway.platform.params import (
    bounded_number,
    optional_bool,
    optional_int,
    optional_object,
    optional_positive_int,
    optional_string,
    required_string,
)
from gateway.upstream.options import (
    MAX_STOP,
    NUMBER_BOUNDS,
    ROUTING_MODES,
    ServiceOptions,
    parse_service,
)
from providers.types import ChatRequest

ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@attrs.frozen
class ChatParams:
    """A validated chat request as the client asked it (model not yet resolved)."""

    model: str
    request: ChatRequest
    stream: bool
    include_usage: bool
    provider: str | None
    routing_mode: str | None
    service: ServiceOptions
    used_legacy_functions: bool
    obfuscate: bool = False  # `stream_options.include_obfuscation`
    kept_on_truncation: int | None = None
    """Set by a front door whose client allows it (the Responses API's `truncation:
    "auto"`): the conversation may lose its oldest turns to fit the routed model, after
    its first messages this many (`gateway.chat.truncation`). None: sent whole."""


def parse_chat_body(body: Any) -> ChatParams:
    """Validate a decoded JSON body; raise a 400 `ApiError` on the first problem found.

    Only the fields the body names are read (most name three or four of some forty): an
    absent field keeps its default without a reader called for it. The checks run in one
    fixed order, whatever the body's own, so that the first problem reported is the same.
    """
    if not isinstance(body, dict):
        raise invalid_request("The request body must be a JSON object.", param=None)
    check_known_fields(body)
    model = required_string(body, "model")
    tools, tool_choice, legacy = (
        _tools_and_choice(body) if not body.keys().isdisjoint(TOOL_FIELDS) else NO_TOOLS
    )
    messages = _messages(body.get("messages"), legacy)
    include_usage, obfuscate = stream_flags(body.get("stream_options"))
    request = ChatRequest(
        model=model,
        messages=messages,
        tools=tools,
        tool_choice=tool_choice,
        **_named_scalars(body),
        **parse_options(body),
    )
    return ChatParams(
        model=model,
        request=request,
        stream=optional_bool(body, "stream"),
        include_usage=include_usage,
        provider=optional_string(body, "provider"),
        routing_mode=_routing_mode(body.get("routing_mode")),
        service=parse_service(body.get("service")) if "service" in body else NO_SERVICE,
        used_legacy_functions=legacy,
        obfuscate=obfuscate,
    )


def _named_scalars(body: Mapping[str, Any]) -> dict[str, Any]:
    """The `ChatRequest` fields of `SCALARS` the body names, validated in `SCALARS`' order
    (a null one is left out: its default is None)."""
    named = body.keys() & SCALARS.keys()
    if not named:
        return {}
    fields: dict[str, Any] = {}
    for name in sorted(named, key=SCALAR_ORDER.__getitem__):
        field, read = SCALARS[name]
        value = read(body, name)
        if value is not None:
            fields[field] = value
    return fields


# -- scalars -------------------------------------------------------------------------------


def _sampling(body: Mapping[str, Any], name: str) -> float | None:
    return bounded_number(body, name, *NUMBER_BOUNDS[name])


def _max_tokens(body: Mapping[str, Any], _name: str = "max_tokens") -> int | None:
    """`max_tokens` or its newer spelling `max_completion_tokens` (one bound: both given
    must agree)."""
    both = (body.get("max_tokens"), body.get("max_completion_tokens"))
    if None not in both and both[0] != both[1]:
        raise invalid_request(
            "'max_tokens' and 'max_completion_tokens' are one bound; send one of them.",
            param="max_completion_tokens",
            value=both[1],
        )
    name = "max_tokens" if body.get("max_tokens") is not None else "max_completion_tokens"
    value = optional_int(body, name)
    if value is not None and value < 1:
        raise invalid_request(f"'{name}' must be at least 1.", param=name, value=value)
    return value


def _stop(body: Mapping[str, Any], name: str = "stop") -> tuple[str, ...] | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if (
        isinstance(value, list)
        and len(value) <= MAX_STOP
        and all(isinstance(item, str) for item in value)
    ):
        return tuple(value)
    raise invalid_request(
        f"'stop' must be a string or an array of at most {MAX_STOP} strings.",
        param="stop",
        value=value,
    )


RESPONSE_FORMATS = ("text", "json_object", "json_schema")


def _response_format(
    body: Mapping[str, Any], _name: str = "response_format"
) -> dict[str, Any] | None:
    """`{type: text | json_object | json_schema}`; json_schema needs its `json_schema`
    object with a `name` (the upstreams refuse it otherwise, as a vendor error)."""
    value = optional_object(body, "response_format")
    if value is None:
        return None
    kind = value.get("type")
    if kind not in RESPONSE_FORMATS:
        raise invalid_request(
            f"'response_format.type' must be one of {', '.join(RESPONSE_FORMATS)}.",
            param="response_format.type",
            value=kind,
        )
    schema = value.get("json_schema")
    if kind == "json_schema" and not (
        isinstance(schema, dict) and isinstance(schema.get("name"), str) and schema["name"]
    ):
        raise invalid_request(
            "'response_format.json_schema' must be an object with a 'name' (and its 'schema').",
            param="response_format.json_schema",
            value=schema,
        )
    return value


def _routing_mode(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in ROUTING_MODES:
        raise invalid_request(
            f"'routing_mode' must be one of: {', '.join(sorted(ROUTING_MODES))}.",
            param="routing_mode",
            value=value,
        )
    return str(value)


Reader = Callable[[Mapping[str, Any], str], Any]
SCALARS: Mapping[str, tuple[str, Reader]] = {
    "temperature": ("temperature", _sampling),
    "max_tokens": ("max_tokens", _max_tokens),
    "max_completion_tokens": ("max_tokens", _max_tokens),  # one bound, two spellings
    "top_p": ("top_p", _sampling),
    "stop": ("stop", _stop),
    "presence_penalty": ("presence_penalty", _sampling),
    "frequency_penalty": ("frequency_penalty", _sampling),
    "user": ("user", optional_string),
    "response_format": ("response_format", _response_format),
    "seed": ("seed", optional_int),
    "top_k": ("top_k", optional_positive_int),
}
"""Body field -> (its `ChatRequest` field, its reader), in the order they are checked."""
SCALAR_ORDER = {name: i for i, name in enumerate(SCALARS)}
TOOL_FIELDS = frozenset({"tools", "tool_choice", "functions", "function_call"})
NO_TOOLS: tuple[None, None, bool] = (None, None, False)
NO_SERVICE = ServiceOptions()


# -- messages ------------------------------------------------------------------------------


def _messages(value: Any, legacy: bool) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list) or not value:
        raise invalid_request(
            "'messages' must be a non-empty array.", param="messages", value=value
        )
    if legacy or any(isinstance(m, dict) and m.get("role") == "function" for m in value):
        value = convert_legacy_history(value)
    return tuple(_message(message, f"messages[{i}]") for i, message in enumerate(value))


def _message(message: Any, where: str) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise invalid_request(f"'{where}' must be an object.", param=where, value=message)
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise invalid_request(
            f"'{where}.role' must be one of system, user, assistant, tool (or developer).",
            param=f"{where}.role",
            value=role,
        )
    if message.get("name") is not None and not isinstance(message["name"], str):
        raise invalid_request(
            f"'{where}.name' must be a string.", param=f"{where}.name", value=message["name"]
        )
    has_calls = role == "assistant" and bool(message.get("tool_calls"))
    _content(message.get("content"), f"{where}.content", optional=has_calls)
    if message.get("tool_calls") is not None:
        _tool_calls(message["tool_calls"], role, f"{where}.tool_calls")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise invalid_request(
            f"'{where}.tool_call_id' is required for a tool message.",
            param=f"{where}.tool_call_id",
            value=message.get("tool_call_id"),
        )
    return message


def _content(content: Any, where: str, *, optional: bool) -> None:
    if content is None:
        if optional:
            return
        raise invalid_request(f"'{where}' is required.", param=where)
    if isinstance(content, str):
        return
    if not isinstance(content, list) or not content:
        raise invalid_request(
            f"'{where}' must be a string or a non-empty array of parts.",
            param=where,
            value=content,
        )
    for i, part in enumerate(content):
        _content_part(part, f"{where}[{i}]")


def _content_part(part: Any, where: str) -> None:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text" and isinstance(part.get("text"), str):
        return
    if kind == "image_url":
        image = part.get("image_url")
        if isinstance(image, dict) and isinstance(image.get("url"), str):
            return
        raise invalid_request(
            f"'{where}.image_url.url' must be a string.",
            param=f"{where}.image_url.url",
            value=image,
        )
    if kind == "file":
        check_file_part(part, where)
        return
    if kind == "input_audio":
        check_audio_part(part, where)
        return
    raise invalid_request(
        f"'{where}' must be a text, image_url, file or input_audio part.", param=where, value=part
    )


def _tool_calls(calls: Any, role: Any, where: str) -> None:
    if role != "assistant" or not isinstance(calls, list):
        raise invalid_request(
            f"'{where}' must be an array on an assistant message.", param=where, value=calls
        )
    for i, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(function, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments", ""), str)
        ):
            raise invalid_request(
                f"'{where}[{i}]' must have 'id' and 'function' {{name, arguments}}.",
                param=f"{where}[{i}]",
                value=call,
            )


# -- tools ---------------------------------------------------------------------------------


def _tools_and_choice(
    body: Mapping[str, Any],
) -> tuple[tuple[dict[str, Any], ...] | None, Any, bool]:
    """`tools` and `tool_choice`, converting the legacy `functions` form when used. Each
    form is checked in its own fields' names: a legacy request has no `tools`."""
    legacy = body.get("functions") is not None or body.get("function_call") is not None
    if legacy and (body.get("tools") is not None or body.get("tool_choice") is not None):
        raise invalid_request(
            "Use either 'tools'/'tool_choice' or the deprecated 'functions'/'function_call'.",
            param="functions",
        )
    if not legacy:
        tools = _tools(body.get("tools"))
        _check_tool_choice(body.get("tool_choice"), tools, "tool_choice", "tools")
        return tools, body.get("tool_choice"), False
    tools = _legacy_functions(body.get("functions"))
    call = body.get("function_call")
    choice = _legacy_function_call(call)
    _check_tool_choice(choice, tools, "function_call", "functions", sent=call)
    return tools, choice, True


def _legacy_functions(functions: Any) -> tuple[dict[str, Any], ...] | None:
    if functions is None:
        return None
    if not isinstance(functions, list):
        raise invalid_request("'functions' must be an array.", param="functions", value=functions)
    for i, function in enumerate(functions):
        where = f"functions[{i}]"
        if not isinstance(function, dict):
            raise invalid_request(
                f"'{where}' must be an object {{name, description, parameters}}.",
                param=where,
                value=function,
            )
        _function(function, where)
    return tuple({"type": "function", "function": f} for f in functions)


def _legacy_function_call(value: Any) -> Any:
    if value is None or value in ("none", "auto"):
        return value
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return {"type": "function", "function": {"name": value["name"]}}
    raise invalid_request(
        "'function_call' must be 'none', 'auto' or {name}.", param="function_call", value=value
    )


def _tools(value: Any) -> tuple[dict[str, Any], ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise invalid_request("'tools' must be an array.", param="tools", value=value)
    for i, tool in enumerate(value):
        _tool(tool, f"tools[{i}]")
    return tuple(value)


def _tool(tool: Any, where: str) -> None:
    function = tool.get("function") if isinstance(tool, dict) else None
    if (
        not isinstance(tool, dict)
        or tool.get("type") != "function"
        or not isinstance(function, dict)
    ):
        raise invalid_request(
            f"'{where}' must be {{type: 'function', function: {{name, ...}}}}.",
            param=where,
            value=tool,
        )
    _function(function, f"{where}.function")


def _function(function: Mapping[str, Any], where: str) -> None:
    """A function's `name` and `parameters`; `where` is its path in the request."""
    name = function.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise invalid_request(
            f"'{where}.name' must be 1-64 letters, digits, '_' or '-'.",
            param=f"{where}.name",
            value=name,
        )
    parameters = function.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise invalid_request(
            f"'{where}.parameters' must be a JSON-schema object.",
            param=f"{where}.parameters",
            value=parameters,
        )


def _check_tool_choice(
    choice: Any,
    tools: Sequence[Mapping[str, Any]] | None,
    field: str,
    tools_field: str,
    *,
    sent: Any = None,
) -> None:
    """`choice` against the tools offered; errors name `field` and `tools_field` as the
    client sent them, with the client's own value (`sent`, for a converted one)."""
    if choice is None:
        return
    value = choice if sent is None else sent
    if choice in ("auto", "none", "required"):
        if choice == "required" and not tools:
            raise invalid_tool_choice(
                f"'{field}' = 'required' needs '{tools_field}'.", param=field, value=value
            )
        return
    function = choice.get("function") if isinstance(choice, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or choice.get("type") != "function":
        raise invalid_request(
            f"'{field}' must be 'auto', 'none', 'required' or {{type: 'function', "
            "function: {name}}.",
            param=field,
            value=value,
        )
    if name not in {t["function"]["name"] for t in tools or ()}:
        raise invalid_tool_choice(
            f"'{field}' names '{name}', which is not among '{tools_field}'.",
            param=field,
            value=value,
        )


def convert_legacy_history(messages: list[Any]) -> list[Any]:
    """Rewrite legacy `function_call` assistant turns and `function` role results as tools.

    Each legacy call gets a stable id, and the `function` message answering it (the next
    one with that name) becomes a `tool` message carrying the same id.
    """
    converted: list[Any] = []
    pending: dict[str, str] = {}
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            converted.append(message)
            continue
        call = message.get("function_call")
        if message.get("role") == "assistant" and isinstance(call, dict):
            call_id = f"call_legacy_{i}"
            pending[str(call.get("name"))] = call_id
            rest = {k: v for k, v in message.items() if k != "function_call"}
            rest["tool_calls"] = [{"id": call_id, "type": "function", "function": call}]
            converted.append(rest)
        elif message.get("role") == "function":
            name = str(message.get("name"))
            call_id = pending.pop(name, f"call_legacy_{i}")
            content = message.get("content")
            converted.append({"role": "tool", "tool_call_id": call_id, "content": content or ""})
        else:
            converted.append(message)
    return converted
