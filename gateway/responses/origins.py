"""Chat's names for a Responses request's parts, said back in the request's own (pure).

The door hands chat a chat-completions body, and chat's refusals name what they refuse in
it (`messages[1].content[0]`: a file the model cannot read, a file id it does not know).
Those indices are not the client's: `instructions` are chat's first message, the previous
response's conversation comes before this request's `input`, consecutive function calls
join one assistant message and reasoning items send nothing. `rename` walks the request's
items the way `gateway.responses.items` translates them and puts the client's path in
the refusal instead (`input[2].content[1]`, as this door's own checks name it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gateway.platform.errors import ApiError
from gateway.responses.items import chat_messages

CHAT_PART = re.compile(r"messages\[(\d+)\](?:\.content\[(\d+)\])?")
# What lies under a chat part, in this API's words (`input_file`, `input_image`).
UNDER_PART = {
    ".file.file_id": ".file_id",
    ".file.file_data": ".file_data",
    ".file": "",
    ".image_url.url": ".image_url",
    ".image_url": ".image_url",
}


def rename(
    error: ApiError,
    items: Sequence[Mapping[str, Any]],
    history: Sequence[Mapping[str, Any]],
    instructions: bool,
    text_input: bool,
) -> None:
    """Put the request's own path in `error` where it names a part of this request's
    `input` (`items`, normalized); unchanged when it names none (the instructions, or
    the previous response's turns, which have no path in this request)."""
    param = error.extra.get("param")
    found = CHAT_PART.match(param) if isinstance(param, str) else None
    if found is None:
        return
    assert isinstance(param, str)
    origins = chat_origins(items, history, instructions, text_input)
    index = int(found[1])
    where = origins[index] if index < len(origins) else None
    if where is None:
        return
    rest = param[found.end() :]
    path = where if found[2] is None else f"{where}.content[{found[2]}]"
    path += rest if found[2] is None else UNDER_PART.get(rest, rest)
    error.extra["param"] = path
    error.message = error.message.replace(param, path).replace(found[0], path)
    error.args = (error.message,)


def chat_origins(
    items: Sequence[Mapping[str, Any]],
    history: Sequence[Mapping[str, Any]],
    instructions: bool,
    text_input: bool,
) -> list[str | None]:
    """For each chat message the door builds, in order, the `input` path it comes from
    (None: the instructions or the previous response's conversation)."""
    origins: list[str | None] = [None] * (int(instructions) + len(chat_messages(history)))
    last_assistant = _ends_with_assistant(history)
    for i, item in enumerate(items):
        where = "input" if text_input else f"input[{i}]"
        kind = item["type"]
        if kind == "function_call" and last_assistant:
            continue  # joins the assistant message before it
        if kind in ("message", "function_call", "function_call_output"):
            origins.append(where)
            last_assistant = kind == "function_call" or item.get("role") == "assistant"
    return origins


def _ends_with_assistant(history: Sequence[Mapping[str, Any]]) -> bool:
    messages = chat_messages(history)
    return bool(messages) and messages[-1]["role"] == "assistant"
