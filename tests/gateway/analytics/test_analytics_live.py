"""Analytics of real traffic: requests made with the official client, refused by a limit,
answered from the cache, and the realtime page of the live process."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway

A = "/v1/management/analytics"
HELLO: Any = [{"role": "user", "content": "Say hello to analytics"}]


async def test_a_request_refused_by_a_limit_counts_as_a_rate_limit_hit(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await http.post(
        "/v1/management/api-keys",
        json={"name": "one-a-minute", "type": "prod", "rate_limits": {"rpm": 1}},
    )
    assert created.status_code == 201
    key = created.json()
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=key["key"], max_retries=0
    ) as client:
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
        with pytest.raises(openai.RateLimitError):
            await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    keys = (await http.get(f"{A}/usage/api-keys")).json()["api_keys"]
    (mine,) = [k for k in keys if k["key_id"] == key["id"]]
    assert (mine["name"], mine["requests"], mine["rate_limit_hits"]) == ("one-a-minute", 2, 1)
    errors = (await http.get(f"{A}/errors")).json()
    assert errors["total_errors"] == 1 and errors["by_type"]["rate_limit"] == 1
    assert errors["error_rate"] == 0.5


async def test_a_cache_hit_counts_what_it_saved(
    gateway: RunningGateway, http: httpx.AsyncClient, client: openai.AsyncOpenAI
) -> None:
    first = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    again = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    assert again.choices[0].message.content == first.choices[0].message.content
    assert first.usage is not None
    costs = (await http.get(f"{A}/costs")).json()["totals"]
    assert costs["cache_savings_usd"] > 0
    # The hit saved exactly what the identical miss was billed.
    assert costs["cache_savings_usd"] == costs["effective_cost_usd"]
    assert costs["cost_usd"] == pytest.approx(2 * costs["effective_cost_usd"], abs=2e-6)
    cache = (await http.get(f"{A}/cache")).json()
    assert cache["totals"] == {
        "cache_hits": 1,
        "cache_misses": 1,
        "hit_rate": 0.5,
        "tokens_saved": first.usage.total_tokens,
        "cost_saved_usd": costs["cache_savings_usd"],
    }


async def test_realtime_shows_the_last_minute_and_the_live_process(
    gateway: RunningGateway, http: httpx.AsyncClient, client: openai.AsyncOpenAI
) -> None:
    tokens = 0
    for n in range(3):
        answer = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"count {n}"}]
        )
        assert answer.usage is not None
        tokens += answer.usage.total_tokens
    page = (await http.get(f"{A}/realtime")).json()
    assert page["last_minute"]["requests"] == 3
    assert page["last_minute"]["tokens"] == tokens
    assert page["last_minute"]["avg_latency_ms"] is not None
    assert page["active_requests"] == 1  # this very request
    assert page["queue_depth"] == 0
    assert page["provider_status"]["openai"] == "healthy"
    assert page["timestamp"].endswith("Z")
