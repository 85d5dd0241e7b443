"""What a fault does to an answer once the handler has made it (`Fault.reset`,
`Fault.malformed`): reset the connection, or garble the answer the way a broken upstream
does (half a JSON body, a stream event that is not JSON)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

import attrs

from providers.sim.core import Answer, ConnectionReset, Fault, SimStream, SimUpgrade

# Not JSON, in every text stream format the vendors use (an SSE event, a JSON line).
MALFORMED_EVENT = b'data: {"choices": [{"delta": {"content": "cut\n\n'
_TEXT_STREAMS = ("text/event-stream", "application/json", "application/x-ndjson")


def after_fault(answer: Answer, fault: Fault | None) -> Answer:
    """Apply what a fault does to a finished answer: reset the connection, or garble it."""
    if fault is None or isinstance(answer, SimUpgrade):
        return answer  # a WebSocket session applies its fault itself
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
        await aclose_stream(chunks)


async def aclose_stream(chunks: AsyncIterator[bytes]) -> None:
    """Close a stream's iterator (an async generator) so its cleanup runs now."""
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()
