"""Request ids and W3C trace context, as they arrive in headers and leave towards upstreams.

Pure and I/O-free: the outermost ASGI layer (`gateway.operator.middleware`) reads the
headers once per request with these functions, and the upstream calls write
`traceparent` with `TraceParent.header`.

A client's own `X-Request-ID` is kept when it is *valid*: 1 to 128 characters, each a
letter, a digit, or one of `-`, `_`, `.`, `:` (UUIDs, ULIDs, `req_...` and
`service:1234` forms pass). Anything else (empty, longer, spaces, quotes, slashes, non
ASCII) is replaced by a UUID of the gateway's: the id is echoed in headers, written in
logs and used in the request log's URL path, where such characters would need escaping
or let a client forge log structure.
"""

from __future__ import annotations

import os
import re

import attrs

REQUEST_ID_MAX = 128
_REQUEST_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
# W3C Trace Context, level 1: version-traceid-parentid-flags, lower-case hex.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def valid_request_id(value: str) -> bool:
    """Whether a client's `X-Request-ID` may be kept as the request's id."""
    return _REQUEST_ID.fullmatch(value) is not None


def new_request_id() -> str:
    """A random (version 4) UUID, written as `str(uuid.uuid4())` writes one, made from
    its 16 random bytes directly: a third of the cost, without the UUID object."""
    digits = os.urandom(16).hex()
    variant = "89ab"[int(digits[16], 16) & 3]  # RFC 4122's variant: 10 in the top bits
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{variant}{digits[17:20]}-{digits[20:]}"


@attrs.frozen(slots=True)
class TraceParent:
    """A `traceparent` header's fields: the trace, the caller's span, the flags."""

    trace_id: str  # 32 lower-case hex digits, not all zero
    parent_id: str  # 16 lower-case hex digits, not all zero
    flags: int = 0

    @property
    def sampled(self) -> bool:
        return bool(self.flags & 1)

    def header(self, span_id: str | None = None) -> str:
        """The header value naming `span_id` (ours, when we trace) as the parent, else
        the caller's own parent unchanged (a proxy that does not trace passes it on)."""
        return f"00-{self.trace_id}-{span_id or self.parent_id}-{self.flags:02x}"


def parse_traceparent(value: str | None) -> TraceParent | None:
    """The header's fields, or None when it is absent or invalid (the W3C rules: version
    `ff` and all-zero ids are invalid; a later version is read by its first four fields,
    as the recommendation says, and must then be followed by `-` or end)."""
    if not value:
        return None
    value = value.strip()
    match = _TRACEPARENT.match(value)
    if match is None:
        return None
    version, trace_id, parent_id, flags = match.groups()
    if version == "ff" or trace_id == _ZERO_TRACE or parent_id == _ZERO_SPAN:
        return None
    rest = value[match.end() :]
    if (version == "00" and rest) or (rest and not rest.startswith("-")):
        return None
    return TraceParent(trace_id, parent_id, int(flags, 16))
