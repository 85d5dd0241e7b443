"""A stream the upstream breaks never reaches the client as a silent truncation: it ends
with `[DONE]` (a retry or a fallback repaired it) or with an error event; each event the
client gets is JSON. The official client reads it to the end or raises."""

from __future__ import annotations

from typing import Any

import attrs
import httpx
import pytest

from bench.fault_requests import judge_stream
from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from providers.sim.core import Fault

BODY = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Tell me a long story."}],
    "service": {"cache": "skip"},
    "stream": True,
}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, stream_idle_timeout_s=0.5, first_chunk_timeout_s=0.5)


@pytest.mark.parametrize(
    "fault",
    [
        {"stop_after_chunks": 3},
        {"stop_after_chunks": 3, "stall_ms": 3000},
        {"malformed": True},
        {"reset": True},
        {"delay_ms": 2000},
        {"status": 529},
    ],
    ids=["cut", "stall", "malformed", "reset", "no-first-byte", "overloaded"],
)
async def test_a_broken_upstream_stream_ends_cleanly(
    gateway: RunningGateway, http: httpx.AsyncClient, fault: dict[str, Any]
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="*", **fault))
    async with http.stream("POST", "/v1/chat/completions", json=BODY) as answer:
        if answer.status_code != 200:
            error = (await answer.aread(), answer.json()["error"])[1]
            assert error["message"] and error["type"] and error["code"]
            return
        events = [line async for line in answer.aiter_lines() if line.startswith("data: ")]
    kind, detail = judge_stream(events)
    assert kind in ("success", "fallback", "stream_error_event"), (kind, detail, events[-3:])
