"""The block table that both new dialects render (pure: no trio, no HTTP)."""

from __future__ import annotations

import pytest

from gateway.kernels.blocks import TRANSITIONS, Block, BlockSequencer, Piece, Step
from providers.types import ChatChunk, ToolCallDelta


def steps(*chunks: ChatChunk, close: bool = True) -> list[tuple[str, str]]:
    sequencer = BlockSequencer()
    events = [e for chunk in chunks for e in sequencer.feed(chunk)]
    if close:
        events += sequencer.close()
    return [(e.step.value, e.text or (e.call.arguments if e.call else "")) for e in events]


def call(index: int, arguments: str, *, first: bool = False) -> ChatChunk:
    piece = ToolCallDelta(
        index=index,
        id=f"call_{index}" if first else None,
        name="f" if first else None,
        arguments=arguments,
    )
    return ChatChunk(tool_calls=(piece,))


def test_text_opens_one_block_and_closes_it() -> None:
    assert steps(ChatChunk(content="Hel"), ChatChunk(content="lo")) == [
        ("open_text", ""),
        ("text", "Hel"),
        ("text", "lo"),
        ("close_text", ""),
    ]


def test_text_then_two_calls() -> None:
    assert steps(
        ChatChunk(content="Let me look."),
        call(0, '{"a"', first=True),
        call(0, ":1}"),
        call(1, "{}", first=True),
    ) == [
        ("open_text", ""),
        ("text", "Let me look."),
        ("close_text", ""),
        ("open_call", '{"a"'),
        ("args", '{"a"'),
        ("args", ":1}"),
        ("close_call", ""),
        ("open_call", "{}"),
        ("args", "{}"),
        ("close_call", ""),
    ]


def test_a_call_that_repeats_its_id_is_a_new_call() -> None:
    """Some upstreams send each call whole, each with its id: one block per call."""
    got = steps(call(0, "{}", first=True), call(0, "{}", first=True))
    assert [s for s, _ in got].count("open_call") == 2


def test_nothing_is_nothing() -> None:
    assert steps(ChatChunk(finish_reason="stop")) == []


def test_text_after_a_call_opens_a_new_text_block() -> None:
    got = [s for s, _ in steps(call(0, "{}", first=True), ChatChunk(content="done"))]
    assert got == ["open_call", "args", "close_call", "open_text", "text", "close_text"]


@pytest.mark.parametrize(("state", "piece"), list(TRANSITIONS))
def test_every_transition_ends_in_the_block_it_opened(state: Block, piece: Piece) -> None:
    actions, after = TRANSITIONS[(state, piece)]
    opened = [a for a in actions if a in (Step.OPEN_TEXT, Step.OPEN_CALL)]
    if opened:
        assert after is (Block.TEXT if opened[-1] is Step.OPEN_TEXT else Block.CALL)
    else:
        assert after is state


def test_text_in_an_open_text_block_is_the_table_s_row() -> None:
    """`feed`'s shortcut for the commonest chunk says what `TRANSITIONS` says."""
    sequencer = BlockSequencer()
    sequencer.feed(ChatChunk(content="a"))
    assert sequencer.state is Block.TEXT
    events = sequencer.feed(ChatChunk(content="b"))
    assert TRANSITIONS[(Block.TEXT, Piece.TEXT)] == ((Step.TEXT,), Block.TEXT)
    assert [(e.step, e.text) for e in events] == [(Step.TEXT, "b")]
    assert sequencer.state is Block.TEXT
    mixed = sequencer.feed(ChatChunk(content="c", tool_calls=call(0, "{", first=True).tool_calls))
    assert [e.step for e in mixed] == [Step.TEXT, Step.CLOSE_TEXT, Step.OPEN_CALL, Step.ARGS]
