"""The outermost ASGI layer: counts, times and logs every HTTP answer.

It sees what Quart and the chat fast path send, without either knowing it: the status,
the `X-Request-ID` and `X-Service-Model-Used` headers (the provider that served), and
whether the answer is a stream. Its cost per request is one context variable, a few
dictionary look-ups and counter increments; the log line is formatted only when the
access logger is enabled.

Cancellation (a client disconnect) passes through untouched; the `finally` clauses only
settle the open-stream gauge and write the log line with status 499 when no answer
started.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from gateway.operator.families import family_of
from gateway.operator.metrics import GatewayMetrics
from gateway.platform.context import RequestContext, open_request
from gateway.platform.request_link import without_link

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

access_log = logging.getLogger("gateway.access")
CLIENT_CLOSED = 499
BODY_LOG_LIMIT = 4096


@attrs.define
class _Answer:
    """What the app has sent so far."""

    started_at: float
    status: int = CLIENT_CLOSED
    first_byte_s: float | None = None
    request_id: str | None = None
    provider: str | None = None
    stream: bool = False
    counted: bool = False
    elapsed_s: float = 0.0


class ObservedApp:
    """Wrap `app` so that every HTTP request is counted in `metrics` and logged.

    `log_bodies` (the `log_request_bodies` debug setting) adds the start of each request
    body to its log line; it is off by default because bodies hold prompts.
    """

    def __init__(self, app: Any, metrics: GatewayMetrics, *, log_bodies: bool = False) -> None:
        self.app = app
        self.metrics = metrics
        self.log_bodies = log_bodies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        context = open_request()
        family = family_of(scope["path"])
        answer = _Answer(time.perf_counter())
        body = bytearray() if self.log_bodies else None
        if body is not None:  # the body must come through watched_receive
            scope = without_link(scope)

        async def watched_receive() -> Message:
            message = await receive()
            if body is not None and len(body) < BODY_LOG_LIMIT:
                body.extend(message.get("body", b"")[: BODY_LOG_LIMIT - len(body)])
            return message

        async def watched_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                _started(answer, message)
                if answer.stream:
                    self.metrics.stream_opened(family)
            elif not message.get("more_body", False):
                self._settle(scope, family, answer, context, body)
            await send(message)

        try:
            await self.app(scope, watched_receive if body is not None else receive, watched_send)
        finally:
            if answer.stream:
                self.metrics.stream_closed(family)
            self._settle(scope, family, answer, context, body)

    def _settle(
        self,
        scope: Scope,
        family: str,
        answer: _Answer,
        context: RequestContext,
        body: bytearray | None,
    ) -> None:
        """Count and log the answer, once: before its last byte leaves (so that whoever
        saw it end finds it counted), or when the handler ends without one."""
        if answer.counted:
            return
        answer.counted = True
        elapsed = time.perf_counter() - answer.started_at
        first_byte = answer.first_byte_s if answer.first_byte_s is not None else elapsed
        self.metrics.answered(
            family, answer.status, answer.provider, first_byte, context.upstream_s
        )
        answer.elapsed_s = elapsed
        if access_log.isEnabledFor(logging.INFO):
            fields = _fields(scope, family, answer, context, body)
            access_log.info("request", extra={"fields": fields})


def _started(answer: _Answer, message: Message) -> None:
    answer.first_byte_s = time.perf_counter() - answer.started_at
    answer.status = int(message["status"])
    for name, value in message.get("headers", ()):
        lowered = name.lower()
        if lowered == b"x-request-id":
            answer.request_id = value.decode("latin-1")
        elif lowered == b"x-service-model-used":
            answer.provider = value.decode("latin-1").partition("/")[0]
        elif lowered == b"content-type":
            answer.stream = value.startswith(b"text/event-stream")


def _fields(
    scope: Scope,
    family: str,
    answer: _Answer,
    context: RequestContext,
    body: bytearray | None,
) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "request_id": answer.request_id,
        "method": scope["method"],
        "route": scope["path"],
        "family": family,
        "status": answer.status,
        "latency_ms": round(answer.elapsed_s * 1000, 2),
        "upstream_ms": round(context.upstream_s * 1000, 2),
        "provider": answer.provider,
        "workspace_id": context.workspace_id,
        "key_id": context.key_id,
        "stream": answer.stream,
    }
    if body is not None:
        fields["body"] = body.decode("utf-8", "replace")
    return fields
