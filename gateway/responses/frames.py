"""The Responses API's streamed events as prepared bytes (pure).

A streamed response's events differ from one response to the next only in a few values:
the sequence number, the item's id and place in `output`, the text, the response object.
Rendering a dict and a JSON document per event was most of what the door's stream cost
beyond chat's; instead each kind of event is a bytes format prepared once per process
and framing (`EventFormats`: `SSE` or `LINES`), and an event is its format with those
values spliced in (`%d` a number, `%b` JSON already rendered). A text is rendered to JSON
once and spliced into every event that repeats it (`output_text.done`, `content_part.done`,
`output_item.done`). The bytes are exactly what `dumps` of the event's dict gives, key for
key (`tests/gateway/fronts/test_response_frames.py`).

A delta's format is prepared when its item opens (`delta_template`): the item's id and
place are fixed for all its deltas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import orjson

from gateway.platform.jsonio import dumps

EMPTY_LIST = b"[]"


def json_string(text: str) -> bytes:
    """`text` as a JSON string: orjson itself, `dumps` for what it refuses (a lone
    surrogate)."""
    try:
        return orjson.dumps(text)
    except TypeError:
        return dumps(text)


def framed(kind: str, data: bytes, *, sse: bool) -> bytes:
    """`data` (one line of JSON, or a format of one) as an SSE event named `kind`
    (`streams.sse.encode_event`'s bytes) or as a JSON line."""
    if sse:
        return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"
    return data + b"\n"


def _event(kind: str, fields: bytes, *, sse: bool, sequence: bytes = b"%d") -> bytes:
    """The format of an event of `kind`: its type, `sequence` the placeholder of its
    sequence number, then `fields` (the rest of the object's members, themselves with
    placeholders)."""
    head = b'{"type":' + dumps(kind) + b',"sequence_number":' + sequence
    return framed(kind, head + fields + b"}", sse=sse)


@attrs.frozen
class EventFormats:
    """Every fixed-shape event of one framing, as a bytes format; the placeholders are
    in the order the methods of `ResponseEvents` fill them."""

    created: bytes  # seq, response
    in_progress: bytes  # seq, response
    completed: bytes  # seq, response
    incomplete: bytes  # seq, response
    failed: bytes  # seq, response
    item_added: bytes  # seq, output_index, item
    item_done: bytes  # seq, output_index, item
    part_added: bytes  # seq, item id, output_index
    text_done: bytes  # seq, item id, output_index, text, logprobs
    part_done: bytes  # seq, item id, output_index, part
    arguments_done: bytes  # seq, item id, output_index, name, arguments
    # deltas, in two steps: `% (item id, output_index)` when the item opens gives the
    # item's `DeltaTemplate` format (seq, delta)
    text_delta: bytes
    arguments_delta: bytes

    @classmethod
    def of(cls, *, sse: bool) -> EventFormats:
        def response(kind: str) -> bytes:
            return _event(f"response.{kind}", b',"response":%b', sse=sse)

        item = b',"output_index":%d,"item":%b'
        where = b',"item_id":"%b","output_index":%d'
        delta = b',"delta":%%b'
        return cls(
            created=response("created"),
            in_progress=response("in_progress"),
            completed=response("completed"),
            incomplete=response("incomplete"),
            failed=response("failed"),
            item_added=_event("response.output_item.added", item, sse=sse),
            item_done=_event("response.output_item.done", item, sse=sse),
            part_added=_event(
                "response.content_part.added",
                where + b',"content_index":0,"part":' + text_part_json(b'""', EMPTY_LIST),
                sse=sse,
            ),
            text_done=_event(
                "response.output_text.done",
                where + b',"content_index":0,"text":%b,"logprobs":%b',
                sse=sse,
            ),
            part_done=_event(
                "response.content_part.done", where + b',"content_index":0,"part":%b', sse=sse
            ),
            arguments_done=_event(
                "response.function_call_arguments.done",
                where + b',"name":%b,"arguments":%b',
                sse=sse,
            ),
            text_delta=_event(
                "response.output_text.delta",
                where + b',"content_index":0' + delta + b',"logprobs":[]',
                sse=sse,
                sequence=b"%%d",
            ),
            arguments_delta=_event(
                "response.function_call_arguments.delta", where + delta, sse=sse, sequence=b"%%d"
            ),
        )


def text_part_json(text: bytes, logprobs: bytes) -> bytes:
    """`render.text_part` rendered, from its text and log probabilities as JSON."""
    return (
        b'{"type":"output_text","text":' + text + b',"annotations":[],"logprobs":' + logprobs + b"}"
    )


def message_item_json(item_id: bytes, status: bytes, part: bytes | None) -> bytes:
    """`render.message_item` rendered: its one part as JSON, or None while it streams."""
    content = b"[]" if part is None else b"[" + part + b"]"
    return b'{"id":"%b","type":"message","status":"%b","role":"assistant","content":%b}' % (
        item_id,
        status,
        content,
    )


SSE = EventFormats.of(sse=True)
LINES = EventFormats.of(sse=False)


@attrs.frozen
class DeltaTemplate:
    """One kind of delta event of one item: `{"type": ..., "sequence_number": N,
    **fields, "<delta field>": TEXT, **after}`, framed as an SSE event or a JSON line;
    byte for byte what `dumps` of that dict gives."""

    format: bytes  # `%d` the sequence number, `%b` the delta's JSON string

    def render(self, sequence: int, delta: str) -> bytes:
        try:  # orjson itself, one call fewer per delta; `dumps` for what it refuses
            return self.format % (sequence, orjson.dumps(delta))
        except TypeError:  # a lone surrogate
            return self.format % (sequence, dumps(delta))


def delta_template(
    kind: str,
    fields: Mapping[str, Any],
    delta_field: str,
    after: Mapping[str, Any] | None = None,
    *,
    sse: bool,
) -> DeltaTemplate:
    assert fields, "a delta event names its item"
    middle = b"," + _members(fields) + b"," + dumps(delta_field) + b":%b"
    tail = b"," + _members(after) if after else b""
    return DeltaTemplate(_event(kind, middle + tail, sse=sse))


def item_deltas(format: bytes, item_id: bytes, output_index: int) -> DeltaTemplate:
    """The deltas of one item, from `EventFormats.text_delta` or `.arguments_delta`."""
    return DeltaTemplate(format % (item_id, output_index))


def _members(fields: Mapping[str, Any]) -> bytes:
    """An object's members as JSON without the braces, `%` escaped for a format."""
    return dumps(dict(fields))[1:-1].replace(b"%", b"%%")
