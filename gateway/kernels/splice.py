"""An event rendered once around one JSON string (pure): the bytes of a streamed delta.

A streamed answer's many delta events differ only in their text (and, in the Responses
API, a sequence number). Rendering a dict and a JSON document per delta is most of what a
delta costs; instead, an event is rendered once per block with a mark where the text
goes, cut at the mark, and each delta is the text's JSON string spliced between the two
halves: the very bytes the whole event would be (`tests/gateway/fronts/test_frames.py`).
Chat's stream (`gateway.chat.render.ContentFrames`) and the front doors' share it.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson

from gateway.platform.jsonio import dumps

# No id, name, model or number of an event holds a NUL, so the mark is found only where
# the text goes.
MARK = "\x00the delta\x00"
_MARK_JSON = dumps(MARK)


class Splice:
    """The bytes before and after a text's JSON string in one kind of event."""

    __slots__ = ("after", "before")

    def __init__(self, before: bytes, after: bytes) -> None:
        self.before, self.after = before, after

    @classmethod
    def around(cls, render: Callable[[str], bytes]) -> Splice:
        """The event `render(MARK)` gives, cut where the mark is."""
        whole = render(MARK)
        before, found, after = whole.partition(_MARK_JSON)
        assert found and _MARK_JSON not in after, "the mark is in the event once"
        return cls(before, after)

    def render(self, text: str) -> bytes:
        try:  # orjson itself, one call fewer per delta; `dumps` for what it refuses
            return self.before + orjson.dumps(text) + self.after
        except TypeError:  # a lone surrogate
            return self.before + dumps(text) + self.after
