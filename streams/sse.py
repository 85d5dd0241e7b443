"""Server-Sent Events: an incremental decoder and the encoder the gateway writes with.

The decoder is a pure object: feed it bytes as they arrive from the network, in chunks of
any size, and it returns the complete events found so far. It follows the WHATWG
event-stream rules that matter for AI vendors: `data:` lines of one event are joined with
newlines, `event:` names the event, `id:` and `retry:` are kept, comments (`:`) are
skipped, and lines may end in CRLF, LF or CR.
"""

from __future__ import annotations

from typing import NamedTuple

DONE = b"data: [DONE]\n\n"


class SSEEvent(NamedTuple):
    """One event. A named tuple, not a frozen dataclass: as immutable, and made in a
    quarter of the time (a frozen dataclass sets each field through `object.__setattr__`),
    which counts at one per streamed chunk."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


def encode_data(payload: bytes | str) -> bytes:
    """One `data:` event holding `payload`, which must be a single line (compact JSON)."""
    if isinstance(payload, str):
        payload = payload.encode()
    return b"data: " + payload + b"\n\n"


def encode_event(event: str, payload: bytes | str) -> bytes:
    """A named event (`event:` line then `data:`), as Anthropic-style streams use."""
    if isinstance(payload, str):
        payload = payload.encode()
    return b"event: " + event.encode() + b"\ndata: " + payload + b"\n\n"


class SSEDecoder:
    """Turns a byte stream into `SSEEvent`s; keeps a partial line between feeds."""

    __slots__ = ("_buffer", "_data", "_event", "_id", "_retry")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume `chunk`; return every event it completed, in order."""
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            # A lone CR at the very end may be the first half of a CRLF: wait for more.
            keep_cr = buffer.endswith(b"\r")
            if keep_cr:
                buffer = buffer[:-1]
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if keep_cr:
                buffer += b"\r"
        events: list[SSEEvent] = []
        if not self._data and self._event is None:
            buffer = self._whole_data_events(buffer, events)
        lines = buffer.split(b"\n")
        self._buffer = lines.pop()
        for raw in lines:
            event = self._line(raw.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        return events

    def _whole_data_events(self, buffer: bytes, events: list[SSEEvent]) -> bytes:
        """Take the complete events at the head of `buffer` that are one `data:` line
        each (every event of the chat-completions stream) into `events`, without the
        line-by-line rules; return the rest, which starts at an event's first line.

        Only called between events (nothing of an event pending), so an event taken
        here is exactly what the line rules would make of it: one `data:` line, a
        blank line, `event` "message", the last `id` and `retry`.
        """
        blocks = buffer.split(b"\n\n")
        rest = blocks.pop()  # after the last blank line: an event still arriving
        # `tuple.__new__` is what `SSEEvent._make` does, without its Python frame.
        new, last_id, retry, append = tuple.__new__, self._id, self._retry, events.append
        for taken, block in enumerate(blocks):
            if not block.startswith(b"data:") or b"\n" in block:
                # another field, a comment, several lines: the line rules from here
                return b"\n\n".join([*blocks[taken:], rest])
            value = block[6:] if block.startswith(b" ", 5) else block[5:]
            data = value.decode("utf-8", "replace")
            append(new(SSEEvent, (data, "message", last_id, retry)))
        return rest

    def close(self) -> list[SSEEvent]:
        """End of stream: an event not closed by a blank line is discarded, per the spec."""
        self._buffer = b""
        self._data.clear()
        self._event = None
        return []

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data and self._event is None:
            return None
        event = SSEEvent(
            data="\n".join(self._data),
            event=self._event or "message",
            id=self._id,
            retry=self._retry,
        )
        self._data.clear()
        self._event = None
        return event
