"""What the outermost layer knows about the request running in this task, and what the
handler tells it back.

The request middleware (`gateway.operator.middleware`) opens one `RequestContext` per
request and puts it in a context variable; the handler's tasks inherit the context, so
they reach the same object. The middleware fills in the request's identity (its
`X-Request-ID`, the W3C trace it belongs to, its span when tracing is on); the handler
fills in what only it knows (the caller, upstream time, and through the usage record the
provider, model, tokens and cost). A context variable rather than a parameter: every
family's usage record, the platform's authentication and the upstream engine would
otherwise carry an operator object through every signature to feed a log line.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import attrs

from gateway.platform.tracecontext import TraceParent, new_request_id

if TYPE_CHECKING:
    from store.usage import UsageRecord


@attrs.define
class RequestContext:
    request_id: str = attrs.field(factory=new_request_id)
    # A client's `X-Request-ID` that was not valid (and was replaced): logged, so the
    # client's own id can still be found.
    client_request_id: str | None = None
    trace: TraceParent | None = None  # the caller's `traceparent`
    tracestate: str | None = None
    span: Any = None  # the request's OpenTelemetry span, when tracing is on
    workspace_id: str | None = None
    key_id: str | None = None
    upstream_s: float = 0.0
    # What the request's usage records said (a pipeline leaves several): the last
    # provider and model that served, tokens and cost summed.
    provider: str | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def trace_id(self) -> str | None:
        """The W3C trace id: the span's when tracing, else the caller's, else None."""
        if self.span is not None:
            return f"{self.span.trace_id:032x}"
        return self.trace.trace_id if self.trace is not None else None

    def note_usage(self, record: UsageRecord) -> None:
        if record.provider:
            self.provider = record.provider
        if record.model:
            self.model = record.model
        self.prompt_tokens += record.prompt_tokens
        self.completion_tokens += record.completion_tokens
        self.cost_usd += record.cost_usd


_current: ContextVar[RequestContext | None] = ContextVar("gateway_request", default=None)


def open_request(context: RequestContext | None = None) -> RequestContext:
    """`context` (a fresh one by default) as the request running in this task (and the
    tasks it starts)."""
    context = context if context is not None else RequestContext()
    _current.set(context)
    return context


def current_request() -> RequestContext | None:
    return _current.get()


def current_request_id() -> str:
    """The id of the request running in this task; a new one outside a request (a
    WebSocket session, a worker, a test calling a service directly)."""
    context = _current.get()
    return context.request_id if context is not None else new_request_id()


def note_caller(workspace_id: str, key_id: str) -> None:
    """Record who is calling, for the access log (a no-op outside a request)."""
    context = _current.get()
    if context is not None:
        context.workspace_id = workspace_id
        context.key_id = key_id


def note_usage(record: UsageRecord) -> None:
    """A usage sink: the record's provider, model, tokens and cost go into the request's
    access log line and request metrics (a no-op outside a request)."""
    context = _current.get()
    if context is not None:
        context.note_usage(record)
