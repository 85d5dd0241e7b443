"""OpenTelemetry spans of each request, each upstream attempt and each pipeline stage,
exported over OTLP/HTTP when `otlp_endpoint` is set.

Off by default, and then free: the app holds no `Tracing` (`None`), every call site
checks that first, and no span object is made. On, the request middleware opens a server
span per request (the child of the caller's `traceparent` when it sent one, kept or not
as the caller sampled it), the engine a client span per attempt (whose id goes upstream
in `traceparent`, `providers.upstream.traced`), and pipelines a span per stage.

Why not the SDK's `Span` on the hot path: on this machine a pair of them (a request and
its attempt) cost 60-120 microseconds of the event loop's interpreter, and encoding them
to OTLP protobuf 90 more per span, together over the request log's and tracing's 5 %
budget of the chat path. So the request path records each span's facts in a slotted
`Span` (ids from the same random source and sampled by the same rule,
`TraceIdRatioBased`'s bound on the trace id's low 64 bits, as the SDK's), and a
process of its own (`gateway.workers.trace_child`) writes OTLP protobuf straight from
their rows (`gateway.workers.otlp_encoding`, no SDK span object at all) and sends it with
the SDK's OTLP/HTTP client, so the encoding does not share the event loop's interpreter
lock.

Finished spans of sampled traces go into a bounded queue (`SpanQueue`; past its capacity
a span is dropped and counted, never waited for) that the `trace_export` worker drains.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import trio

from gateway.platform.context import RequestContext, current_request
from gateway.platform.errors import ApiError, from_provider_error
from providers.errors import ProviderError
from providers.upstream.traced import OUTGOING_TRACE

if TYPE_CHECKING:
    from gateway.platform.config import Settings

T = TypeVar("T")
A = TypeVar("A")  # an adapter
Tg = TypeVar("Tg")  # a target
QUEUE_CAPACITY = 8192
BATCH_SIZE = 512
# OpenTelemetry's span kinds, as OTLP numbers them.
INTERNAL, SERVER, CLIENT = 1, 2, 3
# `TraceIdRatioBased`: the low 64 bits of the trace id under round(rate * 2**64) sample.
_LOW_BITS = (1 << 64) - 1
# The stage span the current task runs in (a pipeline's recognition, model or speech),
# inherited by the tasks it starts: the parent of their spans.
_STAGE: ContextVar[Span | None] = ContextVar("gateway_stage_span", default=None)


class Span:
    """One span's facts, as cheap to make as the request path needs: its ids, kind,
    times (Unix nanoseconds), attributes and error; queued for export when it ends, if
    its trace is sampled."""

    __slots__ = (
        "_queue",
        "attributes",
        "end_ns",
        "error",
        "kind",
        "name",
        "parent_id",
        "remote_parent",
        "sampled",
        "span_id",
        "start_ns",
        "trace_id",
    )

    def __init__(
        self,
        queue: SpanQueue,
        name: str,
        kind: int,
        trace_id: int,
        parent: Span | None,
        attributes: dict[str, Any],
    ) -> None:
        self._queue = queue
        self.name, self.kind, self.trace_id = name, kind, trace_id
        self.span_id = random.getrandbits(64) or 1
        self.parent_id = parent.span_id if parent is not None else None
        self.remote_parent = False
        self.sampled: bool = parent.sampled if parent is not None else True
        self.attributes = attributes
        self.error: str | None = None
        self.start_ns = time.time_ns()
        self.end_ns: int | None = None

    @property
    def traceparent(self) -> str:
        """The W3C header naming this span as the parent."""
        return f"00-{self.trace_id:032x}-{self.span_id:016x}-{int(self.sampled):02x}"

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def fail(self, description: str) -> None:
        self.error = description

    def end(self) -> None:
        if self.end_ns is not None:
            return
        self.end_ns = time.time_ns()
        if self.sampled:
            self._queue.put(self)

    def row(self) -> list[Any]:
        """The span as the export process reads it (`gateway.workers.otlp_encoding`):
        ids as integers, which orjson writes in C (the trace id's 128 bits in two
        halves, orjson's integers being at most 64 bits)."""
        trace_id = self.trace_id
        return [
            self.name,
            self.kind,
            trace_id >> 64,
            trace_id & _LOW_BITS,
            self.span_id,
            self.parent_id,
            self.remote_parent,
            self.start_ns,
            self.end_ns,
            self.attributes,
            self.error,
        ]


class SpanQueue:
    """Finished spans waiting for the export worker, at most `capacity`. Spans end on the
    trio thread (the gateway's own code ends every span), so `ready`, a trio event, may be
    set from `put`."""

    def __init__(self, capacity: int = QUEUE_CAPACITY, batch_size: int = BATCH_SIZE) -> None:
        self._spans: deque[Span] = deque()
        self.capacity, self.batch_size = capacity, batch_size
        self.ready = trio.Event()
        self.ended = 0  # sampled spans that ended (kept, or dropped when the queue was full)
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._spans)

    def put(self, span: Span) -> None:
        self.ended += 1
        if len(self._spans) >= self.capacity:
            self.dropped += 1
            return
        self._spans.append(span)
        if len(self._spans) >= self.batch_size:
            self.ready.set()

    def take(self, limit: int | None = None) -> list[Span]:
        """Up to one batch of the oldest spans (and at most `limit`)."""
        count = min(len(self._spans), self.batch_size, self.batch_size if limit is None else limit)
        return [self._spans.popleft() for _ in range(count)]


@attrs.frozen
class ExportSettings:
    """Where and how the export process sends the spans (`otlp_*` settings)."""

    endpoint: str
    headers: str | None
    timeout_s: float


