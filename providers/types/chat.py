"""Canonical chat requests and answers, the same for every vendor.

The canonical *request* keeps the chat-completions message shape (plain dicts, already
validated by the gateway): each adapter translates those messages into its vendor's
format. The canonical *answers* are small frozen objects, so that the gateway builds one
response shape whichever vendor served the request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from providers.types.usage import Usage


@attrs.frozen(slots=True)
class ToolCall:
    """A complete function call chosen by the model; `arguments` is a JSON string."""

    id: str
    name: str
    arguments: str


@attrs.frozen(slots=True)
class ToolCallDelta:
    """A piece of a streamed tool call.

    The first piece of a call carries `id` and `name`; later pieces carry more of
    `arguments`. `index` says which call of the message the piece belongs to.
    """

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@attrs.frozen(slots=True)
class ChatRequest:
    """What the gateway asks of an upstream chat model.

    `model` is the vendor's own model id. `messages`, `tools` and `tool_choice` are in the
    chat-completions shape; legacy `functions` have already been converted to tools.
    """

    model: str
    messages: Sequence[Mapping[str, Any]]
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: Sequence[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    tools: Sequence[Mapping[str, Any]] | None = None
    tool_choice: str | Mapping[str, Any] | None = None
    user: str | None = None
    response_format: Mapping[str, Any] | None = None
    seed: int | None = None
    # Sample from the `top_k` likeliest tokens only (Anthropic, Gemini, Cohere's `k`; the
    # Messages API's field). OpenAI and Mistral have no such setting: they refuse it.
    top_k: int | None = None


@attrs.frozen(slots=True)
class ChatResult:
    """A finished, non-streamed chat answer."""

    id: str
    model: str
    content: str | None
    finish_reason: str
    usage: Usage
    tool_calls: tuple[ToolCall, ...] = ()


@attrs.frozen(slots=True)
class ChatChunk:
    """One event of a streamed chat answer, already in canonical terms.

    A chunk carries any of: a piece of text, pieces of tool calls, the finish reason
    (once, at the end), and the usage (once, when the upstream reports it).
    """

    content: str | None = None
    tool_calls: tuple[ToolCallDelta, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
