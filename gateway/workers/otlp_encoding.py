"""OTLP/protobuf for the gateway's span rows, written straight from the rows.

Why not the SDK's encoder: it needs an SDK `ReadableSpan` per span and then builds a
protobuf message per span, attribute and value (some 60-90 microseconds a span here, on
the 2 cores the gateway shares with its export process). The rows already hold every
fact of a span, so this writes the `ExportTraceServiceRequest` bytes from them directly:
the protobuf wire format of the few message types a span of ours uses, fields in number
order as the protobuf runtime writes them, so the bytes are those the SDK's
`encode_spans(...).SerializePartialToString()` makes for the same spans
(`tests/operator/test_otlp_encoding.py` checks this byte for byte).

The resource and the instrumentation scope are the same for every span: they are encoded
once (by the SDK's own encoder, at the export process's start) and passed in as bytes.

A row is `gateway.platform.tracing.Span.row`: `[name, kind, trace_high, trace_low,
span_id, parent_id, remote_parent, start_ns, end_ns, attributes, error]`, ids as
unsigned 64-bit integers (the trace id in two halves), times in Unix nanoseconds.
"""

from __future__ import annotations

import functools
import logging
import struct
from collections.abc import Mapping, Sequence
from typing import Any

logger = logging.getLogger(__name__)

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# Wire types.
_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_FIXED64_LE = struct.Struct("<Q")
_DOUBLE = struct.Struct("<d")
_FIXED32_LE = struct.Struct("<I")
# `SpanFlags`: the parent's is-remote bit is known (always), and set.
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200
# `Status.code`: what an ended span of ours is when it carries no error, and with one.
_STATUS_UNSET, _STATUS_ERROR = 0, 2


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def _tag(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _varint(value: int) -> bytes:
    """Base-128, least significant group first; a negative int64 as its two's complement
    in 64 bits (ten bytes), as protobuf writes it."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_delimited(tag: bytes, payload: bytes) -> bytes:
    return tag + _varint(len(payload)) + payload


# The tags a span uses, computed once.
_SPAN_TRACE_ID = _tag(1, _LEN) + b"\x10"  # 16 bytes
_SPAN_ID = _tag(2, _LEN) + b"\x08"  # 8 bytes
_SPAN_PARENT_ID = _tag(4, _LEN) + b"\x08"
_SPAN_NAME = _tag(5, _LEN)
_SPAN_KIND = _tag(6, _VARINT)
_SPAN_START = _tag(7, _FIXED64)
_SPAN_END = _tag(8, _FIXED64)
_SPAN_ATTRIBUTE = _tag(9, _LEN)
_SPAN_STATUS = _tag(15, _LEN)
_SPAN_FLAGS = _tag(16, _FIXED32)
_STATUS_MESSAGE = _tag(2, _LEN)
_STATUS_CODE = _tag(3, _VARINT)
_KEY = _tag(1, _LEN)
_VALUE = _tag(2, _LEN)
_STRING, _BOOL, _INT = _tag(1, _LEN), _tag(2, _VARINT), _tag(3, _VARINT)
_DOUBLE_VALUE, _ARRAY = _tag(4, _FIXED64), _tag(5, _LEN)
_KVLIST, _BYTES = _tag(6, _LEN), _tag(7, _LEN)
_SCOPE_VERSION = _tag(2, _LEN)
# `ArrayValue.values`, `KeyValueList.values`, `Resource.attributes`
_LIST_ITEM = _tag(1, _LEN)
_SCOPE_SCOPE, _SCOPE_SPANS = _tag(1, _LEN), _tag(2, _LEN)
_RESOURCE_RESOURCE, _RESOURCE_SCOPE_SPANS = _tag(1, _LEN), _tag(2, _LEN)
_REQUEST_RESOURCE_SPANS = _tag(1, _LEN)
_FLAGS = {
    False: _SPAN_FLAGS + _FIXED32_LE.pack(_HAS_IS_REMOTE),
    True: _SPAN_FLAGS + _FIXED32_LE.pack(_HAS_IS_REMOTE | _IS_REMOTE),
}
_NO_STATUS = _SPAN_STATUS + b"\x00"  # the SDK always sets a status; unset is empty
# The fixed-size fields, packed with their tags in one call each.
_IDS = struct.Struct(f">{len(_SPAN_TRACE_ID)}sQQ{len(_SPAN_ID)}sQ")
_PARENT = struct.Struct(f">{len(_SPAN_PARENT_ID)}sQ")
_TIMES = struct.Struct(f"<{len(_SPAN_START)}sQ{len(_SPAN_END)}sQ")


def export_request(rows: Sequence[Sequence[Any]], resource: bytes, scope: bytes) -> bytes:
    """The serialized `ExportTraceServiceRequest` of `rows`, all under one resource and
    one instrumentation scope (each a serialized `Resource` and `InstrumentationScope`)."""
    parts = [_length_delimited(_SCOPE_SCOPE, scope)]
    for row in rows:
        encoded = span(row)
        parts += (_SCOPE_SPANS, _varint(len(encoded)), encoded)
    scope_spans = b"".join(parts)
    resource_spans = _length_delimited(_RESOURCE_RESOURCE, resource) + _length_delimited(
        _RESOURCE_SCOPE_SPANS, scope_spans
    )
    return _length_delimited(_REQUEST_RESOURCE_SPANS, resource_spans)


def resource(attributes: Mapping[str, Any]) -> bytes:
    """A serialized `Resource` of these attributes."""
    return b"".join([_attribute(_LIST_ITEM, key, value) for key, value in attributes.items()])


def scope(name: str, version: str | None = None) -> bytes:
    """A serialized `InstrumentationScope`."""
    named = _string(_KEY, name) if name else b""
    return named + (_string(_SCOPE_VERSION, version) if version else b"")


def span(row: Sequence[Any]) -> bytes:
    """One serialized `Span` (see the module docstring for the row)."""
    name, kind, trace_high, trace_low, span_id, parent_id, remote, start, end, attributes, error = (
        row
    )
    parts = [_IDS.pack(_SPAN_TRACE_ID, trace_high, trace_low, _SPAN_ID, span_id)]
    if parent_id is not None:
        parts.append(_PARENT.pack(_SPAN_PARENT_ID, parent_id))
    if name:
        parts.append(_name(name))
    if kind:
        parts += (_SPAN_KIND, _varint(kind))
    if start and end:
        parts.append(_TIMES.pack(_SPAN_START, start, _SPAN_END, end))
    else:
        parts.append(_times(start, end))
    for key, value in attributes.items():
        parts.append(_attribute(_SPAN_ATTRIBUTE, key, value))
    parts += (_status(error), _FLAGS[bool(remote)])
    return b"".join(parts)


@functools.lru_cache(maxsize=1024)
def _name(name: str) -> bytes:
    """A span's name field, remembered: a few names repeat (`POST chat`, `upstream x`)."""
    return _string(_SPAN_NAME, name)


def _times(start: int, end: int) -> bytes:
    """Start and end, each left out when zero (as proto3 leaves out a default)."""
    return (_SPAN_START + _FIXED64_LE.pack(start) if start else b"") + (
        _SPAN_END + _FIXED64_LE.pack(end) if end else b""
    )


def _attribute(tag: bytes, key: str, value: Any) -> bytes:
    """A span's attribute; one with no OTLP form is left out (and logged), as the SDK's
    encoder leaves it out, rather than losing the batch."""
    try:
        if type(value) in _REMEMBERED:
            return _remembered_attribute(tag, key, value)
        return _length_delimited(tag, key_value(key, value))
    except (TypeError, ValueError) as exc:
        logger.error("span attribute %s left out: %s", key, exc)
        return b""


# Exactly these types (a bool is an int, but must not meet a remembered 1 or 0).
_REMEMBERED = frozenset({str, int})


@functools.lru_cache(maxsize=4096)
def _remembered_attribute(tag: bytes, key: str, value: str | int) -> bytes:
    """A text or integer attribute, remembered: most of a span's attributes are a few
    names and values (method, path, family, provider, model, outcome, status) repeated
    in every request."""
    return _length_delimited(tag, key_value(key, value))


def _status(error: str | None) -> bytes:
    if error is None:
        return _NO_STATUS
    message = _string(_STATUS_MESSAGE, error) if error else b""
    return _length_delimited(_SPAN_STATUS, message + _STATUS_CODE + _varint(_STATUS_ERROR))


def _string(tag: bytes, text: str) -> bytes:
    return _length_delimited(tag, text.encode())


def key_value(key: str, value: Any) -> bytes:
    """A serialized `KeyValue` (the key omitted when empty, as proto3 does)."""
    head = _string(_KEY, key) if key else b""
    return head + _length_delimited(_VALUE, any_value(value))


def any_value(value: Any) -> bytes:
    """A serialized `AnyValue`, chosen by the value's type as the SDK chooses it: None is
    the empty value; a value of no OTLP type raises `TypeError`."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return _BOOL + (b"\x01" if value else b"\x00")
    if isinstance(value, str):
        return _string(_STRING, value)
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"{value} is out of an int64's range")
        return _INT + _varint(value)
    if isinstance(value, float):
        return _DOUBLE_VALUE + _DOUBLE.pack(value)
    if isinstance(value, bytes):
        return _length_delimited(_BYTES, value)
    if isinstance(value, Sequence):
        items = b"".join([_length_delimited(_LIST_ITEM, any_value(v)) for v in value])
        return _length_delimited(_ARRAY, items)
    if isinstance(value, Mapping):
        pairs = [_length_delimited(_LIST_ITEM, key_value(str(k), v)) for k, v in value.items()]
        return _length_delimited(_KVLIST, b"".join(pairs))
    raise TypeError(f"an attribute value of type {type(value).__name__} has no OTLP form")
