"""W3C trace context on every upstream call: the `traceparent` the gateway hands on.

The gateway decides the header per request (the caller's own, passed on unchanged when
the gateway does not trace) or per attempt (naming the attempt's span when it does) and
puts it in `OUTGOING_TRACE`, a context variable: the attempt's task, and only it, then
sends it with every call it makes. The clients add it themselves (`with_trace`, in
`LeanUpstream` and `HttpxUpstream`), so that no adapter has to know (each builds its own
headers) and no wrapper layer sits on every call: without a trace a call pays one
context-variable read.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar

# The headers (lower-case names) every upstream call of this task adds: `traceparent`,
# and `tracestate` when the caller sent one.
OUTGOING_TRACE: ContextVar[Mapping[str, str] | None] = ContextVar("outgoing_trace", default=None)


def with_trace(headers: Mapping[str, str]) -> Mapping[str, str]:
    """`headers` with this task's trace headers, if it has any (they win a clash)."""
    extra = OUTGOING_TRACE.get()
    return headers if not extra else {**headers, **extra}
