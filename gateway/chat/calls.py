"""The two upstream operations of a chat request, as the engine races them.

A plain call's first result is the whole answer. A stream's first result is the chunks up
to and including the first one that carries content, a tool call or the finish: a stream
that fails before that falls back without the client noticing (the engine's deadline
covers opening the stream and reading that far).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from types import TracebackType

import attrs

from gateway.chat.trip import Trip
from gateway.upstream.resolve import Target
from providers.base import ChatStream, Provider
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
    return attrs.evolve(trip.params.request, model=target.upstream_model, thinking_style=style)


async def complete(trip: Trip, adapter: Provider, target: Target) -> ChatResult:
    """One whole answer (the engine sets the deadline)."""
    return await adapter.chat(request_for(trip, target))


class OpenChatStream:
    """`async with OpenChatStream(trip, adapter, target) as opened:` opens the upstream
    stream and reads up to its first result; leaving closes the upstream response."""

    def __init__(self, trip: Trip, adapter: Provider, target: Target) -> None:
        self._stream: ChatStream = adapter.chat_stream(request_for(trip, target))
        self._open = AsyncExitStack()

    async def __aenter__(self) -> Opened:
        async with AsyncExitStack() as stack:
            chunks = await stack.enter_async_context(self._stream)
            head = await _read_head(chunks)
            self._open = stack.pop_all()  # a failure before here closed the stream
        return Opened(head, chunks)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._open.__aexit__(exc_type, exc, tb)


async def _read_head(chunks: AsyncIterator[ChatChunk]) -> tuple[ChatChunk, ...]:
    head: list[ChatChunk] = []
    async for chunk in chunks:
        head.append(chunk)
        if chunk.content or chunk.tool_calls or chunk.finish_reason:
            break
    return tuple(head)
