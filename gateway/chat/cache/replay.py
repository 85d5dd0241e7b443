"""Between a whole answer and a stream of chunks, both ways.

`StreamAssembler` collects the chunks of a live stream into the `ChatResult` the cache
keeps; `replayed` turns a cached `ChatResult` back into chunks, shaped like a live
upstream stream, so that a cache hit on a streamed request goes through the very same
stream body and renderer as a live answer and is indistinguishable in shape from one:
the role chunk, the content in a few pieces, each tool call as its id and name and then
pieces of its arguments, the finish reason, the usage.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncGenerator, Iterator, Mapping
from typing import Any

import attrs
import trio

from gateway.chat.cache.store import CACHEABLE_FINISH_REASONS
from providers.types import (
    ChatChoice,
    ChatChunk,
    ChatResult,
    TokenLogprob,
    ToolCall,
    ToolCallDelta,
    Usage,
    result_of_choices,
)
from streams.batched import Batched

REPLAY_PIECES = 20
"""Content is replayed in about this many pieces, cut at word boundaries."""
ARGUMENT_PIECES = 4
"""Each tool call's arguments are replayed in about this many pieces."""

LOGPROB_CHARS = 64
"""What one token's log-probability entry counts against the assembler's bound."""

_WORD = re.compile(r"\s*\S+\s*")


# -- assembling a live stream --------------------------------------------------------------


@attrs.define
class _PartialCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = attrs.Factory(list)


@attrs.define
class _PartialChoice:
    content: list[str] = attrs.Factory(list)
    calls: dict[int, _PartialCall] = attrs.Factory(dict)
    logprobs: list[TokenLogprob] | None = None
    finish_reason: str | None = None

    def choice(self, index: int) -> ChatChoice | None:
        """The whole choice, or None when a tool call lacks its id or name."""
        calls: list[ToolCall] = []
        for position in sorted(self.calls):
            call = self.calls[position]
            if call.id is None or call.name is None:
                return None
            calls.append(ToolCall(call.id, call.name, "".join(call.arguments)))
        return ChatChoice(
            index=index,
            content="".join(self.content) or None,
            finish_reason=self.finish_reason or "stop",
            tool_calls=tuple(calls),
            logprobs=None if self.logprobs is None else tuple(self.logprobs),
        )


class StreamAssembler:
    """Collects a stream's chunks; `result()` is the whole answer if it may be cached.

    Bounded: past `max_chars` characters of text it drops what it holds and the stream is
    not cached (pass the cache's byte budget: `ResponseCache.put` has the final word).
    """

    def __init__(self, *, max_chars: int) -> None:
        self._max_chars = max_chars
        self._size = 0
        self._choices: dict[int, _PartialChoice] = {}
        self._usage: Usage | None = None
        self._moderation: Mapping[str, Any] | None = None
        self._overflowed = False

    def add(self, chunk: ChatChunk) -> None:
        if self._overflowed:
            return
        if chunk.moderation is not None:
            self._moderation = chunk.moderation
        choice = self._choices.setdefault(chunk.index, _PartialChoice())
        if chunk.content:
            choice.content.append(chunk.content)
            self._size += len(chunk.content)
        if chunk.logprobs is not None:
            choice.logprobs = [*(choice.logprobs or ()), *chunk.logprobs]
            self._size += len(chunk.logprobs) * LOGPROB_CHARS
        for piece in chunk.tool_calls:
            self._add_call_piece(choice, piece)
        if chunk.finish_reason is not None:
            choice.finish_reason = chunk.finish_reason
        if chunk.usage is not None:
            self._usage = chunk.usage
        if self._size > self._max_chars:
            self._overflowed = True
            self._choices.clear()

    def _add_call_piece(self, choice: _PartialChoice, piece: ToolCallDelta) -> None:
        call = choice.calls.setdefault(piece.index, _PartialCall())
        if call.id is None and piece.id:
            call.id = piece.id
        if call.name is None and piece.name:
            call.name = piece.name
        if piece.arguments:
            call.arguments.append(piece.arguments)
            self._size += len(piece.arguments)

    def result(self, *, id: str, model: str, usage: Usage | None = None) -> ChatResult | None:
        """The assembled answer, or None when it must not be cached.

        None when a choice never said why it finished (it was cut), finished for a reason
        that is not cacheable, the whole grew past the bound, or a tool call was left
        without its id or name. `usage` (the gateway's estimate) stands in when the
        stream reported no token counts.
        """
        if self._overflowed or not self._choices:
            return None
        if any(c.finish_reason not in CACHEABLE_FINISH_REASONS for c in self._choices.values()):
            return None
        choices = [partial.choice(index) for index, partial in self._choices.items()]
        if any(choice is None for choice in choices):
            return None
        reported = self._usage if self._usage is not None and self._usage.total_tokens else None
        return result_of_choices(
            id, model, [c for c in choices if c], reported or usage or Usage(), self._moderation
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
    """The chunks of a live stream that would have produced `result`, lazily: each choice
    in turn, then the usage."""
    for choice in result.choices:
        yield from _choice_chunks(choice, pieces, argument_pieces)
    if result.moderation is not None:
        yield ChatChunk(moderation=result.moderation)
    yield ChatChunk(usage=result.usage)


def _choice_chunks(choice: ChatChoice, pieces: int, argument_pieces: int) -> Iterator[ChatChunk]:
    """One choice's text (token by token with its log-probabilities, when it has them and
    they spell the text; else in word runs), its tool calls, then its finish."""
    index, text = choice.index, choice.content or ""
    logprobs = choice.logprobs
    if logprobs and "".join(str(e.get("token", "")) for e in logprobs) == text:
        for entry in logprobs:
            yield ChatChunk(content=str(entry.get("token", "")), index=index, logprobs=(entry,))
    else:
        for run in split_words(text, pieces):
            yield ChatChunk(content=run, index=index)
        if logprobs is not None:
            yield ChatChunk(index=index, logprobs=tuple(logprobs))
    for position, call in enumerate(choice.tool_calls):
        opening = ToolCallDelta(position, id=call.id, name=call.name)
        yield ChatChunk(tool_calls=(opening,), index=index)
        for part in split_even(call.arguments, argument_pieces):
            yield ChatChunk(tool_calls=(ToolCallDelta(position, arguments=part),), index=index)
    yield ChatChunk(finish_reason=choice.finish_reason, index=index)


def replayed(result: ChatResult, *, pieces: int = REPLAY_PIECES) -> Batched[ChatChunk]:
    """A cached answer as the stream body reads a live one (`streams.batched.Batched`):
    every chunk in one batch, the whole answer in hand, so the body takes it in the
    writer's task (no read-ahead task) and it leaves in one write."""
    return Batched(_replay_batches(result, pieces), lambda: True)


async def _replay_batches(result: ChatResult, pieces: int) -> AsyncGenerator[list[ChatChunk], None]:
    await trio.lowlevel.checkpoint()  # a client that went away cancels the replay here
    yield list(replay_chunks(result, pieces=pieces))
