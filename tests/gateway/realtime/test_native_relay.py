"""`GET /v1/realtime` relaying a realtime-native model as it is (`gateway.realtime.native`):
with the OpenAI provider's `realtime_transport: "native"`, the official `openai` client's
conversation (two spoken turns, a function call, a barge-in and a truncate) runs on
the OpenAI simulator's Realtime API through the gateway, no cascade stage is called, and
the session's usage is the sum of the upstream's `response.done` usage, recorded once
by the engine."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import attrs
import httpx
import pytest
import trio
from websockets.sync.client import connect

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from providers.sim.core import Fault
from tests.gateway.pipelines.test_pipelines_api import sim_of
from tests.gateway.realtime.speech import (
    FIRST,
    SECOND,
    chunks,
    spoken_pcm,
    ws_base,
)
from tests.gateway.realtime.test_openai_realtime import (
    LONG_ANSWER,
    SHORT_ANSWER,
    assert_the_whole_conversation,
    scripted_conversation,
)
from tests.gateway.realtime.test_realtime_ws import BEARER, Client, in_thread
from tests.gateway.test_files_usage import usage_rows


async def session_rows(gateway: RunningGateway, count: int = 1) -> list[dict[str, Any]]:
    """The relayed session's `count` usage records, once the gateway has seen the client
    leave."""
    with trio.fail_after(10):
        while True:
            rows = [r for r in await usage_rows(gateway) if r["endpoint"] == "realtime"]
            if len(rows) >= count:
                return rows
            await trio.sleep(0.05)


async def limited_key(http: httpx.AsyncClient, rpm: int) -> str:
    body = {"name": "voice", "permissions": ["audio"], "rate_limits": {"rpm": rpm}}
    response = await http.post("/v1/management/api-keys", json=body)
    assert response.status_code == 201, response.text
    key: str = response.json()["key"]
    return key


def list_price_of(done: list[dict[str, Any]]) -> float:
    """gpt-realtime's list price of the answers' usage: text $4 / $16, audio $32 / $64 per
    1M tokens (the audio tokens are a part of the input and output counts)."""
    total, spoken = 0.0, [0, 0]
    for answer in done:
        usage = answer["usage"]
        audio_in = usage["input_token_details"]["audio_tokens"]
        audio_out = usage["output_token_details"]["audio_tokens"]
        spoken = [spoken[0] + audio_in, spoken[1] + audio_out]
        total += (usage["input_tokens"] - audio_in) * 4 + audio_in * 32
        total += (usage["output_tokens"] - audio_out) * 16 + audio_out * 64
    assert min(spoken) > 0  # the conversation is spoken both ways
    return total / 1_000_000


async def relay_natively(http: httpx.AsyncClient) -> None:
    response = await http.patch(
        "/v1/management/providers/openai", json={"settings": {"realtime_transport": "native"}}
    )
    assert response.status_code == 200, response.text


async def test_the_openai_clients_conversation_is_relayed_to_the_realtime_api(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await relay_natively(http)
    sim = sim_of(gateway)
    sim.requests.clear()
    events = await scripted_conversation(sim, http, gateway.url + "/v1")
    done = assert_the_whole_conversation(events)
    assert events[0]["session"]["model"] == "gpt-realtime"
    assert [r.path.split("?")[0] for r in sim.requests] == ["/v1/realtime"]
    rows = await session_rows(gateway)
    assert [(r["provider"], r["model"], r["status"]) for r in rows] == [
        ("openai", "gpt-realtime", 200)
    ]
    assert rows[0]["prompt_tokens"] == sum(d["usage"]["input_tokens"] for d in done)
    assert rows[0]["cost_usd"] == pytest.approx(list_price_of(done), abs=1e-9)
    for _ in range(100):  # the client left: the upstream session is closed at once
        if not sim.stats.open_requests:  # (a loaded machine gets 5 s)
            break
        await trio.sleep(0.05)
    assert sim.stats.open_requests == 0


async def test_the_setting_takes_only_its_values(http: httpx.AsyncClient) -> None:
    response = await http.patch(
        "/v1/management/providers/openai", json={"settings": {"realtime_transport": "relay"}}
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["param"] == "settings.realtime_transport"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_an_upstream_that_refuses_the_session_is_said_and_recorded(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await relay_natively(http)
    sim_of(gateway).faults.add(Fault(model="gpt-realtime", status=401))

    def refused(url: str) -> tuple[dict[str, Any], int | None]:
        with connect(url, additional_headers=BEARER) as ws:
            event = json.loads(ws.recv(timeout=30))
            ws.recv_events_thread.join(10)  # the gateway closes the socket
            return event, ws.close_code

    event, close = await in_thread(refused, ws_base(gateway) + "?model=gpt-realtime")
    assert event["type"] == "error" and event["error"]["code"] == "provider_error"
    assert close == 4502
    rows = await session_rows(gateway)
    assert [(r["model"], r["status"]) for r in rows] == [("gpt-realtime", 502)]


async def test_each_response_passes_the_keys_limits(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """rpm 2: the session takes one, the first answer the other; the second
    `response.create` is refused by the gateway and never reaches the upstream."""
    await relay_natively(http)
    key = await limited_key(http, rpm=2)

    def two_questions(url: str) -> list[dict[str, Any]]:
        with connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
            client = Client(ws)
            client.until("session.created")
            client.send(
                type="session.update",
                session={"type": "realtime", "output_modalities": ["text"]},
            )
            client.until("session.updated")
            for question in ("Hello?", "Still there?"):
                content = [{"type": "input_text", "text": question}]
                item = {"type": "message", "role": "user", "content": content}
                client.send(type="conversation.item.create", item=item)
                client.until("conversation.item.done")
                client.send(type="response.create")
                client.until("response.done" if question == "Hello?" else "error")
            return client.events

    sim = sim_of(gateway)
    sim.requests.clear()
    events = await in_thread(two_questions, ws_base(gateway) + "?model=gpt-realtime")
    refusal = events[-1]["error"]
    assert (refusal["code"], refusal["limit_type"]) == ("rate_limit_exceeded", "rpm")
    assert [e["type"] for e in events].count("response.created") == 1
    rows = await session_rows(gateway, count=2)
    assert sorted(r["status"] for r in rows) == [200, 429]


async def test_a_response_the_upstream_starts_is_cancelled_when_the_limits_refuse_it(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """Server VAD starts the responses upstream: rpm 2 admits the session and the first;
    the second is cancelled upstream at its `response.created` and the client told."""
    await relay_natively(http)
    key = await limited_key(http, rpm=2)
    sim = sim_of(gateway)
    sim.replies.extend([SHORT_ANSWER, LONG_ANSWER])
    turns = [await spoken_pcm(http, t) for t in (FIRST, SECOND)]

    def two_turns(url: str) -> list[dict[str, Any]]:
        with connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
            client = Client(ws)
            client.until("session.created")
            for turn in turns:
                for piece in chunks(turn):
                    client.send(type="input_audio_buffer.append", audio=piece)
                client.until("response.done")
            return client.events

    events = await in_thread(two_turns, ws_base(gateway) + "?model=gpt-realtime")
    kinds = [e["type"] for e in events]
    second = [i for i, kind in enumerate(kinds) if kind == "response.created"][1]
    refusal = next(e for e in events[second:] if e["type"] == "error")["error"]
    assert (refusal["code"], refusal["limit_type"]) == ("rate_limit_exceeded", "rpm")
    done = [e["response"] for e in events if e["type"] == "response.done"]
    assert [d["status"] for d in done] == ["completed", "cancelled"]
    assert done[1]["status_details"]["reason"] == "client_cancelled"
    rows = await session_rows(gateway, count=2)
    assert sorted(r["status"] for r in rows) == [200, 429]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_the_upstream_address_guard_holds_for_the_relay(
    nursery: trio.Nursery, settings: Settings
) -> None:
    """With private addresses denied, the simulator's 127.0.0.1 is refused at the
    relay's connection as at every other: the session is refused, not a byte sent."""
    denied = attrs.evolve(settings, upstream_private_addresses="deny")
    gateway: RunningGateway = await nursery.start(partial(run_gateway, denied, env={}))
    async with httpx.AsyncClient(base_url=gateway.url, headers=BEARER, timeout=30) as http:
        await relay_natively(http)

    def refused(url: str) -> tuple[dict[str, Any], int | None]:
        with connect(url, additional_headers=BEARER) as ws:
            event = json.loads(ws.recv(timeout=30))
            ws.recv_events_thread.join(10)
            return event, ws.close_code

    event, close = await in_thread(refused, ws_base(gateway) + "?model=gpt-realtime")
    assert event["type"] == "error" and close == 4000 + 503
    assert sum(sim_of(gateway).stats.by_path.values()) == 0
