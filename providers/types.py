"""Canonical request and response objects shared by every provider adapter.

The gateway speaks the chat-completions protocol to its clients, so the canonical
*request* keeps that protocol's message shape (plain dicts, already validated by the
gateway): each adapter translates those messages into its vendor's format. The
canonical *answers* are small frozen objects, so that the gateway builds one response
shape whichever vendor served the request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

JSON = dict[str, Any]


@attrs.frozen(slots=True)
class Usage:
    """Token counts as the upstream reported them (or as we estimated them)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


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


@attrs.frozen(slots=True)
class EmbeddingRequest:
    """Texts to embed; `dimensions` only for models that can shorten their vectors."""

    model: str
    inputs: Sequence[str]
    dimensions: int | None = None
    user: str | None = None


@attrs.frozen(slots=True)
class EmbeddingResult:
    """One float vector per input, in input order."""

    model: str
    vectors: Sequence[Sequence[float]]
    usage: Usage


@attrs.frozen(slots=True)
class RerankRequest:
    model: str
    query: str
    documents: Sequence[str]
    top_n: int | None = None


@attrs.frozen(slots=True)
class RerankHit:
    index: int
    relevance_score: float


@attrs.frozen(slots=True)
class RerankResult:
    """Hits ordered by relevance, best first; `search_units` as the vendor bills them."""

    model: str
    hits: Sequence[RerankHit]
    search_units: int = 1
