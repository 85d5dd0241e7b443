"""Every answer names its request: `X-Request-ID` on all of them (files, management, MCP,
a 404 as much as chat), the client's own id kept when valid and logged when not, and the
access log line naming the same id, the trace, the model, the tokens and the cost."""

from __future__ import annotations

import io
import uuid
from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.tracecontext import (
    TraceParent,
    new_request_id,
    parse_traceparent,
    valid_request_id,
)
from tests.operator.log_capture import line_of, log_stream

__all__ = ["log_stream"]  # the fixture
HELLO: Any = [{"role": "user", "content": "Hello"}]
MCP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("GET", "/v1/files", None, 200),
        ("GET", "/v1/management/api-keys", None, 200),
        ("POST", "/v1/mcp", MCP_INIT, 403),  # an admin key is not an agent's
        ("GET", "/v1/no-such-route", None, 404),
        ("GET", "/health", None, 200),
    ],
)
async def test_every_answer_carries_a_request_id_its_log_line_names(
    http: httpx.AsyncClient,
    log_stream: io.StringIO,
    method: str,
    path: str,
    body: Any,
    status: int,
) -> None:
    answer = await http.request(
        method, path, json=body, headers={"accept": "application/json, text/event-stream"}
    )
    assert answer.status_code == status, answer.text
    request_id = answer.headers["x-request-id"]
    assert uuid.UUID(request_id)
    assert len(answer.headers.get_list("x-request-id")) == 1
    line = line_of(log_stream, request_id)
    assert (line["route"], line["status"]) == (path, status)


async def test_a_clients_valid_request_id_is_kept_everywhere(
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
    log_stream: io.StringIO,
) -> None:
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=HELLO, extra_headers={"X-Request-ID": "client-req_42.a:b"}
    )
    assert raw.headers["x-request-id"] == "client-req_42.a:b"
    assert raw.parse().model_extra["_gateway"]["request_id"] == "client-req_42.a:b"  # type: ignore[index]
    line = line_of(log_stream, "client-req_42.a:b")
    assert line["route"] == "/v1/chat/completions"
    assert "client_request_id" not in line
    logged = await http.get("/v1/management/request-log/client-req_42.a:b")
    assert logged.status_code == 200, logged.text
    management = await http.get("/v1/management/api-keys", headers={"X-Request-ID": "mgmt-1"})
    assert management.headers["x-request-id"] == "mgmt-1"
    missing = await http.get("/v1/nothing-here", headers={"X-Request-ID": "lost-1"})
    assert (missing.status_code, missing.headers["x-request-id"]) == (404, "lost-1")


@pytest.mark.parametrize(
    "sent", ["has spaces", 'quo"te', "slash/ed", "x" * 129, "", "naïve", "a,b"]
)
async def test_an_invalid_request_id_is_replaced_and_logged(
    http: httpx.AsyncClient, log_stream: io.StringIO, sent: str
) -> None:
    answer = await http.get("/v1/management/api-keys", headers={"X-Request-ID": sent.encode()})
    assert answer.status_code == 200
    replaced = answer.headers["x-request-id"]
    assert uuid.UUID(replaced)
    line = line_of(log_stream, replaced)
    assert line["client_request_id"] == sent.encode().decode("latin-1")[:128]


async def test_the_access_log_names_the_model_tokens_cost_and_trace(
    client: openai.AsyncOpenAI, log_stream: io.StringIO
) -> None:
    trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=HELLO, extra_headers={"traceparent": trace}
    )
    usage = raw.parse().usage
    assert usage is not None
    line = line_of(log_stream, raw.headers["x-request-id"])
    assert (line["provider"], line["model"]) == ("openai", "gpt-4o-mini")
    assert line["prompt_tokens"] == usage.prompt_tokens
    assert line["completion_tokens"] == usage.completion_tokens
    assert line["cost_usd"] > 0
    assert line["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("0f8fad5b-d9cb-469f-a165-70867728950e", True),
        ("01ARZ3NDEKTSV4RRFFQ69G5FAV", True),
        ("req_1.2:3-4", True),
        ("a" * 128, True),
        ("a" * 129, False),
        ("", False),
        ("a b", False),
        ("a/b", False),
        ("é", False),
        ("<script>", False),
    ],
)
def test_what_a_valid_request_id_is(value: str, valid: bool) -> None:
    assert valid_request_id(value) is valid


def test_the_gateways_request_ids_are_random_version_4_uuids() -> None:
    """Made from random bytes without `uuid.uuid4()`: still a canonical version 4 UUID
    (version and variant bits, lower-case, hyphens where `str(UUID)` puts them), valid as
    a request id, and every variant digit is reached (two random bits, not a constant)."""
    ids = [new_request_id() for _ in range(400)]
    for made in ids:
        parsed = uuid.UUID(made)
        assert str(parsed) == made
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert valid_request_id(made)
    assert len(set(ids)) == len(ids)
    assert {made[19] for made in ids} == set("89ab")


@pytest.mark.parametrize(
    ("header", "parsed"),
    [
        (
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            TraceParent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", 1),
        ),
        (
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 ",
            TraceParent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", 0),
        ),
        (  # a later version is read by its first four fields
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future",
            TraceParent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", 1),
        ),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", None),
        ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None),
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", None),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", None),
        ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", None),
        ("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", None),
        ("garbage", None),
        (None, None),
    ],
)
def test_traceparent_parsing_follows_the_w3c_rules(
    header: str | None, parsed: TraceParent | None
) -> None:
    assert parse_traceparent(header) == parsed
    if parsed is not None:
        assert parsed.header() == f"00-{parsed.trace_id}-{parsed.parent_id}-{parsed.flags:02x}"
