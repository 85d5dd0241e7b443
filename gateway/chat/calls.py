"""The two upstream operations of a chat request, as the engine races them.

A plain call's first result is the whole answer. A stream's first result is the chunks up
to and including the first one that carries content, a tool call or the finish: a stream
that fails before that falls back without the client noticing (the engine's deadline
covers opening the stream and reading that far).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs

from gateway.chat.trip import Trip
from gateway.upstream.resolve import Target
from providers.base import Provider
from providers.types import ChatChunk, ChatRequest, ChatResult


@attrs.frozen
class Opened:
    """A stream that has produced its first result: the chunks so far and the rest."""

    head: tuple[ChatChunk, ...]
    rest: AsyncIterator[ChatChunk]


def request_for(trip: Trip, target: Target) -> ChatRequest:
    """The request as `target` receives it: its vendor's model id, and how that model
    spells reasoning (from the catalog)."""
    info = target.info
    style = None if info is None else info.parameters.thinking
    request = trip.params.request
    if request.model == target.upstream_model and request.thinking_style == style:
        return request  # as it is: a copy of its 34 fields costs more than the rest here
    return attrs.evolve(request, model=target.upstream_model, thinking_style=style)


async def complete(trip: Trip, adapter: Provider, target: Target) -> ChatResult:
    """One whole answer (the engine sets the deadline)."""
    return await adapter.chat(request_for(trip, target))


@asynccontextmanager
async def open_chat_stream(trip: Trip, adapter: Provider, target: Target) -> AsyncIterator[Opened]:
    """`async with open_chat_stream(trip, adapter, target) as opened:` opens the upstream
    stream and reads up to its first result; leaving closes the upstream response."""
    async with adapter.chat_stream(request_for(trip, target)) as chunks:
        head = await _read_head(chunks)
        yield Opened(head, chunks)


async def _read_head(chunks: AsyncIterator[ChatChunk]) -> tuple[ChatChunk, ...]:
    head: list[ChatChunk] = []
    async for chunk in chunks:
        head.append(chunk)
        if chunk.content or chunk.tool_calls or chunk.audio or chunk.finish_reason:
            break
    return tuple(head)
