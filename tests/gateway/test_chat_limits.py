"""Rate limits as a chat client sees them: headers on every answer, exact 429s."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from providers.sim.core import Fault

HELLO: Any = [{"role": "user", "content": "Hello"}]


async def key_with(http: httpx.AsyncClient, limits: dict[str, int]) -> str:
    created = await http.post(
        "/v1/management/api-keys", json={"name": "limited", "type": "prod", "rate_limits": limits}
    )
    assert created.status_code == 201
    return str(created.json()["key"])


async def test_success_answers_carry_the_rate_limit_headers(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    key = await key_with(http, {"rpm": 5})
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0) as c:
        raw = await c.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=HELLO)
    assert raw.headers["x-ratelimit-limit-rpm"] == "5"
    assert raw.headers["x-ratelimit-remaining-rpm"] == "4"
    assert raw.headers["x-ratelimit-limit-requests"] == "5"
    assert int(raw.headers["x-ratelimit-limit-tokens"]) == 400_000
    assert "x-ratelimit-concurrent-limit" in raw.headers


@pytest.mark.parametrize("stream", [False, True])
async def test_the_request_over_the_rpm_limit_is_refused_exactly(
    gateway: RunningGateway, http: httpx.AsyncClient, stream: bool
) -> None:
    key = await key_with(http, {"rpm": 3})
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0) as c:
        for _ in range(3):
            answer = await c.chat.completions.create(
                model="gpt-4o-mini", messages=HELLO, stream=stream
            )
            if stream:
                [chunk async for chunk in answer]  # type: ignore[union-attr]
        with pytest.raises(openai.RateLimitError) as caught:
            await c.chat.completions.create(model="gpt-4o-mini", messages=HELLO, stream=stream)
    body: Any = caught.value.body
    assert body["code"] == "rate_limit_exceeded" and body["limit_type"] == "rpm"
    assert body["limit"] == 3 and body["current"] == 3
    assert body["retry_after"] >= 1
    assert caught.value.response.headers["retry-after"] == str(body["retry_after"])


async def test_concurrent_requests_never_exceed_the_concurrency_limit(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """Five requests at once against a limit of two: exactly two are served. The two
    admitted are held 2 s upstream, so the other three surely arrive while both slots are
    taken (with 300 ms, a busy machine let one finish before the fifth came, and a third
    was rightly admitted)."""
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", delay_ms=2000))
    key = await key_with(http, {"concurrent": 2})
    outcomes: list[int] = []

    async def one(c: openai.AsyncOpenAI) -> None:
        try:
            await c.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
            outcomes.append(200)
        except openai.RateLimitError as exc:
            assert exc.body["code"] == "concurrent_limit_exceeded"  # type: ignore[index]
            assert exc.response.headers["retry-after"] == "1"
            outcomes.append(429)

    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0) as c:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(one, c)
    assert sorted(outcomes) == [200, 200, 429, 429, 429]


async def test_queue_strategy_waits_for_a_free_slot(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", delay_ms=200))
    key = await key_with(http, {"concurrent": 1})
    served: list[bool] = []

    async def one(c: openai.AsyncOpenAI) -> None:
        await c.chat.completions.create(
            model="gpt-4o-mini",
            messages=HELLO,
            extra_body={
                "service": {"rate_limit_handling": {"strategy": "queue", "max_wait_ms": 5000}}
            },
        )
        served.append(True)

    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0) as c:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(one, c)
    assert served == [True, True, True]
