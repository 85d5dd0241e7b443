"""Request contexts that wrap another one, and the faults applied to a finished answer.

A handler sees one `SimContext`. Two wrappers change only where its fault comes from:
`OneRequestFault` (the fault of an `x-sim-fault` header, for one request) and
`RecordingContext` (remembers which fault the handler took, so the server can apply
`reset` and `malformed` once the handler has answered). Both forward everything else
through `DelegatingContext`, so a method added to `SimContext` is forwarded once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

import attrs

from providers.sim.audio import SimAudio
from providers.sim.core import ConnectionReset, Fault, SimContext, SimResponse, SimStream
from providers.sim.faults import FaultBook

# Not JSON, in every text stream format the vendors use (an SSE event, a JSON line).
MALFORMED_EVENT = b'data: {"choices": [{"delta": {"content": "cut\n\n'
_TEXT_STREAMS = ("text/event-stream", "application/json", "application/x-ndjson")


class DelegatingContext(SimContext):
    """Every method of `inner`, unchanged; subclasses override what they change."""

    def __init__(self, inner: SimContext) -> None:
        self._inner = inner

    def reply_tokens(
        self, prompt: str, max_tokens: int | None, schema: Mapping[str, Any] | None = None
    ) -> list[str]:
        return self._inner.reply_tokens(prompt, max_tokens, schema)

    def fault(self, model: str, vendor: str) -> Fault | None:
        return self._inner.fault(model, vendor)

    def pace(self, tokens: list[str], fault: Fault | None) -> AsyncGenerator[list[str], None]:
        return self._inner.pace(tokens, fault)

    async def pace_whole(self, tokens: list[str], fault: Fault | None) -> None:
        await self._inner.pace_whole(tokens, fault)

    def next_transcript(self) -> str | None:
        return self._inner.next_transcript()

    def audio(self) -> SimAudio:
        return self._inner.audio()


class OneRequestFault(DelegatingContext):
    """The server's context with the fault of an `x-sim-fault` header for one request."""

    def __init__(self, inner: SimContext, faults: FaultBook, fault: Fault) -> None:
        super().__init__(inner)
        self._faults = faults
        self._fault = fault

    def fault(self, model: str, vendor: str) -> Fault | None:
        return self._fault if self._faults.fires_once(self._fault) else None


class RecordingContext(DelegatingContext):
    """A request's context that remembers the fault the handler took."""

    def __init__(self, inner: SimContext) -> None:
        super().__init__(inner)
        self.taken: Fault | None = None

    def fault(self, model: str, vendor: str) -> Fault | None:
        taken = self._inner.fault(model, vendor)
        if taken is not None:
            self.taken = taken
        return taken


def after_fault(answer: SimResponse | SimStream, fault: Fault | None) -> SimResponse | SimStream:
    """Apply what a fault does to a finished answer: reset the connection, or garble it."""
    if fault is None:
        return answer
    if fault.reset:
        raise ConnectionReset("simulated connection reset")
    if not fault.malformed:
        return answer
    if isinstance(answer, SimStream):
        if answer.content_type.startswith(_TEXT_STREAMS):
            return attrs.evolve(answer, chunks=_with_malformed_event(answer.chunks))
        return answer
    if answer.status < 400 and answer.content_type.startswith("application/json"):
        return attrs.evolve(answer, body=answer.body[: len(answer.body) // 2])
    return answer


async def _with_malformed_event(chunks: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
    """The stream's chunks with a malformed event after the first one."""
    try:
        first = True
        async for data in chunks:
            yield data
            if first:
                first = False
                yield MALFORMED_EVENT
    finally:
        await aclose_chunks(chunks)


async def aclose_chunks(chunks: AsyncIterator[bytes]) -> None:
    """Close a stream's iterator (an async generator) so its cleanup runs now."""
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()
