"""Delta events from prepared bytes (`gateway.responses.frames`, `gateway.kernels.splice`
in `gateway.messages.render`): the very bytes an event rendered whole gives, whatever the
text holds, and a stream rendered through them is the stream rendered event by event."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.kernels.dialects import Answered
from gateway.kernels.splice import Splice
from gateway.messages.render import JSON_DELTA, TEXT_DELTA, MessageEvents, delta_splice
from gateway.platform.jsonio import dumps
from gateway.responses.frames import delta_template
from providers.types import ChatChunk, ToolCallDelta
from streams.sse import SSEDecoder, encode_event

TEXTS = ["", "plain", 'quotes " and \\ backslash', "new\nline\ttab", "é 日本 🎉", "\u2028\x00"]
KIND = "response.output_text.delta"
FIELDS = {"item_id": "msg_1", "output_index": 3, "content_index": 0}


def whole(kind: str, sequence: int, fields: dict[str, Any], sse: bool) -> bytes:
    data = dumps({"type": kind, "sequence_number": sequence, **fields})
    return encode_event(kind, data) if sse else data + b"\n"


@pytest.mark.parametrize("sse", [True, False])
@pytest.mark.parametrize("text", TEXTS)
def test_a_text_delta_is_the_event_rendered_whole(text: str, sse: bool) -> None:
    template = delta_template(KIND, FIELDS, "delta", {"logprobs": []}, sse=sse)
    for sequence in (0, 7, 12345):
        expected = whole(KIND, sequence, {**FIELDS, "delta": text, "logprobs": []}, sse)
        assert template.render(sequence, text) == expected


@pytest.mark.parametrize("sse", [True, False])
def test_an_arguments_delta_ends_with_its_delta(sse: bool) -> None:
    kind = "response.function_call_arguments.delta"
    where = {"item_id": "fc_1", "output_index": 1}
    template = delta_template(kind, where, "delta", sse=sse)
    expected = whole(kind, 4, {**where, "delta": '{"city": "Par'}, sse)
    assert template.render(4, '{"city": "Par') == expected


@pytest.mark.parametrize("kind", [TEXT_DELTA, JSON_DELTA])
@pytest.mark.parametrize("text", TEXTS)
def test_a_message_delta_is_the_event_rendered_whole(text: str, kind: tuple[str, str]) -> None:
    delta_type, field = kind
    event = {"type": "content_block_delta", "index": 2, "delta": {"type": delta_type, field: text}}
    assert delta_splice(2, kind).render(text) == encode_event("content_block_delta", dumps(event))


def test_a_splice_refuses_an_event_without_its_mark() -> None:
    with pytest.raises(AssertionError):
        Splice.around(lambda text: b"{}")


def call(index: int, arguments: str, *, first: bool = False) -> ChatChunk:
    piece = ToolCallDelta(
        index=index,
        id=f"toolu_{index}" if first else None,
        name="lookup" if first else None,
        arguments=arguments,
    )
    return ChatChunk(tool_calls=(piece,))


def test_a_streamed_message_is_its_events_in_order() -> None:
    """Text, a call, text again: every delta where the block table puts it, each block's
    deltas with that block's index, the text pieces that continue a block included."""
    answered = Answered("req-1", 1, "gpt-4o-mini", 5, lambda accounting, tools: {})
    frames = MessageEvents(answered)
    chunks = [
        ChatChunk(content="Let "),
        ChatChunk(content='me "look"'),
        call(0, '{"q": ', first=True),
        call(0, '"x"}'),
        ChatChunk(content="Found\n"),
        ChatChunk(content="it."),
    ]
    body = frames.opening() + b"".join(frames.chunk(chunk) for chunk in chunks)
    events = [(e.event, orjson.loads(e.data)) for e in SSEDecoder().feed(body)]
    deltas = [(e["index"], e["delta"]) for kind, e in events if kind == "content_block_delta"]
    assert deltas == [
        (0, {"type": "text_delta", "text": "Let "}),
        (0, {"type": "text_delta", "text": 'me "look"'}),
        (1, {"type": "input_json_delta", "partial_json": '{"q": '}),
        (1, {"type": "input_json_delta", "partial_json": '"x"}'}),
        (2, {"type": "text_delta", "text": "Found\n"}),
        (2, {"type": "text_delta", "text": "it."}),
    ]
    assert [kind for kind, _ in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
    ]
