"""The response cache, the circuit breakers and the realtime counters shared through Redis
by two gateways (one trio loop, one store, one redis-server, each its own simulator).

The waits poll with a deadline: what they wait for happens in another gateway or on the
server, where there is no event of ours to wait on.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import httpx
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.chat.cache.shared import decode_result, encode_result
from gateway.platform.config import Settings
from gateway.platform.resp import RedisClient
from gateway.upstream.circuit import Breaker, BreakerBook, State
from gateway.upstream.shared_breakers import Report, SharedBreakers
from providers.sim.core import Fault
from providers.types import ChatResult, ToolCall, Usage
from tests.gateway.conftest import ADMIN_KEY
from tests.scaleout.helpers import CHAT_BODY
from tests.scaleout.redis_server import RedisServer

ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}
CHAT = "/v1/chat/completions"
FORCED: dict[str, Any] = {"provider": "openai"}  # one candidate: no fallback hides a failure


async def start(nursery: trio.Nursery, settings: Settings) -> RunningGateway:
    running: RunningGateway = await nursery.start(
        lambda task_status: run_gateway(settings, env={}, task_status=task_status)
    )
    return running


@pytest.fixture
async def pair(nursery: trio.Nursery, shared_settings: Settings) -> list[RunningGateway]:
    """Two gateways on two ports sharing one store and one Redis."""
    return [await start(nursery, shared_settings), await start(nursery, shared_settings)]


async def _cache_keys(redis_server: RedisServer) -> list[bytes]:
    client = RedisClient.from_url(redis_server.url)
    try:
        reply = await client.execute("KEYS", "gw:cache:*")
    finally:
        client.close()
    assert isinstance(reply, list)
    return [key for key in reply if isinstance(key, bytes)]


@pytest.mark.parametrize("stream", [False, True])
async def test_an_answer_cached_by_one_gateway_is_a_hit_on_the_other(
    pair: list[RunningGateway], redis_server: RedisServer, stream: bool
) -> None:
    body = CHAT_BODY | {"stream": stream}
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        first = await http.post(pair[0].url + CHAT, json=body)
        assert first.status_code == 200, first.text
        with trio.fail_after(5):  # the write is queued, not awaited by the request
            while not await _cache_keys(redis_server):  # noqa: ASYNC110 (on the server)
                await trio.sleep(0.01)
        sim = pair[1].sim
        assert sim is not None
        before = sim.stats.by_path.get("/openai/v1/chat/completions", 0)
        second = await http.post(pair[1].url + CHAT, json=body)
    assert second.status_code == 200, second.text
    assert sim.stats.by_path.get("/openai/v1/chat/completions", 0) == before
    if stream:
        assert '"hit": true' in second.text or '"hit":true' in second.text
        assert _stream_text(second.text) == _stream_text(first.text)
    else:
        assert second.json()["service"]["cache"]["hit"] is True
        answer = second.json()["choices"][0]["message"]["content"]
        assert answer == first.json()["choices"][0]["message"]["content"]


def _stream_text(events: str) -> str:
    text = []
    for line in events.splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices", []):
                text.append(choice.get("delta", {}).get("content") or "")
    return "".join(text)


async def test_with_redis_away_the_cache_misses_and_realtime_is_the_nodes(
    nursery: trio.Nursery, shared_settings: Settings, redis_server: RedisServer
) -> None:
    """Failure policies: a cache read that fails is a miss (the request is served, from
    the provider, every time); the realtime page shows this node's figures."""
    gateway = await start(nursery, attrs.evolve(shared_settings, redis_fail_open=True))
    assert gateway.sim is not None
    redis_server.stop()
    path = "/openai/v1/chat/completions"
    before = gateway.sim.stats.by_path.get(path, 0)
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        for _ in range(2):
            answer = await http.post(gateway.url + CHAT, json=CHAT_BODY)
            assert answer.status_code == 200, answer.text
            assert answer.json()["service"]["cache"]["hit"] is False
        page = await http.get(gateway.url + "/v1/management/analytics/realtime")
    assert gateway.sim.stats.by_path.get(path, 0) == before + 2
    assert page.status_code == 200, page.text
    assert page.json()["last_minute"]["requests"] == 2  # from the node's usage log


