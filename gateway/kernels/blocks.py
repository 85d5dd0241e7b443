"""A streamed answer as a sequence of blocks opened and closed in order (pure).

The Responses API streams *output items* (a message, a function call) and the Messages
API streams *content blocks* (text, tool use): in both, one block is open at a time, a
text delta goes to the open text block (opening one if needed) and a tool call's pieces
to its own block. Canonical chunks carry no such structure (a chunk has text and/or
pieces of calls by index), so this module derives it once, as a state table in h11's
style, and each dialect renders the steps in its own events.

    state   piece            steps                                   next state
    NONE    text             open_text, text                         TEXT
    TEXT    text             text                                    TEXT
    CALL    text             close_call, open_text, text             TEXT
    NONE    new call         open_call, args                         CALL
    TEXT    new call         close_text, open_call, args             CALL
    CALL    new call         close_call, open_call, args             CALL
    CALL    same call        args                                    CALL
    any     end              close_<open block>                      NONE

A call piece whose `index` differs from the open call's is a new call. Pieces of a call
that never opened (no name yet) open it anyway, with the name unknown (`""`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator

import attrs

from providers.types import ChatChunk, ToolCallDelta


class Block(enum.Enum):
    NONE = "none"
    TEXT = "text"
    CALL = "call"


class Piece(enum.Enum):
    TEXT = "text"
    NEW_CALL = "new_call"
    SAME_CALL = "same_call"


class Step(enum.Enum):
    OPEN_TEXT = "open_text"
    TEXT = "text"
    CLOSE_TEXT = "close_text"
    OPEN_CALL = "open_call"
    ARGS = "args"
    CLOSE_CALL = "close_call"


TRANSITIONS: dict[tuple[Block, Piece], tuple[tuple[Step, ...], Block]] = {
    (Block.NONE, Piece.TEXT): ((Step.OPEN_TEXT, Step.TEXT), Block.TEXT),
    (Block.TEXT, Piece.TEXT): ((Step.TEXT,), Block.TEXT),
    (Block.CALL, Piece.TEXT): ((Step.CLOSE_CALL, Step.OPEN_TEXT, Step.TEXT), Block.TEXT),
    (Block.NONE, Piece.NEW_CALL): ((Step.OPEN_CALL, Step.ARGS), Block.CALL),
    (Block.TEXT, Piece.NEW_CALL): ((Step.CLOSE_TEXT, Step.OPEN_CALL, Step.ARGS), Block.CALL),
    (Block.CALL, Piece.NEW_CALL): ((Step.CLOSE_CALL, Step.OPEN_CALL, Step.ARGS), Block.CALL),
    (Block.CALL, Piece.SAME_CALL): ((Step.ARGS,), Block.CALL),
}
CLOSING: dict[Block, tuple[Step, ...]] = {
    Block.NONE: (),
    Block.TEXT: (Step.CLOSE_TEXT,),
    Block.CALL: (Step.CLOSE_CALL,),
}


@attrs.frozen
class BlockEvent:
    """One step: `text` for TEXT, the call's piece for OPEN_CALL and ARGS."""

    step: Step
    text: str = ""
    call: ToolCallDelta | None = None


class BlockSequencer:
    """Feeds canonical chunks through `TRANSITIONS`; see the module docstring."""

    def __init__(self) -> None:
        self.state = Block.NONE
        self._call_index: int | None = None

    def continued_text(self, chunk: ChatChunk) -> str:
        """`chunk`'s text when the chunk is the table's (TEXT, text) row: a piece of the
        open text block and nothing else, one TEXT step; "" otherwise (then `feed` it).
        Most chunks of a stream are; a dialect renders them straight from its prepared
        bytes, with no step object or list made for them (the per-delta cost of both
        dialects)."""
        if self.state is Block.TEXT and not chunk.tool_calls:
            return chunk.content or ""
        return ""

    def feed(self, chunk: ChatChunk) -> list[BlockEvent]:
        text = self.continued_text(chunk)
        if text:
            return [BlockEvent(Step.TEXT, text=text)]
        events: list[BlockEvent] = []
        if chunk.content:
            events.extend(self._step(Piece.TEXT, text=chunk.content))
        for piece in chunk.tool_calls:
            same = self.state is Block.CALL and piece.index == self._call_index
            kind = Piece.SAME_CALL if same and piece.id is None else Piece.NEW_CALL
            self._call_index = piece.index
            events.extend(self._step(kind, call=piece))
        return events

    def close(self) -> list[BlockEvent]:
        """The steps that close the open block (the stream ended)."""
        steps, self.state = CLOSING[self.state], Block.NONE
        return [BlockEvent(step) for step in steps]

    def _step(
        self, piece: Piece, *, text: str = "", call: ToolCallDelta | None = None
    ) -> Iterator[BlockEvent]:
        steps, self.state = TRANSITIONS[(self.state, piece)]
        for step in steps:
            if step is Step.TEXT:
                yield BlockEvent(step, text=text)
            elif step in (Step.OPEN_CALL, Step.ARGS):
                yield BlockEvent(step, call=call)
            else:
                yield BlockEvent(step)
