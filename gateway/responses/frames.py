"""Delta events rendered from templates (pure): a streamed response's many deltas differ
only in their sequence number and their text, so each kind's bytes around those two are
rendered once when its item opens, instead of a dict and a JSON document per delta."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from gateway.platform.jsonio import dumps


@attrs.frozen
class DeltaTemplate:
    """One kind of delta event of one item: `{"type": ..., "sequence_number": N,
    **fields, "<delta field>": TEXT, **after}`, framed as an SSE event or a JSON line;
    byte for byte what `dumps` of that dict gives."""

    head: bytes  # the framing and the event up to its sequence number
    middle: bytes  # from after the number up to the delta's value
    tail: bytes  # after the delta's value, the framing's end included

    def render(self, sequence: int, delta: str) -> bytes:
        return b"".join((self.head, b"%d" % sequence, self.middle, dumps(delta), self.tail))


def delta_template(
    kind: str,
    fields: Mapping[str, Any],
    delta_field: str,
    after: Mapping[str, Any] | None = None,
    *,
    sse: bool,
) -> DeltaTemplate:
    assert fields, "a delta event names its item"
    lead = dumps({"type": kind})[:-1] + b',"sequence_number":'
    middle = b"," + dumps(dict(fields))[1:-1] + b"," + dumps(delta_field) + b":"
    tail = (b"," + dumps(dict(after))[1:-1] if after else b"") + b"}"
    if sse:  # as `streams.sse.encode_event` frames it
        framing = b"event: " + kind.encode() + b"\ndata: "
        return DeltaTemplate(framing + lead, middle, tail + b"\n\n")
    return DeltaTemplate(lead, middle, tail + b"\n")
