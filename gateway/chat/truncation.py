"""Shortening a conversation to fit the model's context window (pure): the Responses
API's `truncation: "auto"`.

When the prompt (estimated as planning estimates it, `model_fit.prompt_tokens`) and the
answer's `max_tokens` exceed the routed model's context window, whole turns are dropped
from the start of the conversation, oldest first, until it fits. A turn is a message with
the tool results that answer it: an assistant message's tool calls never lose their
results, nor a result its call. The first `kept` messages (the instructions) are never
dropped, nor the last turn: when even that does not fit, planning's
`context_length_exceeded` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from gateway.chat.model_fit import fits, prompt_tokens
from providers.catalog import ModelInfo
from providers.types import ChatRequest

Turn = list[Mapping[str, Any]]


def truncated(request: ChatRequest, kept: int, info: ModelInfo | None) -> ChatRequest:
    """`request` with as few of its oldest turns dropped as make it fit `info`'s window
    (unchanged when it fits, or when the catalog does not know the window)."""
    if info is None or info.context_window <= 0:
        return request
    messages = request.messages
    if fits(info, prompt_tokens(messages, request.tools), request.max_tokens):
        return request
    head, turns = list(messages[:kept]), turns_of(messages[kept:])
    sizes = [prompt_tokens(turn, None) for turn in turns]
    total = prompt_tokens(head, request.tools) + sum(sizes)
    dropped = 0
    while dropped < len(turns) - 1 and not fits(info, total, request.max_tokens):
        total -= sizes[dropped]
        dropped += 1
    if not dropped:
        return request
    rest = [message for turn in turns[dropped:] for message in turn]
    return attrs.evolve(request, messages=[*head, *rest])


def turns_of(messages: Sequence[Mapping[str, Any]]) -> list[Turn]:
    """The messages in turns: each message, with the tool results that follow it."""
    turns: list[Turn] = []
    for message in messages:
        if message.get("role") == "tool" and turns:
            turns[-1].append(message)
        else:
            turns.append([message])
    return turns