@attrs.define(eq=False)
class Tracing:
    """The spans of one app: made here, queued, exported by the `trace_export` worker."""

    export: ExportSettings
    sample_ratio: float = 1.0
    queue: SpanQueue = attrs.field(factory=SpanQueue)
    exported: int = 0
    failed: int = 0
    _bound: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._bound = round(min(max(self.sample_ratio, 0.0), 1.0) * (_LOW_BITS + 1))

    @classmethod
    def of(cls, settings: Settings) -> Tracing | None:
        """The app's tracing as `settings` ask: None without an OTLP endpoint."""
        if not settings.otlp_endpoint:
            return None
        export = ExportSettings(
            settings.otlp_endpoint, settings.otlp_headers, settings.otlp_timeout_s
        )
        return cls(export, settings.trace_sample_ratio)

    # -- spans -------------------------------------------------------------------------

    def request_span(self, context: RequestContext, name: str, attributes: dict[str, Any]) -> Span:
        """The server span of a request: the child of the caller's `traceparent` if any
        (and sampled as the caller said), else the root of a new trace."""
        caller = context.trace
        if caller is None:
            return self._root(name, SERVER, attributes)
        span = Span(self.queue, name, SERVER, int(caller.trace_id, 16), None, attributes)
        span.parent_id, span.remote_parent = int(caller.parent_id, 16), True
        span.sampled = caller.sampled
        return span

    def child_span(self, name: str, *, kind: int = INTERNAL, attributes: dict[str, Any]) -> Span:
        """A span under the stage this task runs in, else under the current request's
        span (the root of a new trace outside a request)."""
        parent = _STAGE.get()
        if parent is None:
            context = current_request()
            parent = context.span if context is not None else None
        if parent is None:
            return self._root(name, kind, attributes)
        return Span(self.queue, name, kind, parent.trace_id, parent, attributes)

    def _root(self, name: str, kind: int, attributes: dict[str, Any]) -> Span:
        trace_id = random.getrandbits(128) or 1
        span = Span(self.queue, name, kind, trace_id, None, attributes)
        span.sampled = (trace_id & _LOW_BITS) < self._bound
        return span

    @asynccontextmanager
    async def stage(self, name: str, **attributes: Any) -> AsyncIterator[Span]:
        """A span around a block (a pipeline stage), the parent of the spans made in it
        (its upstream attempts); an error leaving it marks the span."""
        span = self.child_span(name, attributes=attributes)
        token = _STAGE.set(span)
        try:
            yield span
        except BaseException as exc:
            _failed(span, exc)
            raise
        finally:
            _STAGE.reset(token)
            span.end()

    def traced_operation(
        self,
        operation: Callable[[A, Tg], Awaitable[T]],
        describe: Callable[[Tg], dict[str, Any]],
    ) -> Callable[[A, Tg], Awaitable[T]]:
        """An upstream call made in a client span of its own, whose id it sends upstream
        as the `traceparent` parent (`describe(target)`: the span's attributes)."""

        async def traced(adapter: A, target: Tg) -> T:
            with self._attempt(describe(target)) as answered:
                value = await operation(adapter, target)
                answered()
                return value

        return traced

    def traced_opener(
        self,
        opener: Callable[[A, Tg], AbstractAsyncContextManager[T]],
        describe: Callable[[Tg], dict[str, Any]],
    ) -> Callable[[A, Tg], AbstractAsyncContextManager[T]]:
        """`traced_operation` for a stream: the span lasts as long as the stream is open
        (entered and left in the one task that holds it); it answered once it opened."""

        @asynccontextmanager
        async def traced(adapter: A, target: Tg) -> AsyncIterator[T]:
            with self._attempt(describe(target)) as answered:
                async with opener(adapter, target) as value:
                    answered()
                    yield value

        return traced

    @contextmanager
    def _attempt(self, attributes: dict[str, Any]) -> Iterator[Callable[[], None]]:
        """A client span around an upstream attempt; this task's upstream calls name it
        as their parent while it is open. The block calls what it is given once the
        upstream answered (a stream closed later, even by cancellation, stays answered)."""
        name = f"upstream {attributes.get('gen_ai.provider.name', '')}".strip()
        span = self.child_span(name, kind=CLIENT, attributes=attributes)
        token = OUTGOING_TRACE.set(_outgoing(span))
        answered = False

        def mark() -> None:
            nonlocal answered
            answered = True
            span.set_attribute("gateway.outcome", "answered")

        try:
            yield mark
        except BaseException as exc:
            if not answered:
                _failed(span, exc)
            raise
        finally:
            OUTGOING_TRACE.reset(token)
            span.end()


def _outgoing(span: Span) -> dict[str, str]:
    """The `traceparent` (and the caller's `tracestate`) naming `span` as the parent."""
    headers = {"traceparent": span.traceparent}
    request = current_request()
    if request is not None and request.tracestate:
        headers["tracestate"] = request.tracestate
    return headers


def _failed(span: Span, exc: BaseException) -> None:
    """Mark a span whose block raised: cancelled (a lost race, a client gone) is no
    error; anything else is, under the spec's error code when it has one."""
    if isinstance(exc, trio.Cancelled):
        span.set_attribute("gateway.outcome", "cancelled")
        return
    span.set_attribute("gateway.outcome", "failed")
    span.set_attribute("error.type", error_type(exc))
    span.fail(str(exc)[:200])


def error_type(exc: BaseException) -> str:
    if isinstance(exc, ProviderError):
        return from_provider_error(exc).code
    if isinstance(exc, ApiError):
        return exc.code
    return type(exc).__name__
