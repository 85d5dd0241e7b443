"""The span exporter's own process: `python -m gateway.workers.trace_child`.

Why a process: encoding and sending the spans is Python work which in the gateway's
process would hold the interpreter lock its event loop needs. Here it has an interpreter,
and a lower CPU priority, of its own.

Plain synchronous code, no trio: read a framed batch of span rows from stdin (the
gateway's `gateway.platform.tracing.Span.row`, framed as the usage writer's wire is),
encode them as one OTLP `ExportTraceServiceRequest` (`gateway.workers.otlp_encoding`,
straight from the rows: no SDK span object per span), send it with the SDK's OTLP/HTTP
exporter's client (its retries, backoff, compression and TLS settings; the endpoint,
headers and timeout from the environment: the headers hold a collector's key, never on a
command line), answer `[seq, exported, failed]`, repeat. End of input
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
from typing import TYPE_CHECKING, BinaryIO

import orjson

from gateway.workers import otlp_encoding
from gateway.workers.usage_wire import frame, read_frame

if TYPE_CHECKING:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

logger = logging.getLogger("gateway.workers.trace_child")

SERVICE_NAME = "ai-gateway"
SCOPE_NAME = "gateway"
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


def serve(batches: BinaryIO, acks: BinaryIO, exporter: OTLPSpanExporter) -> None:
    """Export every batch read from `batches`, answering each on `acks`, until the end of
    input."""
    from opentelemetry.sdk.resources import Resource

    resource = otlp_encoding.resource(Resource.create({"service.name": SERVICE_NAME}).attributes)
    scope = otlp_encoding.scope(SCOPE_NAME)
    while (payload := read_frame(batches)) is not None:
        seq, rows = orjson.loads(payload)
        body = otlp_encoding.export_request(rows, resource, scope)
        if _send(exporter, body):
            answer = [seq, len(rows), 0]
        else:
            logger.warning("could not export %d spans to the OTLP endpoint", len(rows))
            answer = [seq, 0, len(rows)]
        acks.write(frame(orjson.dumps(answer)))
        acks.flush()


def _send(exporter: OTLPSpanExporter, body: bytes) -> bool:
    """Post an encoded request through the exporter's HTTP client: its `export` takes
    only SDK spans, and encodes them itself (the cost `otlp_encoding` avoids), while its
    client is where the SDK keeps the OTLP/HTTP transport's rules (retries on 429 and 5xx
    within the timeout, `Retry-After`, compression, TLS). Not public API: pinned by
    `tests/operator/test_tracing.py`, which exports through it to a receiver."""
    return bool(exporter._client.export(body).success)


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
