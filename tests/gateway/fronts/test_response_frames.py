"""The Responses API's streamed events from prepared formats (`gateway.responses.frames`):
every event is byte for byte what rendering its dict whole gives, and says what the
documented sequence says, whatever the text and the calls hold (quotes, backslashes,
newlines, unicode, `%` signs a bytes format could mistake for its own), framed as SSE or
as the WebSocket mode's JSON lines."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.kernels.dialects import Answered
from gateway.platform.jsonio import dumps
from gateway.responses.events import ResponseEvents
from gateway.responses.input import parse_responses_body
from gateway.responses.render import function_call_item, message_item, response_object, text_part
from gateway.upstream.accounting import Accounting
from providers.catalog import CostBreakdown
from providers.types import ChatChunk, ToolCallDelta, Usage
from streams.sse import SSEDecoder

ODD = [
    'She said "data: [DONE]" \\ then\n\n',
    "data: {} été 😀 \u2028 </script> ",
    "100%d %b %% %s done",
]
NAME, ARGUMENTS = "look%sup_%d", ['{"q": "50%', ' \\"off\\"', ' é"}']
META = {"service": {"cost": {"total": 0.5}}, "_gateway": {"tools_called": ["x"]}}
ANSWERED = Answered("0f1e2d3c-4b5a", 1764000000, "gpt-4o-mini", 12, lambda a, t: META)
ACCOUNTING = Accounting(Usage(12, 20), CostBreakdown(0.1, 0.4, 0.5), None, 7)


REQUEST = parse_responses_body(
    {"model": "gpt-4o-mini", "input": "Hi", "stream": True, "user": "a %s user"}, []
)


def stream_of(sse: bool, *, with_call: bool) -> tuple[ResponseEvents, list[bytes]]:
    events = ResponseEvents(REQUEST, ANSWERED, sse=sse)
    frames = [events.opening(), *(events.chunk(ChatChunk(content=text)) for text in ODD)]
    if with_call:
        for i, piece in enumerate(ARGUMENTS):
            call = ToolCallDelta(0, "call_7" if i == 0 else None, NAME if i == 0 else None, piece)
            frames.append(events.chunk(ChatChunk(tool_calls=(call,))))
    frames.append(events.finish("tool_calls" if with_call else "stop", ACCOUNTING, ()))
    return events, frames


def data_of(frames: list[bytes], sse: bool) -> list[bytes]:
    joined = b"".join(frames)
    if not sse:
        return joined.splitlines()
    decoder = SSEDecoder()
    decoded = decoder.feed(joined)
    assert all(event.event == orjson.loads(event.data)["type"] for event in decoded)
    return [event.data.encode() for event in decoded]


@pytest.mark.parametrize("with_call", [False, True])
@pytest.mark.parametrize("sse", [True, False])
def test_each_event_is_its_dict_rendered_whole(sse: bool, with_call: bool) -> None:
    _, frames = stream_of(sse, with_call=with_call)
    for data in data_of(frames, sse):
        assert dumps(orjson.loads(data)) == data


@pytest.mark.parametrize("sse", [True, False])
def test_the_events_say_the_documented_sequence(sse: bool) -> None:
    stream, frames = stream_of(sse, with_call=True)
    events = [orjson.loads(data) for data in data_of(frames, sse)]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    text, arguments = "".join(ODD), "".join(ARGUMENTS)
    msg, fc = events[2]["item"]["id"], events[2 + 2 + len(ODD) + 3]["item"]["id"]
    where = {"item_id": msg, "output_index": 0, "content_index": 0}
    message = message_item(msg, text, "completed")
    call = function_call_item(fc, "call_7", NAME, arguments, "completed")
    in_progress = response_object(REQUEST, ANSWERED, status="in_progress", output=[])
    expected: list[dict[str, Any]] = [
        {"type": "response.created", "response": in_progress},
        {"type": "response.in_progress", "response": in_progress},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": message_item(msg, None, "in_progress"),
        },
        {"type": "response.content_part.added", **where, "part": text_part("")},
        *({"type": "response.output_text.delta", **where, "delta": t, "logprobs": []} for t in ODD),
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": text_part(text)},
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**call, "arguments": "", "status": "in_progress"},
        },
        *(
            {
                "type": "response.function_call_arguments.delta",
                "item_id": fc,
                "output_index": 1,
                "delta": piece,
            }
            for piece in ARGUMENTS
        ),
        {
            "type": "response.function_call_arguments.done",
            "item_id": fc,
            "output_index": 1,
            "name": NAME,
            "arguments": arguments,
        },
        {"type": "response.output_item.done", "output_index": 1, "item": call},
        {"type": "response.completed", "response": stream.final},
    ]
    assert [{k: v for k, v in e.items() if k != "sequence_number"} for e in events] == expected
    assert stream.final is not None and stream.final["output"] == [message, call]
    assert stream.final["usage"]["output_tokens"] == 20 and stream.final["service"]
