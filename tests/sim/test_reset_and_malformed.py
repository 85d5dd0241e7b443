"""The simulator's `reset` and `malformed` faults: a connection reset with no answer, a
whole JSON answer that is not JSON, a text stream with an event that is not JSON."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

from providers.sim.garble import MALFORMED_EVENT
from providers.sim.server import SimServer

DEADLINE = 10
AUTH = {"authorization": "Bearer k"}
CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
async def http(sim: SimServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"http://{sim.host}:{sim.port}") as client:
        yield client


async def _fault(http: httpx.AsyncClient, **fields: Any) -> None:
    created = await http.post("/_sim/faults", json={"model": "gpt-4o", "remaining": 1} | fields)
    assert created.status_code == 201, created.text


async def test_reset_drops_the_connection_without_an_answer(
    http: httpx.AsyncClient, sim: SimServer
) -> None:
    with trio.fail_after(DEADLINE):
        await _fault(http, reset=True, delay_ms=10)
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            await http.post("/openai/v1/chat/completions", json=CHAT, headers=AUTH)
        assert sim.stats.connections_cut == 1
        after = await http.post("/openai/v1/chat/completions", json=CHAT, headers=AUTH)
        assert after.status_code == 200  # used up: the next request is answered


async def test_malformed_whole_answer_is_not_json(http: httpx.AsyncClient) -> None:
    with trio.fail_after(DEADLINE):
        await _fault(http, malformed=True)
        answer = await http.post("/openai/v1/chat/completions", json=CHAT, headers=AUTH)
    assert answer.status_code == 200
    assert answer.content.startswith(b'{"')
    with pytest.raises(ValueError):
        json.loads(answer.content)


async def test_malformed_stream_carries_an_event_that_is_not_json(
    http: httpx.AsyncClient,
) -> None:
    with trio.fail_after(DEADLINE):
        await _fault(http, malformed=True)
        async with http.stream(
            "POST", "/openai/v1/chat/completions", json=CHAT | {"stream": True}, headers=AUTH
        ) as answer:
            body = await answer.aread()
    events = [e for e in body.split(b"\n\n") if e]
    assert events[1] + b"\n\n" == MALFORMED_EVENT
    broken = [e for e in events if e != b"data: [DONE]" and not _is_json(e[len(b"data: ") :])]
    assert broken == [events[1]]
    assert events[-1] == b"data: [DONE]"


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


async def test_reset_and_malformed_must_be_booleans(http: httpx.AsyncClient) -> None:
    for field in ("reset", "malformed"):
        bad = await http.post("/_sim/faults", json={"model": "m", field: "yes"})
        assert bad.status_code == 400
        assert field in bad.json()["error"]["message"]
