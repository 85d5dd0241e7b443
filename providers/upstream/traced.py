"""W3C trace context on every upstream call: the `traceparent` the gateway hands on.

The gateway decides the header per request (the caller's own, passed on unchanged when
the gateway does not trace) or per attempt (naming the attempt's span when it does) and
puts it in `OUTGOING_TRACE`, a context variable: the attempt's task, and only it, then
sends it with every call it makes. `TracedUpstream` wraps the app's one client so that no
adapter has to know (each builds its own headers). Without a trace the wrapper adds one
context-variable read per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar

import trio

from providers.upstream.base import RequestBody, Upstream, UpstreamResponse, UpstreamStream

# The headers (lower-case names) every upstream call of this task adds: `traceparent`,
# and `tracestate` when the caller sent one.
OUTGOING_TRACE: ContextVar[Mapping[str, str] | None] = ContextVar("outgoing_trace", default=None)


def _with_trace(headers: Mapping[str, str]) -> Mapping[str, str]:
    extra = OUTGOING_TRACE.get()
    return headers if not extra else {**headers, **extra}


class TracedUpstream:
    """An `Upstream` that adds this task's trace headers to each request of `inner`."""

    def __init__(self, inner: Upstream) -> None:
        self.inner = inner

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], body: RequestBody = b""
    ) -> UpstreamResponse:
        return await self.inner.request(method, url, _with_trace(headers), body)

    def stream(
        self, method: str, url: str, headers: Mapping[str, str], body: RequestBody = b""
    ) -> AbstractAsyncContextManager[UpstreamStream]:
        return self.inner.stream(method, url, _with_trace(headers), body)

    async def open_tcp(self, host: str, port: int) -> trio.SocketStream:
        """A raw connection (a WebSocket adapter's): its protocol carries no HTTP headers
        of ours, so it is the inner client's unchanged."""
        return await self.inner.open_tcp(host, port)

    async def aclose(self) -> None:
        await self.inner.aclose()
