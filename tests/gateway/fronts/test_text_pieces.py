"""A plain text delta handed to a door as its text (`Frames.text`, what a `Batched`
stream's text piece becomes) gives the very bytes `chunk(ChatChunk(text))` gives, in every
position of a stream: the first piece (the block opens), pieces of the open text, after a
tool call (a new text block), empty pieces, odd text. The doors' streams read pieces this
way since chat's own relay stopped making a chunk per delta."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from gateway.kernels.dialects import Answered, Frames
from gateway.messages.render import MessageEvents
from gateway.responses.events import ResponseEvents
from gateway.responses.input import parse_responses_body
from gateway.upstream.accounting import Accounting
from providers.catalog import CostBreakdown
from providers.types import ChatChunk, ToolCallDelta, Usage

ANSWERED = Answered("0f1e2d3c-4b5a", 1764000000, "gpt-4o-mini", 12, lambda a, t: {})
ACCOUNTING = Accounting(Usage(12, 20), CostBreakdown(0.1, 0.4, 0.5), None, 7)
REQUEST = parse_responses_body({"model": "gpt-4o-mini", "input": "Hi", "stream": True}, [])
CALL = ToolCallDelta(0, "call_1", "look_up", '{"q": "x"}')
# None: a tool call's chunk (always through `chunk`); a string: a text piece
SCRIPT: list[str | None] = ["", "Hel", "lo ", 'a "quote" \\ and\n', "", None, "après 😀", "100%s"]
ITEM_ID = re.compile(rb"(msg|fc)_[0-9a-f]{48}")

DOORS: dict[str, Callable[[], Frames]] = {
    "responses-sse": lambda: ResponseEvents(REQUEST, ANSWERED, sse=True),
    "responses-json-lines": lambda: ResponseEvents(REQUEST, ANSWERED, sse=False),
    "messages": lambda: MessageEvents(ANSWERED),
}


def stream(frames: Frames, *, as_text: bool) -> bytes:
    out = [frames.opening()]
    for piece in SCRIPT:
        if piece is None:
            out.append(frames.chunk(ChatChunk(tool_calls=(CALL,))))
        else:
            out.append(frames.text(piece) if as_text else frames.chunk(ChatChunk(piece)))
    out.append(frames.finish("stop", ACCOUNTING, ()))
    return ITEM_ID.sub(rb"\1_id", b"".join(out))


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_text_piece_is_the_chunk_of_its_text(door: str) -> None:
    by_chunk = stream(DOORS[door](), as_text=False)
    assert stream(DOORS[door](), as_text=True) == by_chunk
    assert b"look_up" in by_chunk and "après".encode() in by_chunk
