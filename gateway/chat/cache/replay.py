"""Between a whole answer and a stream of chunks, both ways.

`StreamAssembler` collects the chunks of a live stream into the `ChatResult` the cache
keeps; `ReplayStream` turns a cached `ChatResult` back into chunks, shaped like a live
upstream stream, so that a cache hit on a streamed request goes through the very same
stream body and renderer as a live answer and is indistinguishable in shape from one:
the role chunk, the content in a few pieces, each tool call as its id and name and then
pieces of its arguments, the finish reason, the usage.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from types import TracebackType

import attrs
import trio

from gateway.chat.cache.store import CACHEABLE_FINISH_REASONS
from providers.types import ChatChunk, ChatResult, ToolCall, ToolCallDelta, Usage

REPLAY_PIECES = 20
"""Content is replayed in about this many pieces, cut at word boundaries."""
ARGUMENT_PIECES = 4
"""Each tool call's arguments are replayed in about this many pieces."""

_WORD = re.compile(r"\s*\S+\s*")


# -- assembling a live stream --------------------------------------------------------------


@attrs.define
class _PartialCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = attrs.Factory(list)


class StreamAssembler:
    """Collects a stream's chunks; `result()` is the whole answer if it may be cached.

    Bounded: past `max_chars` characters of text it drops what it holds and the stream is
    not cached (pass the cache's byte budget: `ResponseCache.put` has the final word).
    """

    def __init__(self, *, max_chars: int) -> None:
        self._max_chars = max_chars
        self._size = 0
        self._content: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._overflowed = False

    def add(self, chunk: ChatChunk) -> None:
        if self._overflowed:
            return
        if chunk.content:
            self._content.append(chunk.content)
            self._size += len(chunk.content)
        for piece in chunk.tool_calls:
            self._add_call_piece(piece)
        if chunk.finish_reason is not None:
            self._finish_reason = chunk.finish_reason
        if chunk.usage is not None:
            self._usage = chunk.usage
        if self._size > self._max_chars:
            self._overflowed = True
            self._content.clear()
            self._calls.clear()

    def _add_call_piece(self, piece: ToolCallDelta) -> None:
        call = self._calls.setdefault(piece.index, _PartialCall())
        if call.id is None and piece.id:
            call.id = piece.id
        if call.name is None and piece.name:
            call.name = piece.name
        if piece.arguments:
            call.arguments.append(piece.arguments)
            self._size += len(piece.arguments)

    def result(self, *, id: str, model: str, usage: Usage | None = None) -> ChatResult | None:
        """The assembled answer, or None when it must not be cached.

        None when the stream never said why it finished (it was cut), finished for a
        reason that is not cacheable, grew past the bound, or left a tool call without
        its id or name. `usage` (the gateway's estimate) stands in when the stream
        reported no token counts.
        """
        if self._overflowed or self._finish_reason not in CACHEABLE_FINISH_REASONS:
            return None
        calls: list[ToolCall] = []
        for index in sorted(self._calls):
            call = self._calls[index]
            if call.id is None or call.name is None:
                return None
            calls.append(ToolCall(call.id, call.name, "".join(call.arguments)))
        assert self._finish_reason is not None  # narrowed by the membership test above
        reported = self._usage if self._usage is not None and self._usage.total_tokens else None
        return ChatResult(
            id=id,
            model=model,
            content="".join(self._content) or None,
            finish_reason=self._finish_reason,
            usage=reported or usage or Usage(),
            tool_calls=tuple(calls),
        )


# -- replaying a cached answer -------------------------------------------------------------


def split_words(text: str, pieces: int) -> list[str]:
    """`text` cut at word starts into at most `pieces` runs of about equal word count.

    The pieces join back into `text` exactly (whitespace stays with the word before it,
    leading whitespace with the first word).
    """
    words = _WORD.findall(text)
    if not words:
        return [text] if text else []
    per_piece = math.ceil(len(words) / max(1, pieces))
    return ["".join(words[i : i + per_piece]) for i in range(0, len(words), per_piece)]


def split_even(text: str, pieces: int) -> list[str]:
    """`text` in at most `pieces` slices of about equal length; they join back into `text`."""
    if not text:
        return []
    size = math.ceil(len(text) / max(1, pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def replay_chunks(
    result: ChatResult,
    *,
    pieces: int = REPLAY_PIECES,
    argument_pieces: int = ARGUMENT_PIECES,
) -> Iterator[ChatChunk]:
    """The chunks of a live stream that would have produced `result`, lazily."""
    for text in split_words(result.content or "", pieces):
        yield ChatChunk(content=text)
    for index, call in enumerate(result.tool_calls):
        yield ChatChunk(tool_calls=(ToolCallDelta(index, id=call.id, name=call.name),))
        for part in split_even(call.arguments, argument_pieces):
            yield ChatChunk(tool_calls=(ToolCallDelta(index, arguments=part),))
    yield ChatChunk(finish_reason=result.finish_reason)
    yield ChatChunk(usage=result.usage)


class ReplayStream:
    """A cached answer as an upstream stream: an async context manager and chunk iterator.

    It stands where `Provider.chat_stream(...)` stands: `__aenter__` gives the chunk
    iterator (itself), which `ChatStreamBody` takes over like a live one. No waiting
    between chunks; each `__anext__` is still a checkpoint, so a client that goes away
    cancels the replay like any stream. Closing is idempotent and ends the iteration.
    """

    def __init__(self, result: ChatResult, *, pieces: int = REPLAY_PIECES) -> None:
        self._chunks = replay_chunks(result, pieces=pieces)
        self._closed = False

    async def __aenter__(self) -> ReplayStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> ReplayStream:
        return self

    async def __anext__(self) -> ChatChunk:
        await trio.lowlevel.checkpoint()
        if self._closed:
            raise StopAsyncIteration
        try:
            return next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed
