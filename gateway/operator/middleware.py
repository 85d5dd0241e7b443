"""The outermost ASGI layer: names, counts, times, traces and logs every HTTP answer.

Every request gets its id here, before any family sees it: the client's own
`X-Request-ID` when it is valid (`gateway.platform.tracecontext`), else a new UUID; every
answer carries it in `X-Request-ID` (a management call, a 404 and a file upload as much
as a chat completion), and every usage record of the request is written under it. A
client's `traceparent` is honoured: the request belongs to its trace, the access log
names the trace, and upstream calls carry it on (with the gateway's own span as the
parent when tracing is on, `gateway.platform.tracing`; unchanged when it is off).

It sees what Quart and the chat fast path send, without either knowing it: the status and
whether the answer is a stream; the provider, model, tokens and cost come from the
request's usage records (`RequestContext.note_usage`), so audio, OCR, files and pipelines
are labelled as chat is, failed requests under the provider that failed them. Its cost
per request is one context variable, a header scan, a few dictionary look-ups and counter
increments; the log line is formatted only when the access logger is enabled, and no
span exists unless tracing is on.

Cancellation (a client disconnect) passes through untouched; the `finally` clauses only
settle the open-stream gauge and write the log line with status 499 when no answer
started.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.operator.families import family_of
from gateway.operator.logs import sole_batch
from gateway.operator.metrics import GatewayMetrics
from gateway.platform.context import RequestContext, open_request
from gateway.platform.exchange import ANSWER_WATCH
from gateway.platform.request_link import without_link
from gateway.platform.tracecontext import (
    REQUEST_ID_MAX,
    new_request_id,
    parse_traceparent,
    valid_request_id,
)
from gateway.platform.tracing import Tracing
from providers.upstream.traced import OUTGOING_TRACE

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

ACCESS_LOGGER = "gateway.access"
access_log = logging.getLogger(ACCESS_LOGGER)
CLIENT_CLOSED = 499
BODY_LOG_LIMIT = 4096
REQUEST_ID_HEADER = b"x-request-id"


class _Answer:
    """One request's answer as the middleware watches it: what the app has sent so far,
    and how to count and log it. `watch` notes an ASGI message and returns it to send;
    `send` is the app's `send` (note, then the server's). The fast path, on our server,
    finds this object in the scope (`ANSWER_WATCH`) and calls `watch` and the server's
    send itself: one coroutine layer fewer per message, every SSE frame included."""

    __slots__ = (
        "body",
        "context",
        "counted",
        "elapsed_s",
        "family",
        "first_byte_s",
        "length",
        "logged",
        "marked",
        "model",
        "observed",
        "provider",
        "scope",
        "send_server",
        "started_at",
        "status",
        "stream",
    )

    def __init__(
        self,
        observed: ObservedApp,
        scope: Scope,
        context: RequestContext,
        body: bytearray | None,
        send_server: Send,
    ) -> None:
        self.started_at = time.perf_counter()
        self.observed, self.scope, self.context, self.body = observed, scope, context, body
        self.send_server = send_server
        self.family = family_of(scope["path"])
        self.marked = (REQUEST_ID_HEADER, context.request_id.encode("latin-1"))
        self.status = CLIENT_CLOSED
        self.first_byte_s: float | None = None
        # What the answer's headers say served it (`X-Service-Model-Used`, or audio's
        # `X-Service-Provider` and `X-Service-Model`), when no usage record has said.
        self.provider: str | None = None
        self.model: str | None = None
        self.stream = False
        # The bytes its Content-Length says are still to come: Quart sends a whole body
        # with `more_body` and then an empty end, so its last byte leaves before the end's.
        self.length: int | None = None
        self.counted = self.logged = False
        self.elapsed_s = 0.0

    def watch(self, message: Message) -> Message:
        """Note `message` (the head's facts; the answer counted and logged before its
        last bytes leave) and return it as it is to be sent."""
        if message["type"] == "http.response.start":
            message = _started(self, message)
            if self.stream:
                self.observed.metrics.stream_opened(self.family)
        elif not message.get("more_body", False) or _completes(self, message):
            self.observed.settle(self, ended=False)
        return message

    async def send(self, message: Message) -> None:
        await self.send_server(self.watch(message))


class ObservedApp:
    """Wrap `app` so that every HTTP request is identified, counted in `metrics`, logged,
    and traced when `tracing` is given.

    `log_bodies` (the `log_request_bodies` debug setting) adds the start of each request
    body to its log line; it is off by default because bodies hold prompts.
    """

    def __init__(
        self,
        app: Any,
        metrics: GatewayMetrics,
        *,
        log_bodies: bool = False,
        tracing: Tracing | None = None,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.log_bodies = log_bodies
        self.tracing = tracing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        context = open_request(identify(scope))
        body = bytearray() if self.log_bodies else None
        if body is not None:  # the body must come through watched_receive
            scope = without_link(scope)
        answer = _Answer(self, scope, context, body, send)
        self._trace(scope, context, answer.family)
        extensions = scope.get("extensions")
        if extensions is not None:
            extensions[ANSWER_WATCH] = answer

        async def watched_receive() -> Message:
            message = await receive()
            if body is not None and len(body) < BODY_LOG_LIMIT:
                body.extend(message.get("body", b"")[: BODY_LOG_LIMIT - len(body)])
            return message

        try:
            await self.app(scope, watched_receive if body is not None else receive, answer.send)
        finally:
            if extensions is not None:  # a cycle (scope, answer) holding the connection
                extensions.pop(ANSWER_WATCH, None)
            if answer.stream:
                self.metrics.stream_closed(answer.family)
            self.settle(answer, ended=True)

    def _trace(self, scope: Scope, context: RequestContext, family: str) -> None:
        """Open the request's span (tracing on), or hand the caller's trace on to every
        upstream call unchanged (tracing off)."""
        if self.tracing is not None:
            attributes = {
                "http.request.method": scope["method"],
                "url.path": scope["path"],
                "gateway.family": family,
                "gateway.request_id": context.request_id,
            }
            name = f"{scope['method']} {family}"
            context.span = self.tracing.request_span(context, name, attributes)
        elif context.trace is not None:
            headers = {"traceparent": context.trace.header()}
            if context.tracestate:
                headers["tracestate"] = context.tracestate
            OUTGOING_TRACE.set(headers)

    def settle(self, answer: _Answer, *, ended: bool) -> None:
        """Count the answer once, before its last byte leaves (so that whoever saw it end
        finds it counted), or when the handler ends without one. Log it (and end its span)
        then too, unless a provider served it whose usage record is not written yet (a
        streamed speech answer records its use once sent): then when the handler ends
        (`ended`), so that the line names what the record said."""
        context = answer.context
        if not answer.counted:
            answer.counted = True
            answer.elapsed_s = time.perf_counter() - answer.started_at
            first_byte = (
                answer.first_byte_s if answer.first_byte_s is not None else answer.elapsed_s
            )
            provider, model = _served_by(context, answer)
            self.metrics.answered(
                answer.family, answer.status, provider, model, first_byte, context.upstream_s
            )
        if answer.logged or not (ended or context.provider or answer.provider is None):
            return
        answer.logged = True
        if context.span is not None:
            _end_span(context, answer.status, *_served_by(context, answer))
        batch = sole_batch(access_log)
        if batch is not None:  # no record: nothing else would see it (`sole_batch`)
            batch.hold_line((time.time(), ACCESS_LOGGER, "request", _fields(answer)))
        elif access_log.isEnabledFor(logging.INFO):
            access_log.info("request", extra={"fields": _fields(answer)})


def identify(scope: Scope) -> RequestContext:
    """The request's identity from its headers: its id (the client's when valid) and
    the trace it belongs to."""
    client_id = traceparent = tracestate = None
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER:
            client_id = value.decode("latin-1")
        elif name == b"traceparent":
            traceparent = value.decode("latin-1")
        elif name == b"tracestate":
            tracestate = value.decode("latin-1")
    trace = parse_traceparent(traceparent)
    context = RequestContext(
        trace=trace, tracestate=tracestate if trace is not None and tracestate else None
    )
    if client_id is not None:
        if valid_request_id(client_id):
            context.request_id = client_id
        else:
            context.request_id = new_request_id()
            context.client_request_id = client_id[:REQUEST_ID_MAX]
    return context


def _started(answer: _Answer, message: Message) -> Message:
    """Note what the response head says (status, what served it, whether it streams)
    and return it with the request's `X-Request-ID` (replacing any the handler set:
    there is one id per request). The head's names are read into a dictionary in one C
    call: an answer carries twenty-odd headers (its rate limits, footprint, provider),
    and a loop over them in Python, lowering each name, was most of the middleware's
    cost. ASGI has an application's response header names lowercase (the spec's
    `http.response.start`), as Quart and the fast path send them."""
    answer.first_byte_s = time.perf_counter() - answer.started_at
    answer.status = int(message["status"])
    headers = message.get("headers") or ()
    named = dict(headers)
    if REQUEST_ID_HEADER in named:
        headers = [h for h in headers if h[0] != REQUEST_ID_HEADER]
    _note(answer, named)
    return {**message, "headers": [*headers, answer.marked]}


def _note(answer: _Answer, named: dict[bytes, bytes]) -> None:
    """What served the answer (`X-Service-Model-Used` before audio's two headers), and
    whether it streams and how long it is."""
    used = named.get(b"x-service-model-used")
    if used is not None:
        provider, _, model = used.decode("latin-1").partition("/")
        answer.provider, answer.model = provider, model or None
    else:
        provider_header, model_header = (
            named.get(b"x-service-provider"),
            named.get(b"x-service-model"),
        )
        if provider_header is not None:
            answer.provider = provider_header.decode("latin-1")
        if model_header is not None:
            answer.model = model_header.decode("latin-1")
    content_type = named.get(b"content-type")
    if content_type is not None:
        answer.stream = content_type.startswith(b"text/event-stream")
    length = named.get(b"content-length")
    if length is not None and length.isdigit():
        answer.length = int(length)


def _completes(answer: _Answer, message: Message) -> bool:
    """Whether this body message carries the last bytes of a body of known length: the
    answer is counted and logged before they leave, as it is before an end message."""
    if answer.length is None:
        return False
    answer.length -= len(message.get("body", b""))
    return answer.length <= 0


def _served_by(context: RequestContext, answer: _Answer) -> tuple[str | None, str | None]:
    """Provider and model: from the request's usage records, else (a record written
    after the answer, or the usage log off) from the answer's headers."""
    if context.provider or context.model:
        return context.provider, context.model
    return answer.provider, answer.model


