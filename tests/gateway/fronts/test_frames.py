"""Delta events from templates (`gateway.responses.frames`): the very bytes an event
rendered whole gives, whatever the text holds."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.platform.jsonio import dumps
from gateway.responses.frames import delta_template
from streams.sse import encode_event

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
