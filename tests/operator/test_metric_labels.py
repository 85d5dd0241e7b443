"""Metrics and logs name what served each request, whatever the family: audio under its
vendor, MCP and agents as families of their own, a failed request under the provider
that failed it, and the time to first token and each attempt's outcome counted."""

from __future__ import annotations

import io
from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from tests.gateway.pipelines.test_pipelines_api import spoken_wav
from tests.operator.log_capture import line_of, log_stream
from tests.operator.prom import scrape, total

__all__ = ["log_stream"]  # the fixture

HELLO: Any = [{"role": "user", "content": "Hello"}]


async def test_speech_is_labelled_with_the_vendor_that_served_it(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient, log_stream: io.StringIO
) -> None:
    before = await scrape(http)
    speech = await client.audio.speech.with_raw_response.create(
        model="tts-1", voice="nova", input="The quick brown fox.", response_format="wav"
    )
    after = await scrape(http)
    grew = total(
        after, "gateway_requests_total", family="audio", provider="openai", model="tts-1"
    ) - total(before, "gateway_requests_total", family="audio", provider="openai")
    assert grew == 1
    assert total(after, "gateway_requests_total", family="audio", provider="none") == 0
    line = line_of(log_stream, speech.headers["x-request-id"])
    assert (line["provider"], line["model"]) == ("openai", "tts-1")
    assert line["cost_usd"] > 0


async def test_mcp_and_agents_are_families_of_their_own(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await http.post("/v1/mcp/agents", json={"name": "labelled"})
    assert created.status_code == 201, created.text
    agent = created.json()
    assert (await http.get(f"/v1/mcp/agents/{agent['id']}/usage")).status_code == 200
    mcp = await http.post(
        "/v1/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        headers={
            "authorization": f"Bearer {agent['key']}",
            "accept": "application/json, text/event-stream",
        },
    )
    assert mcp.status_code == 200, mcp.text
    found = await scrape(http)
    assert total(found, "gateway_requests_total", family="agents", status="201") == 1
    assert total(found, "gateway_requests_total", family="agents", status="200") == 1
    assert total(found, "gateway_requests_total", family="mcp", status="200") == 1
    assert total(found, "gateway_requests_total", family="other") == 0


async def test_a_failed_request_is_labelled_with_the_provider_that_failed_it(
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
    log_stream: io.StringIO,
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="*", status=500))
    with pytest.raises(openai.APIStatusError) as failed:
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    error = failed.value.response
    assert error.status_code == 502
    last = error.json()["error"]["attempts"][-1]
    line = line_of(log_stream, error.headers["x-request-id"])
    assert (line["provider"], line["model"]) == (last["provider"], last["model"])
    found = await scrape(http)
    assert (
        total(
            found, "gateway_requests_total", family="chat", status="502", provider=last["provider"]
        )
        == 1
    )
    assert total(found, "gateway_requests_total", family="chat", status="502", provider="none") == 0


async def test_time_to_first_token_and_attempt_outcomes_are_counted(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500, remaining=1))
    stream = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, stream=True)
    async for _ in stream:
        pass
    await gateway.state.usage.flush()
    found = await scrape(http)
    assert total(found, "gateway_time_to_first_token_seconds_count", family="chat") == 1
    assert (
        total(
            found,
            "gateway_upstream_attempts_total",
            provider="openai",
            model="gpt-4o-mini",
            outcome="failed",
            error="provider_error",
        )
        == 1
    )
    assert total(found, "gateway_upstream_attempts_total", outcome="won") == 1
    assert total(found, "gateway_upstream_attempt_duration_seconds_count", outcome="won") == 1


async def test_ocr_and_files_are_labelled_with_what_served_them(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient, log_stream: io.StringIO
) -> None:
    from tests.gateway import documents

    pdf = documents.pdf_with_text(["Invoice: 4711"])
    read = await http.post("/v1/ocr", files={"file": ("invoice.pdf", pdf)}, timeout=60)
    assert read.status_code == 200, read.text
    stored = await client.files.with_raw_response.create(
        file=("notes.txt", b"hello files"), purpose="assistants"
    )
    found = await scrape(http)
    assert total(found, "gateway_requests_total", family="ocr", provider="mistral") == 1
    assert total(found, "gateway_requests_total", family="ocr", model="mistral-ocr-latest") == 1
    assert (
        total(found, "gateway_requests_total", family="files", status="200", provider="gateway")
        == 1
    )
    line = line_of(log_stream, read.headers["x-request-id"])
    assert (line["provider"], line["model"]) == ("mistral", "mistral-ocr-latest")
    line = line_of(log_stream, stored.headers["x-request-id"])
    assert (line["provider"], line["model"]) == ("gateway", "file-storage")


async def test_a_pipeline_is_labelled_with_the_vendor_of_its_last_stage(
    http: httpx.AsyncClient, log_stream: io.StringIO
) -> None:
    """A voice pipeline calls three models; its request is counted as the pipelines
    family (not audio, whose path it shares) under the one whose answer it ends with
    (the speech), never `none`, in /metrics and in its log line."""
    wav = await spoken_wav(http, "What is the weather like?")
    before = await scrape(http)
    answer = await http.post(
        "/v1/audio/pipelines",
        files={"audio": ("turn.wav", wav, "audio/wav")},
        data={"template": "voice-agent-fast"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    after = await scrape(http)
    line = line_of(log_stream, answer.headers["x-request-id"])
    provider, model = line["provider"], line["model"]
    assert provider and provider != "none" and model
    assert line["family"] == "pipelines"
    labels = {"family": "pipelines", "provider": provider, "model": model}
    assert (
        total(after, "gateway_requests_total", **labels)
        - total(before, "gateway_requests_total", **labels)
        == 1
    )
    assert total(after, "gateway_requests_total", family="pipelines", provider="none") == 0
    assert line["cost_usd"] > 0
