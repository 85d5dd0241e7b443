"""Responses API items: the input a client sends, as stored, and as chat messages (pure).

An item is a message (`role` user, system, developer or assistant; `content` a string or
parts: `input_text`, `input_image`, `input_file` and `input_audio` (chat's `file` and
`input_audio` parts), and in an assistant's turn `output_text` or
`refusal`), a `function_call` the model made, a `function_call_output` the client
answers it with, or a `reasoning` item handed back from an earlier output. `normalized`
checks each in the API's own names (`input[2].content[0].image_url`) and gives it the
shape the API answers in `input_items` (an `id`, a `status`, content as parts);
`chat_messages` turns a conversation of such items into the chat-completions messages
the engine sends: consecutive function calls (and the assistant text before them)
become one assistant message with `tool_calls`, each output a `tool` message.

`reasoning` items carry a model's private state that only the model that made it can
read; no adapter has a place for it, so they are kept in the conversation's record but
not sent (the gateway never emits one itself).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gateway.platform.errors import ApiError, invalid_request

MESSAGE_ROLES = ("user", "system", "developer", "assistant")
INPUT_PART_TYPES = ("input_text", "input_image", "input_file", "input_audio")
OUTPUT_PART_TYPES = ("output_text", "refusal")
ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning")
IMAGE_DETAILS = ("auto", "low", "high", "original")


def new_item_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"


def input_items(value: Any) -> list[dict[str, Any]]:
    """`input` (a string, or an array of items) as normalized items; 400 naming the
    first bad field."""
    return conversation(value, ())[0]


def conversation(
    value: Any, history: Iterable[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`input` as normalized items, and the whole conversation (`history`, then those
    items) as chat messages: each input item is checked and translated in one pass."""
    messages = chat_messages(history)
    if isinstance(value, str):  # most requests: one user message
        messages.append({"role": "user", "content": value})
        item = {
            "id": new_item_id("msg"),
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": value}],
            "status": "completed",
        }
        return [item], messages
    if not isinstance(value, list):
        raise invalid_request("'input' must be a string or an array of items.", param="input")
    items = []
    for i, raw in enumerate(value):
        item = normalized(raw, f"input[{i}]")
        items.append(item)
        add_message(messages, item)
    return items, messages


