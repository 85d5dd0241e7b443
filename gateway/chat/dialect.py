"""Chat's side of the dialect seam (`gateway.kernels.dialects`): its own frames, and what
another door's dialect is told of an answer.

`ChatCompletionFrames` are the chat-completions stream as the `Frames` every stream body
renders through; `answered` gives another dialect the facts of a decided answer over core
types, with the gateway's metadata (`service`, `_gateway`) rendered as chat renders it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.chat import render
from gateway.chat.plan import prompt_estimate
from gateway.chat.trip import Trip
from gateway.kernels.dialects import Answered
from gateway.platform.errors import ApiError
from gateway.upstream.accounting import Accounting
from providers.types import ChatChunk
from streams.sse import DONE


def answered(trip: Trip) -> Answered:
    """What another dialect is told of `trip`'s answer (the race decided)."""

    def metadata(accounting: Accounting, tools_called: Sequence[str]) -> dict[str, Any]:
        return {
            "service": render.service_object(trip, accounting),
            "_gateway": render.gateway_metadata(trip, accounting, list(tools_called)),
        }

    return Answered(
        request_id=trip.request_id,
        created=trip.created,
        model=trip.target.model_id,
        prompt_tokens=prompt_estimate(trip),
        metadata=metadata,
    )


class ChatCompletionFrames:
    """Chat-completion chunks: the role first, a chunk per delta, the final chunk with
    the gateway's metadata, the usage chunk when asked for, then `[DONE]`."""

    content_type = "text/event-stream"

    def __init__(self, trip: Trip) -> None:
        self._trip = trip
        self._content = render.ContentFrames(trip)
        self._plain = self._content.plain

    def opening(self) -> bytes:
        return render.role_chunks(self._trip)

    def chunk(self, chunk: ChatChunk) -> bytes:
        """A chunk's frames; another choice's finish (`n` > 1) ends that choice at once
        (the first choice's is in the final chunk, with the gateway's metadata). A plain
        text delta of the first choice (most chunks) is its text spliced, at once."""
        text, plain = chunk.content, self._plain
        others = chunk.index or chunk.logprobs or chunk.tool_calls or chunk.moderation is not None
        if text and plain is not None and not others:
            return plain.render(text)
        return self._whole(chunk)

    def text(self, text: str) -> bytes:
        """`chunk(ChatChunk(text))` for a plain text delta of the first choice: its text
        spliced, without the chunk (none for the role's empty text)."""
        plain = self._plain
        if not text:
            return b""
        if plain is not None:
            return plain.render(text)
        return self._whole(ChatChunk(text))

    def _whole(self, chunk: ChatChunk) -> bytes:
        trip, frames = self._trip, b""
        if chunk.content or chunk.logprobs:
            frames += self._content.render(chunk)
        if chunk.tool_calls:
            frames += render.tool_calls_chunk(trip, chunk.tool_calls, chunk.index)
        if chunk.audio is not None:
            frames += render.audio_chunk(trip, chunk.audio, chunk.index)
        if chunk.moderation is not None:
            frames += render.moderation_chunk(trip, chunk.moderation)
        if chunk.finish_reason is not None and chunk.index:
            frames += render.finish_chunk(trip, chunk.finish_reason, chunk.index)
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
