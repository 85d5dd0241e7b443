"""The usage writer's wire format between the gateway and its writer process (its
framing, `frame`, `read_frame` and `FrameReader`, is the span exporter's too).

The gateway's side must stay cheap, because it runs on the event loop's interpreter:
a record is the tuple of its fields already (`UsageRecord` is a named tuple, which
orjson writes once copied as a plain tuple in C) and a batch one orjson document.
Building rows, rollups and sketches happens in the writer process
(`gateway.workers.usage_child`), which rebuilds the `UsageRecord`s from the tuples.

Frames on the pipe are a 4-byte big-endian length and an orjson payload:
- gateway -> child: `[seq, batch_id, [[field, ...], ...], [[column, ...], ...]]`, fields
  in `UsageRecord` order, then the stored responses' rows the batch carries
  (`store.response_rows`, written in its transaction); `batch_id` names the batch for as
  long as it is unanswered (sent again to a new child with the same id, written at most
  once: `store.usage_batches`);
- child -> gateway: `[seq, written, error, seconds]`: records committed (0 or all),
  the SQLite error's text when the batch was refused (else null), and the seconds the
  transaction took in the child.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from store.request_log import logged_attempts
from store.response_rows import StoredRow, row_of
from store.usage import UsageRecord

if TYPE_CHECKING:
    import trio

HEADER = struct.Struct(">I")
# A frame larger than this is refused by the reader: a corrupt length, not a batch.
MAX_FRAME = 64 * 1024 * 1024

# Both writers (thread and process): a batch that finds the file locked past SQLite's busy
# timeout (another worker of `--workers N` holding a long write) is tried again this many
# times (after 0.1 s, 0.2 s, 0.3 s) before it counts as failed.
LOCKED_RETRIES = 3
LOCKED_BACKOFF_S = 0.1

FIELDS: tuple[str, ...] = UsageRecord._fields
_CREATED_AT = FIELDS.index("created_at")
_TAGS = FIELDS.index("tags")
_ATTEMPTS = FIELDS.index("attempts")


def frame(payload: bytes) -> bytes:
    """A payload with its length in front."""
    return HEADER.pack(len(payload)) + payload


def encode_batch(
    seq: int, batch_id: str, records: Sequence[UsageRecord], responses: Sequence[StoredRow] = ()
) -> bytes:
    """One framed batch: the fields of each record as a JSON array (datetimes as ISO
    8601 with their offset, which orjson writes in C), and the stored responses' rows."""
    values = [tuple(record) for record in records]
    return frame(orjson.dumps([seq, batch_id, values, responses]))


def decode_batch(payload: bytes) -> tuple[int, str, list[UsageRecord], list[StoredRow]]:
    """The child's side of `encode_batch`: (seq, batch id, records, stored responses)."""
    seq, batch_id, rows, responses = orjson.loads(payload)
    return (
        int(seq),
        str(batch_id),
        [_record(row) for row in rows],
        [row_of(values) for values in responses],
    )


def _record(values: list[Any]) -> UsageRecord:
    """A record from its fields as the wire's JSON holds them: the time, the tags and the
    attempts (objects) back to what the record holds."""
    if len(values) != len(FIELDS):
        raise ValueError(f"a usage record of {len(values)} fields, not {len(FIELDS)}")
    values[_CREATED_AT] = datetime.fromisoformat(values[_CREATED_AT])
    values[_TAGS] = tuple(values[_TAGS])
    values[_ATTEMPTS] = logged_attempts(values[_ATTEMPTS])
    return UsageRecord._make(values)


def encode_ack(seq: int, written: int, error: str | None, seconds: float) -> bytes:
    return frame(orjson.dumps([seq, written, error, seconds]))


# The child's argument for the PostgreSQL store, whose URL is in this variable.
POSTGRES_ARGUMENT = "postgres"
URL_VARIABLE = "GATEWAY_DATABASE_URL"


def is_locked(exc: Exception) -> bool:
    """Whether a SQLite error is another connection's lock (worth trying again)."""
    text = str(exc)
    return "locked" in text or "busy" in text


def decode_ack(payload: bytes) -> tuple[int, int, str | None, float]:
    seq, written, error, seconds = orjson.loads(payload)
    return int(seq), int(written), error, float(seconds)


def read_frame(stream: BinaryIO) -> bytes | None:
    """A child's next frame from a blocking pipe; None at the end of input (a cut frame
    is the end too: its sender died while sending it, and half a batch is not a batch)."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME:
        raise ValueError(f"frame of {length} bytes: the pipe is out of step")
    payload = stream.read(length)
    return payload if len(payload) == length else None


class FrameReader:
    """The gateway's side: frames from a child's output stream, as they complete."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def clear(self) -> None:
        self._buffer.clear()

    async def next(self, stream: trio.abc.ReceiveStream) -> bytes:
        """The next frame's payload; `EOFError` when the stream ends first or is out of
        step (a corrupt length)."""
        while True:
            if len(self._buffer) >= HEADER.size:
                (length,) = HEADER.unpack_from(self._buffer)
                if length > MAX_FRAME:
                    raise EOFError(f"frame of {length} bytes")
                end = HEADER.size + length
                if len(self._buffer) >= end:
                    payload = bytes(self._buffer[HEADER.size : end])
                    del self._buffer[:end]
                    return payload
            data = await stream.receive_some(65536)
            if not data:
                raise EOFError("end of the child's output")
            self._buffer += data
