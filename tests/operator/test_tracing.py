"""Tracing on: OpenTelemetry spans of the request, each upstream attempt and each
pipeline stage, exported over OTLP/HTTP to an in-process receiver that decodes the
protobuf; the upstream sees the attempt's span as its parent. The fallback proof: the
first vendor failing (the simulator's fault controls) shows as two attempt spans and as
two attempts in the request's log entry."""

from __future__ import annotations

from typing import Any

import attrs
import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from providers.sim.core import Fault
from tests.gateway.pipelines.test_pipelines_api import spoken_wav
from tests.operator.prom import scrape, total
from tests.operator.tiny_http import ExportedSpan, OtlpReceiver, receiver, recording_openai

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{CALLER_SPAN}-01"
HELLO: Any = [{"role": "user", "content": "Hello"}]
__all__ = ["receiver"]  # the fixture
SERVER, CLIENT = 2, 3


@pytest.fixture
def settings(settings: Settings, receiver: tuple[OtlpReceiver, str]) -> Settings:
    return attrs.evolve(
        settings, otlp_endpoint=receiver[1] + "/v1/traces", otlp_headers="x-api-key=collector"
    )


async def exported(
    gateway: RunningGateway, receiver: OtlpReceiver, trace_id: str, count: int
) -> list[ExportedSpan]:
    """The spans of `trace_id` once `count` of them, the request's among them, have
    arrived (the export worker is woken rather than waited for)."""
    tracing = gateway.state.tracing
    assert tracing is not None

    def of_trace() -> list[ExportedSpan]:
        return [s for s in receiver.spans if s.trace_id == trace_id]

    with trio.fail_after(10):
        while (
            len(of_trace()) < count
            or SERVER not in {s.kind for s in of_trace()}
            or tracing.exported < tracing.queue.ended  # every ended span sent
        ):
            tracing.queue.ready.set()
            with trio.move_on_after(0.2):
                await receiver.arrived.wait()
    return of_trace()


@pytest.mark.parametrize("stream", [False, True])
async def test_a_fallback_shows_in_the_exported_spans_and_the_request_log(
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
    receiver: tuple[OtlpReceiver, str],
    stream: bool,
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini",
        messages=HELLO,
        stream=stream,
        extra_headers={"traceparent": TRACEPARENT, "X-Request-ID": f"traced-{stream}"},
    )
    if stream:
        [_ async for _ in raw.parse()]  # type: ignore[union-attr]
    spans = await exported(gateway, receiver[0], TRACE, 3)
    [request] = [s for s in spans if s.kind == SERVER]
    assert request.parent_id == CALLER_SPAN  # the caller's span is the request's parent
    assert request.service == "ai-gateway"
    assert request.attributes["gateway.request_id"] == f"traced-{stream}"
    assert request.attributes["http.response.status_code"] == 200
    assert request.attributes["gen_ai.usage.output_tokens"] > 0
    attempts = [s for s in spans if s.kind == CLIENT]
    assert [s.parent_id for s in attempts] == [request.span_id] * 2
    by_outcome = {s.attributes["gateway.outcome"]: s for s in attempts}
    failed, answered = by_outcome["failed"], by_outcome["answered"]
    assert failed.attributes["gen_ai.provider.name"] == "openai"
    assert failed.attributes["error.type"] == "provider_error" and failed.error
    assert answered.attributes["gateway.outcome"] == "answered" and not answered.error
    [entry] = (await http.get(f"/v1/management/request-log/traced-{stream}")).json()["entries"]
    assert entry["trace_id"] == TRACE
    assert [a["provider"] for a in entry["attempts"]] == [
        failed.attributes["gen_ai.provider.name"],
        answered.attributes["gen_ai.provider.name"],
    ]
    assert entry["provider"] == request.attributes["gen_ai.provider.name"]
    assert set(receiver[0].content_types) == {"application/x-protobuf"}


async def test_the_upstream_sees_the_attempts_span_as_its_parent(
    nursery: trio.Nursery,
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
    receiver: tuple[OtlpReceiver, str],
) -> None:
    upstream = await recording_openai(nursery, http)
    await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=HELLO,
        extra_headers={"traceparent": TRACEPARENT, "tracestate": "vendor=abc"},
    )
    [seen] = upstream.seen
    _, trace_id, parent_id, flags = seen.headers["traceparent"].split("-")
    assert (trace_id, flags) == (TRACE, "01")
    assert seen.headers["tracestate"] == "vendor=abc"
    spans = await exported(gateway, receiver[0], TRACE, 2)
    [attempt] = [s for s in spans if s.kind == CLIENT]
    assert attempt.span_id == parent_id
    await client.chat.completions.create(
        model="gpt-4o-mini", messages=[HELLO[0] | {"content": "x"}]
    )
    started = upstream.seen[-1].headers["traceparent"].split("-")[1]
    assert started != TRACE  # no caller trace: the gateway starts one
    assert len(await exported(gateway, receiver[0], started, 2)) == 2
    found = await scrape(http)
    assert total(found, "gateway_trace_spans_total", fate="exported") >= 4
    assert total(found, "gateway_trace_spans_total", fate="dropped") == 0


async def test_a_pipelines_stages_are_spans_under_the_request(
    gateway: RunningGateway, http: httpx.AsyncClient, receiver: tuple[OtlpReceiver, str]
) -> None:
    wav = await spoken_wav(http, "What is the weather like?")
    answer = await http.post(
        "/v1/audio/pipelines",
        files={"audio": ("turn.wav", wav, "audio/wav")},
        data={"template": "voice-agent-fast"},
        headers={"traceparent": TRACEPARENT},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    spans = await exported(gateway, receiver[0], TRACE, 4)
    [request] = [s for s in spans if s.kind == SERVER]
    stages = [s for s in spans if "gateway.stage" in s.attributes]
    assert {s.attributes["gateway.stage"] for s in stages} == {"stt", "llm", "tts"}
    assert {s.parent_id for s in stages} == {request.span_id}
    stage_ids = {s.span_id for s in stages}
    attempts = [s for s in spans if s.kind == CLIENT]
    assert attempts and all(a.parent_id in stage_ids for a in attempts)


async def test_an_unsampled_caller_trace_exports_nothing_and_says_so_upstream(
    nursery: trio.Nursery,
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
    receiver: tuple[OtlpReceiver, str],
) -> None:
    upstream = await recording_openai(nursery, http)
    unsampled = f"00-{TRACE}-{CALLER_SPAN}-00"
    tracing = gateway.state.tracing
    assert tracing is not None
    ended = tracing.queue.ended
    await client.chat.completions.create(
        model="gpt-4o-mini", messages=HELLO, extra_headers={"traceparent": unsampled}
    )
    [seen] = upstream.seen
    assert seen.headers["traceparent"].startswith(f"00-{TRACE}-")
    assert seen.headers["traceparent"].endswith("-00")
    assert tracing.queue.ended == ended  # not recorded: nothing to export
