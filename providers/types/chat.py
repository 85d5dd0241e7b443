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
    Every other field is the chat-completions parameter of the same name, validated;
    `max_tokens` holds `max_completion_tokens` too (one number, two spellings). None is
    "not asked": each adapter sends what its vendor understands and the gateway refuses,
    before any call, what the chosen model cannot honour (`providers.chat_support`).
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
    n: int | None = None
    logit_bias: Mapping[str, int] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None
    verbosity: str | None = None
    service_tier: str | None = None
    store: bool | None = None
    metadata: Mapping[str, str] | None = None
    prediction: Mapping[str, Any] | None = None
    modalities: Sequence[str] | None = None
    audio: Mapping[str, Any] | None = None
    web_search_options: Mapping[str, Any] | None = None
    moderation: Mapping[str, Any] | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_options: Mapping[str, Any] | None = None
    prompt_cache_retention: str | None = None
    # Sample from the `top_k` likeliest tokens only (Anthropic, Gemini, Cohere's `k`; the
    # Messages API's field). OpenAI and Mistral have no such setting: they refuse it.
    top_k: int | None = None
    thinking_style: str | None = None
    """How the chosen model's vendor spells `reasoning_effort` (the catalog's `thinking`:
    `budget`, `effort` or `level`), set by the gateway for the model it calls; None for a
    model the catalog does not describe (the adapter uses its vendor's current style)."""

    @property
    def choices(self) -> int:
        """How many answers are asked for (`n`, 1 when absent)."""
        return self.n or 1


TokenLogprob = Mapping[str, Any]
"""One token's log-probability in the chat-completions shape: `token`, `logprob`, `bytes`
and `top_logprobs` (the alternatives, each `token`, `logprob`, `bytes`)."""


@attrs.frozen(slots=True)
class ChatChoice:
    """One of the `n` answers of a whole chat result."""

    index: int
    content: str | None
    finish_reason: str
    tool_calls: tuple[ToolCall, ...] = ()
    logprobs: tuple[TokenLogprob, ...] | None = None
    audio: Mapping[str, Any] | None = None
    """The spoken answer (`message.audio`: `id`, `data`, `expires_at`, `transcript`) when
    the request asked for the audio modality; relayed as the vendor sent it."""


@attrs.frozen(slots=True)
class ChatResult:
    """A finished, non-streamed chat answer.

    `content`, `finish_reason`, `tool_calls` and `logprobs` are the first choice's;
    `more_choices` holds the others when `n` > 1 (indices 1, 2, ...). `logprobs` is None
    unless they were asked for. `usage` counts every choice.
    """

    id: str
    model: str
    content: str | None
    finish_reason: str
    usage: Usage
    tool_calls: tuple[ToolCall, ...] = ()
    logprobs: tuple[TokenLogprob, ...] | None = None
    more_choices: tuple[ChatChoice, ...] = ()
    moderation: Mapping[str, Any] | None = None
    """The vendor's moderation results (OpenAI's `moderation`, when it was asked)."""
    audio: Mapping[str, Any] | None = None
    """The first choice's spoken answer (`ChatChoice.audio`)."""

    @property
    def choices(self) -> tuple[ChatChoice, ...]:
        """Every choice, the first one included, in index order."""
        first = ChatChoice(
            0, self.content, self.finish_reason, self.tool_calls, self.logprobs, self.audio
        )
        return (first, *self.more_choices)


def result_of_choices(
    id: str,
    model: str,
    choices: Sequence[ChatChoice],
    usage: Usage,
    moderation: Mapping[str, Any] | None = None,
) -> ChatResult:
    """A `ChatResult` from choices in any order (the first one by index leads)."""
    ordered = sorted(choices, key=lambda c: c.index)
    if not ordered:
        return ChatResult(
            id=id, model=model, content=None, finish_reason="stop", usage=usage,
            moderation=moderation,
        )  # fmt: skip
    head, *rest = ordered
    return ChatResult(
        id=id,
        model=model,
        content=head.content,
        finish_reason=head.finish_reason,
        usage=usage,
        tool_calls=head.tool_calls,
        logprobs=head.logprobs,
        more_choices=tuple(rest),
        moderation=moderation,
        audio=head.audio,
    )


@attrs.frozen(slots=True)
class ChatChunk:
    """One event of a streamed chat answer, already in canonical terms.

    A chunk carries any of: a piece of text, pieces of tool calls, the log-probabilities
    of its text's tokens, a piece of the spoken answer (`delta.audio`: its `id`, more of
    its `transcript` or `data`, its `expires_at`, relayed as the vendor sent them), the
    finish reason (once per choice, at its end), and the usage (once, when the upstream
    reports it). `index` says which of the `n` choices the piece belongs to (0 unless
    `n` > 1).
    """

    content: str | None = None
    tool_calls: tuple[ToolCallDelta, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    index: int = 0
    logprobs: tuple[TokenLogprob, ...] | None = None
    moderation: Mapping[str, Any] | None = None
    audio: Mapping[str, Any] | None = None
