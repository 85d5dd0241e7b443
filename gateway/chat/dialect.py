"""Another dialect in front of chat: the one seam the other front doors use.

A dialect reads its own request body into the canonical chat parameters and renders the
canonical answer back in its own shapes: a whole answer as a JSON object, a streamed one
as its own frames. Everything between (planning, routing rules, fallbacks, admission and
limits, the cache, the engine's race, accounting, energy and carbon, the usage record) is
chat's path, unchanged, so `POST /v1/chat/completions`, `POST /v1/responses` and `POST
/v1/messages` cannot drift apart in what they do, only in how they say it.

`CHAT` is the chat-completions dialect itself; `gateway.responses` and `gateway.messages`
bring theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from gateway.chat import render
from gateway.chat.input import ChatParams, parse_chat_body
from gateway.chat.trip import Trip
from gateway.platform.errors import ApiError
from gateway.upstream.accounting import Accounting
from providers.types import ChatChunk, ChatResult
from streams.sse import DONE


@attrs.frozen
class Parsed:
    """A request read by its dialect: the canonical parameters, and the request as the
    routing rules read it (chat-completions fields: `model`, `messages`, `tools`,
    `metadata`, `service`), so a rule matches the same question whichever door it came
    through."""

    params: ChatParams
    rule_body: Mapping[str, Any]


class Frames(Protocol):
    """The frames of one streamed answer in a dialect, from a state machine of its own.

    The stream body calls `opening` once, `chunk` for each canonical chunk, then either
    `finish` (the upstream ended) or `fail` (it failed after the first chunk); each
    returns the bytes to send (possibly none). `seal` is awaited once, after `finish` or
    `fail` and before their frames are sent: what must be done before the client can see
    the end (the Responses API stores the response there, so a client that continues it
    at once finds it). A cancelled `seal` (the client left) cancels only what it awaits.
    """

    @property
    def content_type(self) -> str: ...

    def opening(self) -> bytes: ...

    def chunk(self, chunk: ChatChunk) -> bytes: ...

    def finish(
        self, finish_reason: str, accounting: Accounting, tools_called: Sequence[str]
    ) -> bytes: ...

    def fail(self, error: ApiError) -> bytes: ...

    async def seal(self) -> None: ...


class Dialect(Protocol):
    """How one front door speaks: see the module docstring."""

    def parse(self, body: Any) -> Parsed:
        """The canonical request; a 400 `ApiError` naming the field on a bad body."""
        ...

    def answer(self, trip: Trip, result: ChatResult, accounting: Accounting) -> dict[str, Any]:
        """A whole answer's JSON body."""
        ...

    def frames(self, trip: Trip) -> Frames:
        """A fresh state machine for one streamed answer."""
        ...


def service_fields(
    trip: Trip, accounting: Accounting, tools_called: Sequence[str]
) -> dict[str, Any]:
    """The gateway's metadata every dialect's answer carries, under the names chat uses
    (`service`, `_gateway`): fields the vendors' clients ignore, read by ours."""
    return {
        "service": render.service_object(trip, accounting),
        "_gateway": render.gateway_metadata(trip, accounting, list(tools_called)),
    }


class ChatCompletionFrames:
    """Chat-completion chunks: the role first, a chunk per delta, the final chunk with
    the gateway's metadata, the usage chunk when asked for, then `[DONE]`."""

    content_type = "text/event-stream"

    def __init__(self, trip: Trip) -> None:
        self._trip = trip

    def opening(self) -> bytes:
        return render.role_chunk(self._trip)

    def chunk(self, chunk: ChatChunk) -> bytes:
        frames = b""
        if chunk.content:
            frames += render.content_chunk(self._trip, chunk.content)
        if chunk.tool_calls:
            frames += render.tool_calls_chunk(self._trip, chunk.tool_calls)
        return frames

    def finish(
        self, finish_reason: str, accounting: Accounting, tools_called: Sequence[str]
    ) -> bytes:
        trip = self._trip
        frames = render.final_chunk(trip, finish_reason, accounting, list(tools_called))
        if trip.params.include_usage:
            frames += render.usage_chunk(trip, accounting)
        return frames + DONE

    def fail(self, error: ApiError) -> bytes:
        return render.error_event(error.body())

    async def seal(self) -> None:
        return None


class ChatCompletions:
    """The chat-completions dialect (`POST /v1/chat/completions`)."""

    def parse(self, body: Any) -> Parsed:
        return Parsed(parse_chat_body(body), body)

    def answer(self, trip: Trip, result: ChatResult, accounting: Accounting) -> dict[str, Any]:
        return render.completion_body(trip, result, accounting)

    def frames(self, trip: Trip) -> Frames:
        return ChatCompletionFrames(trip)


CHAT: Dialect = ChatCompletions()
