"""The export process's OTLP encoder (`gateway.workers.otlp_encoding`) writes, from the
gateway's span rows, the very bytes the OpenTelemetry SDK's encoder writes for the same
spans built as SDK `ReadableSpan`s (what the export process did before), so a collector
cannot tell the two apart. The spans here are the shapes the gateway makes: a request's
root span, its attempts under it, a caller's remote parent, failures with and without a
message, and every attribute type a row can carry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from gateway.platform.tracing import CLIENT, INTERNAL, SERVER, Span, SpanQueue
from gateway.workers import otlp_encoding, trace_child

RESOURCE = Resource.create({"service.name": trace_child.SERVICE_NAME})
SCOPE = InstrumentationScope(trace_child.SCOPE_NAME)
TRACE = 0x4BF92F3577B34DA6A3CE929D0E0E4736
START = 1_795_000_000_123_456_789


def sdk_span(row: Sequence[Any]) -> ReadableSpan:
    """A row as the SDK's finished span (the export process's former path)."""
    name, kind, high, low, span_id, parent_id, remote, start, end, attributes, error = row
    trace_id = high << 64 | low
    sampled = TraceFlags(TraceFlags.SAMPLED)
    parent = None
    if parent_id is not None:
        parent = SpanContext(trace_id, parent_id, is_remote=remote, trace_flags=sampled)
    return ReadableSpan(
        name=name,
        context=SpanContext(trace_id, span_id, is_remote=False, trace_flags=sampled),
        parent=parent,
        resource=RESOURCE,
        attributes=attributes,
        kind=SpanKind(kind - 1),
        status=Status(StatusCode.ERROR, error) if error is not None else Status(StatusCode.UNSET),
        start_time=start,
        end_time=end,
        instrumentation_scope=SCOPE,
    )


def row(name: str, kind: int, parent: Span | None = None, **attributes: Any) -> list[Any]:
    """A span made and ended by the gateway's own `Span`, as the export process reads it
    (through orjson, as on the pipe)."""
    span = Span(SpanQueue(), name, kind, TRACE, parent, dict(attributes))
    span.start_ns, span.end_ns = START, START + 1_234_567
    return orjson.loads(orjson.dumps(span.row()))  # type: ignore[no-any-return]


def ours(rows: Sequence[Sequence[Any]]) -> bytes:
    resource = otlp_encoding.resource(RESOURCE.attributes)
    return otlp_encoding.export_request(rows, resource, otlp_encoding.scope(SCOPE.name))


def theirs(rows: Sequence[Sequence[Any]]) -> bytes:
    return encode_spans([sdk_span(r) for r in rows]).SerializePartialToString()  # type: ignore[no-any-return]


def decoded_spans(body: bytes) -> list[Any]:
    request = ExportTraceServiceRequest.FromString(body)
    return list(request.resource_spans[0].scope_spans[0].spans)


def request_and_attempts() -> list[list[Any]]:
    """A chat request's server span and two attempts under it, one failed."""
    request = Span(SpanQueue(), "POST /v1/chat/completions", SERVER, TRACE, None, {})
    won = row("upstream openai", CLIENT, request, **{"gen_ai.provider.name": "openai"})
    failed = row("upstream mistral", CLIENT, request, **{"gateway.outcome": "failed"})
    failed[-1] = "upstream answered 503: overloaded"
    root = row(request.name, SERVER, None, **{"http.response.status_code": 200})
    root[4] = request.span_id
    return [root, won, failed]


def test_a_requests_spans_encode_as_the_sdk_encodes_them() -> None:
    rows = request_and_attempts()
    assert ours(rows) == theirs(rows)
    decoded = ExportTraceServiceRequest.FromString(ours(rows))
    [resource_spans] = decoded.resource_spans
    [scope_spans] = resource_spans.scope_spans
    assert [s.name for s in scope_spans.spans] == [r[0] for r in rows]
    assert {s.parent_span_id for s in scope_spans.spans[1:]} == {rows[0][4].to_bytes(8, "big")}
    assert scope_spans.spans[2].status.code == 2


def test_a_callers_remote_parent_is_flagged_as_the_sdk_flags_it() -> None:
    span = Span(SpanQueue(), "POST /v1/embeddings", SERVER, TRACE, None, {})
    span.parent_id, span.remote_parent = 0x00F067AA0BA902B7, True
    span.start_ns, span.end_ns = START, START + 5
    rows = [orjson.loads(orjson.dumps(span.row()))]
    assert ours(rows) == theirs(rows)
    [decoded] = decoded_spans(ours(rows))
    assert decoded.flags == 0x300


@pytest.mark.parametrize(
    "value",
    [
        "",
        "é ok",
        "x" * 300,
        0,
        1,
        127,
        128,
        -1,
        -(1 << 63),
        (1 << 63) - 1,
        0.0,
        -2.5,
        1e300,
        True,
        False,
        None,
        [],
        ["a", "b"],
        [1, 2.5, True],
        {"nested": {"deeper": [1]}},
    ],
)
def test_every_attribute_value_encodes_as_the_sdk_encodes_it(value: Any) -> None:
    rows = [row("stage model", INTERNAL, None, value=value, **{"": "empty key"})]
    assert ours(rows) == theirs(rows)


def test_a_value_out_of_int64_is_left_out_as_the_sdk_leaves_it_out() -> None:
    rows = [row("stage speech", INTERNAL, None, kept="yes", too_big=1 << 63)]
    assert ours(rows) == theirs(rows)
    [decoded] = decoded_spans(ours(rows))
    assert [a.key for a in decoded.attributes] == ["kept"]


@pytest.mark.parametrize("error", ["", "the stage failed"])
def test_a_failure_with_or_without_a_message_encodes_as_the_sdk_encodes_it(error: str) -> None:
    failed = row("stage recognition", INTERNAL, None, **{"error.type": "upstream_error"})
    failed[-1] = error
    assert ours([failed]) == theirs([failed])


def test_a_full_batch_encodes_as_the_sdk_encodes_it() -> None:
    rows = request_and_attempts() * 200
    assert ours(rows) == theirs(rows)
