"""The SSE decoder: the same events whatever the reads' sizes, and the chat-completions
stream's one-line events (taken whole, without the line rules) decoded exactly as the
line rules decode them."""

from __future__ import annotations

import json

import pytest

from streams.sse import SSEDecoder, SSEEvent

ODD_TEXT = 'a "quoted" \\ back\\slash, data: inside, \u00e9t\u00e9 \U0001f600 and \\n'
CHUNK = json.dumps({"choices": [{"delta": {"content": ODD_TEXT}}]}, ensure_ascii=False)
STREAM = (
    "data: " + CHUNK + "\n\n"
    "data:" + CHUNK + "\n\n"  # no space after the colon
    ": a comment\n\n"
    "id: 7\nretry: 1500\ndata: first line\ndata: second line\n\n"
    "data: after the id\n\n"
    "event: message_stop\ndata: {}\n\n"
    "data: " + CHUNK + "\r\n\r\n"
    "\n\n"
    "data: [DONE]\n\n"
    "data: not closed by a blank line\n"
).encode()


def decode(pieces: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    return [event for piece in pieces for event in decoder.feed(piece)]


def line_by_line(stream: bytes) -> list[SSEEvent]:
    """The stream fed one byte at a time: no read ever holds a whole event at once, so
    every event goes through the line rules."""
    return decode([stream[i : i + 1] for i in range(len(stream))])


EXPECTED = [
    SSEEvent(data=CHUNK),
    SSEEvent(data=CHUNK),
    SSEEvent(data="first line\nsecond line", id="7", retry=1500),
    SSEEvent(data="after the id", id="7", retry=1500),
    SSEEvent(data="{}", event="message_stop", id="7", retry=1500),
    SSEEvent(data=CHUNK, id="7", retry=1500),
    SSEEvent(data="[DONE]", id="7", retry=1500),
]


def test_the_line_rules_decode_every_field() -> None:
    assert line_by_line(STREAM) == EXPECTED


@pytest.mark.parametrize("size", [len(STREAM), 1000, 257, 64, 7])
def test_reads_of_any_size_give_the_same_events(size: int) -> None:
    pieces = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    assert decode(pieces) == EXPECTED


def test_whole_events_keep_their_text_exactly() -> None:
    events = decode([STREAM])
    assert json.loads(events[0].data)["choices"][0]["delta"]["content"] == ODD_TEXT
