"""What the request middleware learns about a request while it runs.

The middleware opens one `RequestContext` per request and puts it in a context variable;
the handler's tasks inherit the context, so they reach the same object and fill in what
only they know (the caller's workspace, upstream time). A context variable rather than a
parameter: the platform's authentication and the upstream chain should not have to carry an
operator object through every signature to feed a log line.
"""

from __future__ import annotations

from contextvars import ContextVar

import attrs


@attrs.define
class RequestContext:
    workspace_id: str | None = None
    key_id: str | None = None
    upstream_s: float = 0.0


_current: ContextVar[RequestContext | None] = ContextVar("gateway_request", default=None)


def open_request() -> RequestContext:
    """A fresh context for the request running in this task (and the tasks it starts)."""
    context = RequestContext()
    _current.set(context)
    return context


def current_request() -> RequestContext | None:
    return _current.get()


def note_caller(workspace_id: str, key_id: str) -> None:
    """Record who is calling, for the access log (a no-op outside a request)."""
    context = _current.get()
    if context is not None:
        context.workspace_id = workspace_id
        context.key_id = key_id
