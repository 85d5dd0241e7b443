"""Small HTTP/1.1 servers for the tracing tests, on h11 and trio: an OTLP/HTTP receiver
that decodes the protobuf the exporter sends, and an OpenAI-shaped upstream that records
the headers each request brought.

Both keep connections alive (the OTLP exporter's `requests` session and the gateway's
pool reuse them) and live in the test's nursery.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import attrs
import h11
import httpx
import pytest
import trio
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

Answer = tuple[int, str, bytes]  # status, content type, body


@attrs.frozen
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Handler = Callable[[Seen], Awaitable[Answer]]


async def serve(handler: Handler, *, task_status: trio.TaskStatus[str]) -> None:
    """Serve `handler` on a free loopback port; reports the base URL."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    task_status.started(f"http://127.0.0.1:{port}")
    await trio.serve_listeners(partial(_connection, handler), listeners)


async def _connection(handler: Handler, stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER)
    async with stream:
        while True:
            seen = await _request(conn, stream)
            if seen is None:
                return
            status, content_type, body = await handler(seen)
            head = h11.Response(
                status_code=status,
                headers=[("content-type", content_type), ("content-length", str(len(body)))],
            )
            await stream.send_all(
                conn.send(head) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
            )
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()


async def _request(conn: h11.Connection, stream: trio.SocketStream) -> Seen | None:
    request: h11.Request | None = None
    body = b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive_some()
            except trio.BrokenResourceError:  # a client gone with a reset (the exporter's
                return None  # process ending at the gateway's shutdown): closed, as EOF is
            if not data:
                return None
            conn.receive_data(data)
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert request is not None
            headers = {k.decode().lower(): v.decode("latin-1") for k, v in request.headers}
            return Seen(request.method.decode(), request.target.decode(), headers, body)
        elif isinstance(event, h11.ConnectionClosed):
            return None


@attrs.frozen
class ExportedSpan:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int  # 2: server, 3: client
    attributes: dict[str, Any]
    error: bool
    service: str


@attrs.define
class OtlpReceiver:
    """What an OpenTelemetry Collector's OTLP/HTTP traces endpoint would receive."""

    spans: list[ExportedSpan] = attrs.field(factory=list)
    content_types: list[str] = attrs.field(factory=list)
    arrived: trio.Event = attrs.field(factory=trio.Event)

    async def handle(self, seen: Seen) -> Answer:
        assert (seen.method, seen.path) == ("POST", "/v1/traces")
        self.content_types.append(seen.headers.get("content-type", ""))
        request = ExportTraceServiceRequest()
        request.ParseFromString(seen.body)
        for resource in request.resource_spans:
            service = _attributes(resource.resource.attributes).get("service.name", "")
            for scope in resource.scope_spans:
                self.spans.extend(_span(span, service) for span in scope.spans)
        self.arrived.set()
        self.arrived = trio.Event()
        answer = ExportTraceServiceResponse().SerializeToString()
        return 200, "application/x-protobuf", answer


def _span(span: Any, service: str) -> ExportedSpan:
    return ExportedSpan(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex(),
        name=span.name,
        kind=int(span.kind),
        attributes=_attributes(span.attributes),
        error=span.status.code == 2,
        service=service,
    )


def _attributes(items: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in items:
        value = item.value
        kind = value.WhichOneof("value")
        found[item.key] = getattr(value, kind) if kind else None
    return found


@attrs.define
class RecordingUpstream:
    """An OpenAI-shaped chat upstream that answers every request whole and keeps the
    headers each one brought."""

    seen: list[Seen] = attrs.field(factory=list)

    async def handle(self, seen: Seen) -> Answer:
        self.seen.append(seen)
        answer = {
            "id": "chatcmpl-recorded",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Recorded."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        }
        return 200, "application/json", json.dumps(answer).encode()


@pytest.fixture
async def receiver(nursery: trio.Nursery) -> tuple[OtlpReceiver, str]:
    """An OTLP receiver serving in the test's nursery, and its base URL."""
    found = OtlpReceiver()
    url: str = await nursery.start(partial(serve, found.handle))
    return found, url


async def recording_openai(nursery: trio.Nursery, http: httpx.AsyncClient) -> RecordingUpstream:
    """A recording upstream, and the workspace's OpenAI provider pointed at it."""
    recorder = RecordingUpstream()
    url = await nursery.start(partial(serve, recorder.handle))
    patched = await http.patch(
        "/v1/management/providers/openai", json={"settings": {"base_url": url}}
    )
    assert patched.status_code == 200, patched.text
    return recorder
