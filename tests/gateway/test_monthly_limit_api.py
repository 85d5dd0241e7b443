"""The monthly request limit through HTTP: set on keys, refused with the spec's 429 as the
official client sees it, and counted across a restart."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from gateway.upstream.limits.windows import next_month_start
from tests.gateway.conftest import ADMIN_KEY

KEYS = "/v1/management/api-keys"
HELLO: Any = [{"role": "user", "content": "Hello"}]
SPEC_429_HEADERS = {
    "retry-after",
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
}


async def create_key(http: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await http.post(KEYS, json={"name": "monthly", **body})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def openai_client(url: str, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key=key, max_retries=0)


async def chat(client: openai.AsyncOpenAI, *, stream: bool = False) -> None:
    answer = await client.chat.completions.create(
        model="gpt-4o-mini", messages=HELLO, stream=stream
    )
    if stream:
        [chunk async for chunk in answer]  # type: ignore[union-attr]


async def refusal(client: openai.AsyncOpenAI, *, stream: bool = False) -> openai.RateLimitError:
    with pytest.raises(openai.RateLimitError) as caught:
        await chat(client, stream=stream)
    return caught.value


def next_month_iso(now: datetime) -> str:
    start = datetime.fromtimestamp(next_month_start(now.timestamp()), UTC)
    return start.strftime("%Y-%m-%dT%H:%M:%S.000Z")


# -- the key API ---------------------------------------------------------------------------


async def test_monthly_requests_is_set_read_changed_and_cleared(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    plain = await create_key(http)
    assert plain["rate_limits"]["monthly_requests"] is None  # no plan sets one
    created = await create_key(http, rate_limits={"monthly_requests": 1000, "rpm": 50})
    assert created["rate_limits"]["monthly_requests"] == 1000
    path = f"{KEYS}/{created['id']}"
    assert (await http.get(path)).json()["rate_limits"]["monthly_requests"] == 1000
    listed = {k["id"]: k for k in (await http.get(KEYS)).json()["data"]}
    assert listed[created["id"]]["rate_limits"]["monthly_requests"] == 1000

    patched = await http.patch(path, json={"rate_limits": {"monthly_requests": 5}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["rate_limits"]["monthly_requests"] == 5
    assert patched.json()["rate_limits"]["rpm"] == 50  # merged, not replaced
    cleared = await http.patch(path, json={"rate_limits": {"monthly_requests": None}})
    assert cleared.json()["rate_limits"]["monthly_requests"] is None
    assert (await http.get(path)).json()["rate_limits"]["monthly_requests"] is None


@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True, [1]])
async def test_monthly_requests_must_be_a_positive_integer(
    gateway: RunningGateway, http: httpx.AsyncClient, value: Any
) -> None:
    key = await create_key(http, rate_limits={"monthly_requests": 9})
    for response in (
        await http.post(KEYS, json={"name": "bad", "rate_limits": {"monthly_requests": value}}),
        await http.patch(f"{KEYS}/{key['id']}", json={"rate_limits": {"monthly_requests": value}}),
    ):
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert (error["code"], error["type"]) == ("invalid_request", "invalid_request_error")
        assert error["param"] == "rate_limits.monthly_requests"
        assert "must be an integer" in error["message"] or "at least 1" in error["message"]
        assert error["doc_url"]
    unchanged = (await http.get(f"{KEYS}/{key['id']}")).json()
    assert unchanged["rate_limits"]["monthly_requests"] == 9
    names = [k["name"] for k in (await http.get(KEYS)).json()["data"]]
    assert "bad" not in names


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_the_request_over_the_monthly_limit_is_refused(
    gateway: RunningGateway, http: httpx.AsyncClient, stream: bool
) -> None:
    key = await create_key(http, rate_limits={"monthly_requests": 3})
    async with openai_client(gateway.url, key["key"]) as client:
        for _ in range(3):
            await chat(client, stream=stream)
        before = datetime.now(UTC)
        error = await refusal(client, stream=stream)
        after = datetime.now(UTC)
    assert error.status_code == 429
    body: Any = error.body
    assert body["type"] == "rate_limit_error"
    assert (body["code"], body["limit_type"]) == ("monthly_limit_exceeded", "monthly")
    assert (body["limit"], body["current"]) == (3, 3)
    assert body["reset_at"] == next_month_iso(after)
    month_end = next_month_start(after.timestamp())
    assert (
        math.ceil(month_end - after.timestamp())
        <= body["retry_after"]
        <= math.ceil(month_end - before.timestamp())
    )
    headers = error.response.headers
    assert headers["retry-after"] == str(body["retry_after"])
    assert set(headers) >= SPEC_429_HEADERS
    # refusals are recorded (analytics) but were never admitted: the key's day shows the
    # three served requests
    read = (await http.get(f"{KEYS}/{key['id']}")).json()
    assert read["usage"]["requests_today"] == 3


async def test_a_limit_set_on_a_used_key_counts_what_it_already_served(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    key = await create_key(http)
    async with openai_client(gateway.url, key["key"]) as client:
        for _ in range(2):
            await chat(client)
        patched = await http.patch(
            f"{KEYS}/{key['id']}", json={"rate_limits": {"monthly_requests": 2}}
        )
        assert patched.status_code == 200
        body: Any = (await refusal(client)).body
    assert (body["code"], body["current"]) == ("monthly_limit_exceeded", 2)


async def test_the_daily_limit_refuses_first_when_the_month_has_room(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    key = await create_key(http, rate_limits={"monthly_requests": 100, "daily_requests": 1})
    async with openai_client(gateway.url, key["key"]) as client:
        await chat(client)
        for _ in range(3):
            body: Any = (await refusal(client)).body
            assert body["code"] == "daily_limit_exceeded"
    record = gateway.state.keyring.lookup(key["key"])
    assert record is not None
    snap = gateway.state.limits.snapshot(record)
    assert (snap.daily_used, snap.monthly_used, snap.monthly_remaining) == (1, 1, 99)


# -- restarts ------------------------------------------------------------------------------


@asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[RunningGateway]:
    """A gateway that shuts down gracefully (flushing its usage log) when the block ends."""
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        gateway: RunningGateway = await nursery.start(
            partial(run_gateway, settings, env={}, shutdown_trigger=stop.wait)
        )
        try:
            yield gateway
        finally:
            stop.set()


def admin_http(gateway: RunningGateway) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=10
    )


async def limit_figures(gateway: RunningGateway, key: str) -> dict[str, Any]:
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=10
    ) as http:
        response = await http.get("/v1/management/rate-limits")
    assert response.status_code == 200, response.text
    figures: dict[str, Any] = response.json()["api_key"]
    return figures


async def test_the_monthly_count_survives_a_restart(settings: Settings) -> None:
    """Embeddings pass the limiter too: they count before and after."""
    limits = {"monthly_requests": 3, "daily_requests": 10}
    permissions = ["chat", "embeddings", "management"]
    async with running(settings) as first, admin_http(first) as http:
        key = (await create_key(http, rate_limits=limits, permissions=permissions))["key"]
        async with openai_client(first.url, key) as client:
            for _ in range(2):
                await chat(client)
            await client.embeddings.create(model="text-embedding-3-small", input="hello")
        before = await limit_figures(first, key)

    async with running(settings) as second:
        after = await limit_figures(second, key)
        async with openai_client(second.url, key) as client:
            body: Any = (await refusal(client)).body
    assert (body["code"], body["limit"], body["current"]) == ("monthly_limit_exceeded", 3, 3)
    for figures in (before, after):
        assert figures["monthly"]["limit"] == 3 and figures["monthly"]["remaining"] == 0
        assert figures["daily"]["limit"] == 10 and figures["daily"]["remaining"] == 7
        assert figures["monthly"]["reset_at"] == next_month_iso(datetime.now(UTC))
