"""The conversation a Realtime session keeps: its items in the protocol's shape, and the
chat messages the language model sees next. Pure.

Items are `message` (user, assistant or system), `function_call` and
`function_call_output`. An assistant's spoken message remembers each sentence with the
milliseconds of audio it took, so `truncate` can cut it to what the client says was
played (`audio_end_ms`): whole sentences that ended before it, and of the sentence being
played, the share of its words that fits. The model's next turn sees only that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from gateway.realtime.events import RealtimeError, new_id

MAX_ITEMS = 200  # the oldest items go first beyond this (a model's context is bounded)


@attrs.define
class Spoken:
    """One sentence of an assistant's audio and how long it played."""

    text: str
    audio_ms: int


@attrs.define
class Item:
    id: str
    type: str  # message | function_call | function_call_output
    role: str | None = None
    text: str = ""  # a message's text, or an audio message's transcript
    audio: bool = False  # the message's content is audio (its text a transcript)
    status: str = "completed"
    call_id: str | None = None
    name: str | None = None
    arguments: str = ""
    output: str = ""
    spoken: list[Spoken] = attrs.field(factory=list)
    audio_end_ms: int | None = None  # set by a truncate

    def body(self) -> dict[str, Any]:
        """The item as the protocol shows it (GA content part types)."""
        base = {"id": self.id, "object": "realtime.item", "type": self.type, "status": self.status}
        if self.type == "function_call":
            return base | {"call_id": self.call_id, "name": self.name, "arguments": self.arguments}
        if self.type == "function_call_output":
            return base | {"call_id": self.call_id, "output": self.output}
        return base | {"role": self.role, "content": [self.part()]}

    def part(self) -> dict[str, Any]:
        if self.role == "assistant":
            if self.audio:
                return {"type": "output_audio", "transcript": self.text}
            return {"type": "output_text", "text": self.text}
        if self.audio:
            return {"type": "input_audio", "transcript": self.text or None}
        return {"type": "input_text", "text": self.text}


def item_from_client(raw: Any) -> Item:
    """A `conversation.item.create`'s item (RealtimeError when it is not one)."""
    if not isinstance(raw, Mapping):
        raise _invalid("item", "an object")
    kind = raw.get("type", "message")
    given = raw.get("id")
    item_id = given if isinstance(given, str) and given else new_id("item")
    if kind == "function_call_output":
        call_id, output = raw.get("call_id"), raw.get("output")
        if not isinstance(call_id, str) or not isinstance(output, str):
            raise _invalid("item", "a function_call_output with 'call_id' and 'output' strings")
        return Item(item_id, kind, call_id=call_id, output=output)
    if kind == "function_call":
        call_id, name = raw.get("call_id"), raw.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise _invalid("item", "a function_call with 'call_id' and 'name'")
        return Item(
            item_id, kind, call_id=call_id, name=name, arguments=str(raw.get("arguments", ""))
        )
    if kind != "message":
        raise _invalid("item.type", "'message', 'function_call' or 'function_call_output'")
    role = raw.get("role")
    if role not in ("user", "assistant", "system"):
        raise _invalid("item.role", "'user', 'assistant' or 'system'")
    return Item(item_id, kind, role=role, text=_content_text(raw.get("content")))


def _content_text(content: Any) -> str:
    if not isinstance(content, list):
        raise _invalid("item.content", "an array of content parts")
    texts = []
    for part in content:
        if not isinstance(part, Mapping):
            raise _invalid("item.content", "an array of content parts")
        value = part.get("text", part.get("transcript"))
        if part.get("type") in ("input_audio", "audio") and value is None:
            raise RealtimeError(
                "invalid_value",
                "Audio content in conversation.item.create is not transcribed here: "
                "send it with input_audio_buffer.append, or send its text.",
                param="item.content",
            )
        if isinstance(value, str):
            texts.append(value)
    return " ".join(texts)


def truncated(item: Item, audio_end_ms: int) -> Item:
    """`item` cut to the first `audio_end_ms` of its audio (a copy)."""
    if item.role != "assistant" or not item.audio:
        raise _invalid("item_id", "an assistant message with audio")
    if audio_end_ms < 0:
        raise _invalid("audio_end_ms", "a non-negative integer")
    kept: list[str] = []
    elapsed = 0
    for sentence in item.spoken:
        if elapsed + sentence.audio_ms <= audio_end_ms:
            kept.append(sentence.text)
        elif audio_end_ms > elapsed and sentence.audio_ms:
            words = sentence.text.split()
            share = (audio_end_ms - elapsed) / sentence.audio_ms
            kept.append(" ".join(words[: int(len(words) * share)]))
            break
        else:
            break
        elapsed += sentence.audio_ms
    text = " ".join(k for k in kept if k).strip()
    return attrs.evolve(item, text=text, audio_end_ms=audio_end_ms)


def chat_messages(items: list[Item], instructions: str) -> list[dict[str, Any]]:
    """The chat messages of the conversation so far, as the model sees them."""
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    for item in items:
        if item.type == "function_call":
            call = {"id": item.call_id, "type": "function"}
            call["function"] = {"name": item.name, "arguments": item.arguments or "{}"}  # type: ignore[assignment]
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif item.type == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": item.output})
        elif item.text:
            messages.append({"role": item.role, "content": item.text})
    return _merged_calls(messages)


def _merged_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive function calls of one answer as one assistant message, as chat
    models expect them."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        previous = merged[-1] if merged else None
        if previous is not None and message.get("tool_calls") and previous.get("tool_calls"):
            previous["tool_calls"] = previous["tool_calls"] + message["tool_calls"]
        else:
            merged.append(message)
    return merged


def chat_tools(tools: tuple[Mapping[str, Any], ...]) -> list[dict[str, Any]]:
    """The session's functions in chat-completions form."""
    return [
        {
            "type": "function",
            "function": {
                k: v for k, v in tool.items() if k in ("name", "description", "parameters")
            },
        }
        for tool in tools
    ]


def chat_tool_choice(choice: str | Mapping[str, Any]) -> str | dict[str, Any]:
    if isinstance(choice, Mapping):
        return {"type": "function", "function": {"name": choice["name"]}}
    return choice


def _invalid(param: str, expected: str) -> RealtimeError:
    return RealtimeError("invalid_value", f"'{param}' must be {expected}.", param=param)


@attrs.define
class Conversation:
    """The session's items in order (bounded: the oldest go first)."""

    items: list[Item] = attrs.field(factory=list)

    def add(self, item: Item, previous_item_id: str | None = None) -> str | None:
        """Insert `item` after `previous_item_id` (at the end when None, first for
        "root"); returns the id of the item before it."""
        if any(existing.id == item.id for existing in self.items):
            raise _invalid("item.id", "an id no item of the conversation has")
        if previous_item_id is None:
            position = len(self.items)
        elif previous_item_id == "root":
            position = 0
        else:
            position = self._index(previous_item_id, "previous_item_id") + 1
        self.items.insert(position, item)
        del self.items[:-MAX_ITEMS]
        index = self.items.index(item)
        return self.items[index - 1].id if index else None

    def find(self, item_id: Any) -> Item:
        return self.items[self._index(item_id, "item_id")]

    def replace(self, item: Item) -> None:
        self.items[self._index(item.id, "item_id")] = item

    def delete(self, item_id: Any) -> None:
        del self.items[self._index(item_id, "item_id")]

    def _index(self, item_id: Any, param: str) -> int:
        for index, item in enumerate(self.items):
            if item.id == item_id:
                return index
        raise RealtimeError(
            "item_not_found", f"No item with id {item_id!r} in the conversation.", param=param
        )
