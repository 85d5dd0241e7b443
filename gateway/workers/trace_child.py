"""The span exporter's own process: `python -m gateway.workers.trace_child`.

Why a process: the OpenTelemetry SDK's span objects and its OTLP protobuf encoding are
Python work (some 90 microseconds a span here), which in the gateway's process would hold
the interpreter lock its event loop needs. Here the SDK has an interpreter, and a lower
CPU priority, of its own.

Plain synchronous code, no trio: read a framed batch of span rows from stdin (the
gateway's `gateway.platform.tracing.Span.row`, framed as the usage writer's wire is),
build the SDK's `ReadableSpan`s from them, export them with the SDK's OTLP/HTTP exporter
(the endpoint, headers and timeout from the environment: the headers hold a collector's
key, never on a command line), answer `[seq, exported, failed]`, repeat. End of input
(the gateway closed the pipe, or died) means: exit. SIGINT and SIGTERM are ignored, as
the usage writer's child ignores them: the gateway stops it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from gateway.workers.usage_wire import frame, read_frame

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

logger = logging.getLogger("gateway.workers.trace_child")

SERVICE_NAME = "ai-gateway"
ENDPOINT_VARIABLE = "GATEWAY_OTLP_ENDPOINT"
HEADERS_VARIABLE = "GATEWAY_OTLP_HEADERS"
TIMEOUT_VARIABLE = "GATEWAY_OTLP_TIMEOUT_S"
NICENESS = 10


def main(argv: Sequence[str]) -> int:
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="trace-exporter[%(process)d] %(message)s"
    )
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(OSError):  # not allowed: still correct, at the same priority
        os.nice(NICENESS)
    # The SDK is imported here only: the gateway imports this module for its names.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    acks = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints cannot corrupt frames
    exporter = OTLPSpanExporter(
        endpoint=os.environ[ENDPOINT_VARIABLE],
        headers=parse_headers(os.environ.get(HEADERS_VARIABLE)),
        timeout=float(os.environ.get(TIMEOUT_VARIABLE, "10")),
    )
    try:
        serve(sys.stdin.buffer, acks, exporter)
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]
    return 0


def serve(batches: BinaryIO, acks: BinaryIO, exporter: Any) -> None:
    """Export every batch read from `batches`, answering each on `acks`, until the end of
    input."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    resource = Resource.create({"service.name": SERVICE_NAME})
    scope = InstrumentationScope("gateway")
    while (payload := read_frame(batches)) is not None:
        seq, rows = orjson.loads(payload)
        spans = [readable(row, resource, scope) for row in rows]
        if exporter.export(spans) is SpanExportResult.SUCCESS:
            answer = [seq, len(spans), 0]
        else:
            logger.warning("could not export %d spans to the OTLP endpoint", len(spans))
            answer = [seq, 0, len(spans)]
        acks.write(frame(orjson.dumps(answer)))
        acks.flush()


def readable(row: Sequence[Any], resource: Resource, scope: InstrumentationScope) -> ReadableSpan:
    """One span row (`Span.row`) as the SDK's finished span."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    sampled = TraceFlags(TraceFlags.SAMPLED)
    name, kind, trace_id, span_id, parent_id, remote, start, end, attributes, error = row
    trace = int(trace_id, 16)
    parent = None
    if parent_id is not None:
        parent = SpanContext(trace, int(parent_id, 16), is_remote=remote, trace_flags=sampled)
    return ReadableSpan(
        name=name,
        context=SpanContext(trace, int(span_id, 16), is_remote=False, trace_flags=sampled),
        parent=parent,
        resource=resource,
        attributes=attributes,
        kind=SpanKind(kind - 1),  # the SDK's enum counts from 0, OTLP's from 1
        status=Status(StatusCode.ERROR, error) if error is not None else Status(StatusCode.UNSET),
        start_time=start,
        end_time=end,
        instrumentation_scope=scope,
    )


def parse_headers(text: str | None) -> dict[str, str]:
    """`name=value,name=value` (the OTLP exporters' header form) as a dict."""
    headers = {}
    for item in (text or "").split(","):
        name, _, value = item.partition("=")
        if name.strip() and value.strip():
            headers[name.strip().lower()] = value.strip()
    return headers


if __name__ == "__main__":
    sys.exit(main(sys.argv))