def normalized(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise invalid_request(f"'{where}' must be an object.", param=where, value=item)
    kind = item.get("type", "message")
    if kind == "message":
        return _message(item, where)
    if kind == "function_call":
        return _function_call(item, where)
    if kind == "function_call_output":
        return _function_call_output(item, where)
    if kind == "reasoning":
        return {**item, "id": _string_or_new(item, "id", "rs", where)}
    raise unsupported_item(kind, where)


def unsupported_item(kind: Any, where: str) -> ApiError:
    return invalid_request(
        f"'{where}.type' {kind!r} is not supported: the gateway takes "
        f"{', '.join(ITEM_TYPES)} items (and no stored-item references).",
        param=f"{where}.type",
        value=kind,
    )


def _message(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    role = item.get("role")
    if role not in MESSAGE_ROLES:
        raise invalid_request(
            f"'{where}.role' must be one of {', '.join(MESSAGE_ROLES)}.",
            param=f"{where}.role",
            value=role,
        )
    content = item.get("content")
    parts = _parts(content, role, f"{where}.content")
    return {
        "id": _string_or_new(item, "id", "msg", where),
        "type": "message",
        "role": role,
        "content": parts,
        "status": "completed",
    }


def _parts(content: Any, role: str, where: str) -> list[dict[str, Any]]:
    text_type = "output_text" if role == "assistant" else "input_text"
    if isinstance(content, str):
        part: dict[str, Any] = {"type": text_type, "text": content}
        return [part | {"annotations": []} if role == "assistant" else part]
    if not isinstance(content, list) or not content:
        raise invalid_request(
            f"'{where}' must be a string or a non-empty array of parts.", param=where
        )
    allowed = OUTPUT_PART_TYPES if role == "assistant" else INPUT_PART_TYPES
    return [_part(part, allowed, f"{where}[{i}]") for i, part in enumerate(content)]


def _part(part: Any, allowed: Sequence[str], where: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind not in allowed:
        raise invalid_request(
            f"'{where}.type' must be one of {', '.join(allowed)} here.",
            param=f"{where}.type",
            value=kind,
        )
    assert isinstance(part, dict)
    if kind == "input_image":
        return _image(part, where)
    if kind == "input_file":
        return _file(part, where)
    if kind == "input_audio":
        return {"type": "input_audio", "input_audio": part.get("input_audio")}
    field = "refusal" if kind == "refusal" else "text"
    if not isinstance(part.get(field), str):
        raise invalid_request(f"'{where}.{field}' must be a string.", param=f"{where}.{field}")
    return dict(part)


def _image(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    url = part.get("image_url")
    if not isinstance(url, str) or not url:
        detail = " (file ids are not supported: send the image as a URL or data URL)"
        raise invalid_request(
            f"'{where}.image_url' must be a URL{detail if part.get('file_id') else ''}.",
            param=f"{where}.image_url",
            value=part.get("file_id"),
        )
    detail = part.get("detail") or "auto"
    if detail not in IMAGE_DETAILS:
        raise invalid_request(
            f"'{where}.detail' must be one of {', '.join(IMAGE_DETAILS)}.",
            param=f"{where}.detail",
            value=detail,
        )
    return {"type": "input_image", "image_url": url, "detail": detail}


FILE_FIELDS = ("file_data", "file_id", "filename")


def _file(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An `input_file`: inline `file_data` or one of the gateway's `file_id`s, as chat's
    `file` part reads them (`gateway.chat.file_parts` checks the rest). A `file_url` is
    refused: the gateway fetches no URL on a client's behalf."""
    if part.get("file_url") is not None:
        raise invalid_request(
            f"'{where}.file_url': file URLs are not fetched by this gateway; send the file "
            "as 'file_data' or upload it (POST /v1/files) and send its 'file_id'.",
            param=f"{where}.file_url",
            value=part.get("file_url"),
        )
    kept = {name: part[name] for name in FILE_FIELDS if part.get(name) is not None}
    return {"type": "input_file", **kept}


def _function_call(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    for field in ("call_id", "name", "arguments"):
        if not isinstance(item.get(field), str):
            raise invalid_request(f"'{where}.{field}' must be a string.", param=f"{where}.{field}")
    return {
        "id": _string_or_new(item, "id", "fc", where),
        "type": "function_call",
        "call_id": item["call_id"],
        "name": item["name"],
        "arguments": item["arguments"],
        "status": "completed",
    }


def _function_call_output(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(item.get("call_id"), str):
        raise invalid_request(f"'{where}.call_id' must be a string.", param=f"{where}.call_id")
    output = item.get("output")
    if not isinstance(output, str | list):
        raise invalid_request(
            f"'{where}.output' must be a string or an array of parts.", param=f"{where}.output"
        )
    if isinstance(output, list):
        output = [_part(p, ("input_text",), f"{where}.output[{i}]") for i, p in enumerate(output)]
    return {
        "id": _string_or_new(item, "id", "fco", where),
        "type": "function_call_output",
        "call_id": item["call_id"],
        "output": output,
        "status": "completed",
    }


def _string_or_new(item: Mapping[str, Any], field: str, prefix: str, where: str) -> str:
    value = item.get(field)
    if value is None:
        return new_item_id(prefix)
    if not isinstance(value, str):
        raise invalid_request(f"'{where}.{field}' must be a string.", param=f"{where}.{field}")
    return value


# -- as chat messages ----------------------------------------------------------------------


def chat_messages(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The conversation `items` (normalized) as chat-completions messages."""
    messages: list[dict[str, Any]] = []
    for item in items:
        add_message(messages, item)
    return messages


def add_message(messages: list[dict[str, Any]], item: Mapping[str, Any]) -> None:
    """`item` (normalized) added to the chat `messages` of its conversation so far."""
    kind = item["type"]
    if kind == "message":
        messages.append(_chat_message(item))
    elif kind == "function_call":
        _add_call(messages, item)
    elif kind == "function_call_output":
        messages.append(_tool_message(item))


def _chat_message(item: Mapping[str, Any]) -> dict[str, Any]:
    role, parts = item["role"], item["content"]
    if role == "assistant":
        return {"role": "assistant", "content": "".join(_part_text(p) for p in parts)}
    if all(p["type"] == "input_text" for p in parts):
        return {"role": role, "content": "".join(p["text"] for p in parts)}
    return {"role": role, "content": [_chat_part(p) for p in parts]}


def _chat_part(part: Mapping[str, Any]) -> dict[str, Any]:
    if part["type"] == "input_file":
        return {"type": "file", "file": {k: v for k, v in part.items() if k != "type"}}
    if part["type"] == "input_audio":
        return {"type": "input_audio", "input_audio": part["input_audio"]}
    if part["type"] == "input_image":
        return {
            "type": "image_url",
            "image_url": {"url": part["image_url"], "detail": part["detail"]},
        }
    return {"type": "text", "text": part["text"]}


def _part_text(part: Mapping[str, Any]) -> str:
    return str(part.get("refusal") if part["type"] == "refusal" else part.get("text", ""))


def _add_call(messages: list[dict[str, Any]], item: Mapping[str, Any]) -> None:
    """Join the call to the assistant message just before it (its text, or the other
    calls of the same turn), as chat-completions has one assistant message a turn."""
    call = {
        "id": item["call_id"],
        "type": "function",
        "function": {"name": item["name"], "arguments": item["arguments"]},
    }
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":
        last.setdefault("tool_calls", []).append(call)
        if last.get("content") == "":
            last["content"] = None
        return
    messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _tool_message(item: Mapping[str, Any]) -> dict[str, Any]:
    output = item["output"]
    if isinstance(output, list):
        output = "".join(p["text"] for p in output)
    return {"role": "tool", "tool_call_id": item["call_id"], "content": output}
