"""Chat's names for a Messages request's parts, said back in the request's own (pure).

The door hands chat a chat-completions body, and chat's refusals name what they refuse in
that body (`messages[1].content[0]`: a document the model cannot read, a file id it does
not know). Those indices are not the client's: a `system` prompt is chat's first message,
a user turn's `tool_result` blocks become messages of their own before it, a document's
`context` becomes a text part before the file, thinking blocks are not sent. `rename`
walks the (already validated) request the way `gateway.messages.input` translates it and
puts the client's path in the refusal instead (`messages.0.content.1`, the dotted form
this door's own checks use, as Anthropic's API does).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gateway.messages.input import SKIPPED_BLOCKS
from gateway.platform.errors import ApiError

CHAT_PART = re.compile(r"messages\[(\d+)\](?:\.content\[(\d+)\])?")
# What lies under a chat part, in the Messages API's words: a file's data or id is the
# document block's source, an image's URL the image block's.
UNDER_PART = {
    ".file.file_id": ".source.file_id",
    ".file.file_data": ".source.data",
    ".image_url.url": ".source",
    ".image_url": ".source",
}


def rename(error: ApiError, body: Any) -> None:
    """Put the request's own path in `error` where it names a part of chat's messages;
    unchanged when it names none (or one this walk cannot place)."""
    param = error.extra.get("param")
    found = CHAT_PART.match(param) if isinstance(param, str) else None
    if found is None:
        return
    assert isinstance(param, str)
    origins = chat_origins(body)
    message, part = int(found[1]), found[2]
    if message >= len(origins):
        return
    where, parts = origins[message]
    rest = param[found.end() :]
    if part is None:
        path = where + rest
    elif int(part) < len(parts):
        path = parts[int(part)] + UNDER_PART.get(rest, rest)
    else:
        return
    error.extra["param"] = path
    error.message = error.message.replace(param, path).replace(found[0], path)
    error.args = (error.message,)


def chat_origins(body: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """For each chat message the door builds, in order: the request path it comes from
    and, per content part, the path of the block it comes from."""
    origins: list[tuple[str, list[str]]] = []
    if body.get("system"):
        origins.append(("system", []))
    for i, message in enumerate(body.get("messages") or ()):
        where = f"messages.{i}"
        content = message.get("content")
        blocks = [{"type": "text"}] if isinstance(content, str) else content
        if message.get("role") == "assistant":
            origins.append((where, []))
            continue
        origins.extend(_user_origins(blocks, where))
    return origins


def _user_origins(blocks: list[Mapping[str, Any]], where: str) -> list[tuple[str, list[str]]]:
    """A user turn: each `tool_result` a message, then the other blocks' parts as one."""
    results: list[tuple[str, list[str]]] = []
    parts: list[str] = []
    for i, block in enumerate(blocks):
        kind, at = block.get("type"), f"{where}.content.{i}"
        if kind == "tool_result":
            results.append((at, []))
        elif kind == "document" and isinstance(block.get("context"), str) and block["context"]:
            parts.extend((at, at))  # the context as text, then the document
        elif kind not in SKIPPED_BLOCKS:
            parts.append(at)
    return [*results, (where, parts)] if parts else results
