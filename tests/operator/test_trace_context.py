"""Tracing off (the default): a caller's W3C `traceparent` is honoured and handed to the
upstream unchanged, an invalid one is dropped, and no span object is ever made."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.platform.tracing import Span
from tests.operator.tiny_http import RecordingUpstream, recording_openai

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE}-00f067aa0ba902b7-01"
HELLO: Any = [{"role": "user", "content": "Hello"}]


@pytest.fixture
async def upstream(nursery: trio.Nursery, http: httpx.AsyncClient) -> RecordingUpstream:
    return await recording_openai(nursery, http)


async def test_the_callers_trace_reaches_the_upstream_unchanged(
    upstream: RecordingUpstream, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini",
        messages=HELLO,
        extra_headers={"traceparent": TRACEPARENT, "tracestate": "congo=t61rcWkgMzE"},
    )
    [seen] = upstream.seen
    assert seen.headers["traceparent"] == TRACEPARENT
    assert seen.headers["tracestate"] == "congo=t61rcWkgMzE"
    logged = await http.get(f"/v1/management/request-log/{raw.headers['x-request-id']}")
    assert logged.json()["entries"][0]["trace_id"] == TRACE


@pytest.mark.parametrize(
    "sent",
    [
        None,
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        f"ff-{TRACE}-00f067aa0ba902b7-01",
    ],
)
async def test_without_a_valid_trace_nothing_is_invented(
    upstream: RecordingUpstream,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
    sent: str | None,
) -> None:
    headers = {} if sent is None else {"traceparent": sent, "tracestate": "a=b"}
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=HELLO, extra_headers=headers
    )
    [seen] = upstream.seen
    assert "traceparent" not in seen.headers and "tracestate" not in seen.headers
    logged = await http.get(f"/v1/management/request-log/{raw.headers['x-request-id']}")
    assert logged.json()["entries"][0]["trace_id"] is None


async def test_no_span_object_is_made_when_tracing_is_off(
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[str] = []
    real = Span.__init__

    def counted(self: Span, queue: Any, name: str, *args: Any, **kwargs: Any) -> None:
        made.append(name)
        real(self, queue, name, *args, **kwargs)

    monkeypatch.setattr(Span, "__init__", counted)
    assert gateway.state.tracing is None and gateway.state.engine.tracing is None
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=HELLO, stream=True, extra_headers={"traceparent": TRACEPARENT}
    )
    async for _ in stream:
        pass
    await client.embeddings.create(model="text-embedding-3-small", input="hi")
    assert made == []