async def test_a_breaker_opened_on_one_gateway_is_open_on_the_other(
    pair: list[RunningGateway],
) -> None:
    failing, other = pair
    assert failing.sim is not None and other.sim is not None
    failing.sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    body = CHAT_BODY | FORCED
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        for _ in range(5):
            failed = await http.post(failing.url + CHAT, json=body)
            assert failed.status_code in (502, 503), failed.text
        opened = [k for k, b in failing.state.breakers.items() if b.state is State.OPEN]
        assert len(opened) == 1
        with trio.fail_after(2):  # published, then applied by the other's listener
            while other.state.breakers.state(*opened[0]) is not State.OPEN:  # noqa: ASYNC110
                await trio.sleep(0.01)
        path = "/openai/v1/chat/completions"
        before = other.sim.stats.by_path.get(path, 0)
        refused = await http.post(other.url + CHAT, json=body)
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "provider_unavailable"
    assert other.sim.stats.by_path.get(path, 0) == before  # never tried there


async def test_a_successful_probe_closes_the_breaker_everywhere(redis_server: RedisServer) -> None:
    """Two books behind one server: an opening reaches both; a success reported by the
    one that saw the failures closes it on both; a late subscriber learns what is open."""
    client = RedisClient.from_url(redis_server.url)
    books = [BreakerBook(), BreakerBook()]
    shared = SharedBreakers(client, timeout_s=10.0)
    key = ("ws", "openai", "gpt-4o-mini")
    try:
        async with trio.open_nursery() as nursery:
            for book in books:
                await nursery.start(shared.listen, book)
            nursery.start_soon(shared.reporter)
            for _ in range(5):
                shared.report(Report(*key, ok=False))
            with trio.fail_after(5):
                while any(book.state(*key) is not State.OPEN for book in books):  # noqa: ASYNC110
                    await trio.sleep(0.01)
            late = BreakerBook()
            await nursery.start(shared.listen, late)
            assert late.state(*key) is State.OPEN
            shared.report(Report(*key, ok=True))
            with trio.fail_after(5):
                while any(book.state(*key) is not State.CLOSED for book in [*books, late]):  # noqa: ASYNC110
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    finally:
        client.close()


def test_a_breaker_tripped_elsewhere_opens_for_the_cooldown_that_remains() -> None:
    breaker = Breaker(threshold=5, cooldown_s=30.0)
    breaker.trip(100.0, remaining_s=10.0)
    assert breaker.state is State.OPEN
    assert breaker.retry_in(100.0) == pytest.approx(10.0)
    assert not breaker.allows(109.0)
    assert breaker.allows(110.0)  # half open: one probe
    breaker.reset(111.0)
    assert breaker.clean  # closed, no failure counted


async def test_realtime_counts_the_requests_of_both_gateways(
    nursery: trio.Nursery, shared_settings: Settings
) -> None:
    """Two nodes (each its own store, so the usage logs cannot be what adds them up)."""
    pair = [
        await start(nursery, attrs.evolve(shared_settings, data_dir=shared_settings.data_dir / n))
        for n in ("a", "b")
    ]
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        for index in range(7):
            body = CHAT_BODY | {"messages": [{"role": "user", "content": f"Hi {index}"}]}
            answer = await http.post(pair[index % 2].url + CHAT, json=body)
            assert answer.status_code == 200, answer.text
        realtime = "/v1/management/analytics/realtime"
        with trio.fail_after(5):  # the other gateway's figures are one round trip away
            while True:
                page = (await http.get(pair[0].url + realtime)).json()
                if page["last_minute"]["requests"] == 7:
                    break
                assert page["last_minute"]["requests"] < 7
                await trio.sleep(0.01)
    assert page["last_minute"]["tokens"] > 0
    assert page["last_minute"]["avg_latency_ms"] is not None
    assert page["active_requests"] >= 1  # this request, at least
    assert page["queue_depth"] == 0


def test_a_cached_answer_survives_the_wire_whole() -> None:
    """Tool calls and every usage figure come back as they went (a hit reports them)."""
    result = ChatResult(
        id="chatcmpl-1",
        model="gpt-4o-mini",
        content=None,
        finish_reason="tool_calls",
        usage=Usage(12, 7, audio_seconds=1.5),
        tool_calls=(ToolCall("call_1", "lookup", '{"q": "é"}'),),
    )
    assert decode_result(encode_result(result)) == result