def _end_span(
    context: RequestContext, status: int, provider: str | None, model: str | None
) -> None:
    span = context.span
    span.set_attribute("http.response.status_code", status)
    if provider:
        span.set_attribute("gen_ai.provider.name", provider)
    if model:
        span.set_attribute("gen_ai.response.model", model)
    if context.prompt_tokens or context.completion_tokens:
        span.set_attribute("gen_ai.usage.input_tokens", context.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", context.completion_tokens)
    span.set_attribute("gateway.cost_usd", context.cost_usd)
    if status >= 500:
        span.fail(f"HTTP {status}")
    span.end()


def _fields(answer: _Answer) -> dict[str, Any]:
    context, scope, body = answer.context, answer.scope, answer.body
    provider, model = _served_by(context, answer)
    fields: dict[str, Any] = {
        "request_id": context.request_id,
        "trace_id": context.trace_id,
        "method": scope["method"],
        "route": scope["path"],
        "family": answer.family,
        "status": answer.status,
        "latency_ms": round(answer.elapsed_s * 1000, 2),
        "upstream_ms": round(context.upstream_s * 1000, 2),
        "provider": provider,
        "model": model,
        "prompt_tokens": context.prompt_tokens,
        "completion_tokens": context.completion_tokens,
        "cost_usd": round(context.cost_usd, 8),
        "workspace_id": context.workspace_id,
        "key_id": context.key_id,
        "stream": answer.stream,
    }
    if context.client_request_id is not None:
        fields["client_request_id"] = context.client_request_id
    if body is not None:
        fields["body"] = body.decode("utf-8", "replace")
    return fields
