"""OpenTelemetry spans of each request, each upstream attempt and each pipeline stage,
exported over OTLP/HTTP when `otlp_endpoint` is set.

Why the OpenTelemetry SDK: its spans, samplers and OTLP encoding are what every tracing
backend (Jaeger, Tempo, Honeycomb, Datadog, an OpenTelemetry Collector) reads, and the
W3C trace context it follows is what a caller's `traceparent` carries.

Off by default, and then free: the app holds no `Tracing` (`None`), every call site
checks that first, and no span object is made. On, the request middleware opens a server
span per request (the child of the caller's `traceparent` when it sent one, and kept or
not as the caller sampled it), the engine a client span per attempt (whose id goes
upstream in `traceparent`, `providers.upstream.traced`), and pipelines a span per stage.

Export without a thread of the SDK's: the SDK's `BatchSpanProcessor` starts a daemon
thread nobody owns. Here finished spans go into a bounded queue (`SpanQueue`; past its
capacity a span is dropped and counted, never waited for) and the `trace_export` worker,
in the lifespan nursery, hands batches to the OTLP exporter in a worker thread of its
own limiter, each export bounded by `otlp_timeout_s`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

import trio
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)

from gateway.platform.context import RequestContext, current_request
from gateway.platform.errors import ApiError, from_provider_error
from providers.errors import ProviderError
from providers.upstream.traced import OUTGOING_TRACE

if TYPE_CHECKING:
    from gateway.platform.config import Settings

logger = logging.getLogger(__name__)

T = TypeVar("T")
A = TypeVar("A")  # an adapter
Tg = TypeVar("Tg")  # a target
SERVICE_NAME = "ai-gateway"
# The stage span the current task runs in (a pipeline's recognition, model or speech),
# inherited by the tasks it starts: the parent of their spans.
_STAGE: ContextVar[Span | None] = ContextVar("gateway_stage_span", default=None)
QUEUE_CAPACITY = 8192
BATCH_SIZE = 512
EXPORT_INTERVAL_S = 1.0


class SpanQueue(SpanProcessor):
    """Finished spans waiting for the export worker, at most `capacity`.

    Spans end on the trio thread (the gateway's own code ends every span), so `ready`,
    a trio event, may be set from `on_end`.
    """

    def __init__(self, capacity: int = QUEUE_CAPACITY, batch_size: int = BATCH_SIZE) -> None:
        self._spans: deque[ReadableSpan] = deque()
        self.capacity, self.batch_size = capacity, batch_size
        self.ready = trio.Event()
        self.ended = 0  # spans that ended (kept, or dropped when the queue was full)
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._spans)

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        self.ended += 1
        if len(self._spans) >= self.capacity:
            self.dropped += 1
            return
        self._spans.append(span)
        if len(self._spans) >= self.batch_size:
            self.ready.set()

    def take(self) -> list[ReadableSpan]:
        """Up to one batch of the oldest spans."""
        count = min(len(self._spans), self.batch_size)
        return [self._spans.popleft() for _ in range(count)]

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def parse_headers(text: str | None) -> dict[str, str]:
    """`name=value,name=value` (the OTLP exporters' header form) as a dict."""
    headers = {}
    for item in (text or "").split(","):
        name, _, value = item.partition("=")
        if name.strip() and value.strip():
            headers[name.strip().lower()] = value.strip()
    return headers


def otlp_exporter(settings: Settings) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(
        endpoint=settings.otlp_endpoint,
        headers=parse_headers(settings.otlp_headers),
        timeout=settings.otlp_timeout_s,
    )


class Tracing:
    """The tracer, its queue and its exporter; one per app, only when tracing is on."""

    def __init__(self, exporter: SpanExporter, *, sample_ratio: float = 1.0) -> None:
        self.exporter = exporter
        self.queue = SpanQueue()
        self.exported = 0
        self.failed = 0
        provider = TracerProvider(
            sampler=ParentBased(TraceIdRatioBased(sample_ratio)),
            resource=Resource.create({"service.name": SERVICE_NAME}),
        )
        provider.add_span_processor(self.queue)
        self.tracer = provider.get_tracer("gateway")

    @classmethod
    def of(cls, settings: Settings) -> Tracing | None:
        """The app's tracing as `settings` ask: None without an OTLP endpoint."""
        if not settings.otlp_endpoint:
            return None
        return cls(otlp_exporter(settings), sample_ratio=settings.trace_sample_ratio)

    # -- spans -------------------------------------------------------------------------

    def request_span(
        self, context: RequestContext, name: str, attributes: Mapping[str, Any]
    ) -> Span:
        """The server span of a request: the child of the caller's `traceparent` if any."""
        parent: Context | None = None
        if context.trace is not None:
            remote = SpanContext(
                trace_id=int(context.trace.trace_id, 16),
                span_id=int(context.trace.parent_id, 16),
                is_remote=True,
                trace_flags=TraceFlags(context.trace.flags),
            )
            parent = trace.set_span_in_context(NonRecordingSpan(remote))
        return self.tracer.start_span(name, parent, SpanKind.SERVER, dict(attributes))

    def child_span(
        self, name: str, *, kind: SpanKind = SpanKind.INTERNAL, attributes: Mapping[str, Any]
    ) -> Span:
        """A span under the stage this task runs in, else under the current request's
        span (a root span outside a request)."""
        parent_span = _STAGE.get()
        if parent_span is None:
            context = current_request()
            parent_span = context.span if context is not None else None
        parent = trace.set_span_in_context(parent_span) if parent_span is not None else None
        return self.tracer.start_span(name, parent, kind, dict(attributes))

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
        describe: Callable[[Tg], Mapping[str, Any]],
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
        describe: Callable[[Tg], Mapping[str, Any]],
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
    def _attempt(self, attributes: Mapping[str, Any]) -> Iterator[Callable[[], None]]:
        """A client span around an upstream attempt; this task's upstream calls name it
        as their parent while it is open. The block calls what it is given once the
        upstream answered (a stream closed later, even by cancellation, stays answered)."""
        name = f"upstream {attributes.get('gen_ai.provider.name', '')}".strip()
        span = self.child_span(name, kind=SpanKind.CLIENT, attributes=attributes)
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

    # -- export ------------------------------------------------------------------------

    async def export_loop(self, *, timeout_s: float) -> None:
        """Send queued spans in batches: when a batch is full or every
        `EXPORT_INTERVAL_S`. Cancellation: what is queued is sent, shielded for at most
        `timeout_s`, then the exporter is shut down."""
        limiter = trio.CapacityLimiter(1)
        try:
            while True:
                with trio.move_on_after(EXPORT_INTERVAL_S):
                    await self.queue.ready.wait()
                self.queue.ready = trio.Event()
                await self._send_queued(limiter)
        finally:
            with trio.move_on_after(timeout_s, shield=True):
                await self._send_queued(limiter)
            self.exporter.shutdown()

    async def _send_queued(self, limiter: trio.CapacityLimiter) -> None:
        while batch := self.queue.take():
            result = await trio.to_thread.run_sync(self.exporter.export, batch, limiter=limiter)
            if result is SpanExportResult.SUCCESS:
                self.exported += len(batch)
            else:
                self.failed += len(batch)
                logger.warning("could not export %d spans to the OTLP endpoint", len(batch))


def _outgoing(span: Span) -> dict[str, str]:
    """The `traceparent` (and the caller's `tracestate`) naming `span` as the parent."""
    context = span.get_span_context()
    ids = f"{context.trace_id:032x}-{context.span_id:016x}"
    headers = {"traceparent": f"00-{ids}-{int(context.trace_flags):02x}"}
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
    span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))


def error_type(exc: BaseException) -> str:
    if isinstance(exc, ProviderError):
        return from_provider_error(exc).code
    if isinstance(exc, ApiError):
        return exc.code
    return type(exc).__name__
