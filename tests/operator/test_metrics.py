"""GET /metrics: who may read it, and that real requests move the figures."""

from __future__ import annotations

import attrs
import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from tests.operator.prom import scrape, total

METRICS_TOKEN = "scrape-token-0123456789"
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Count to three"}]}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, metrics_token=METRICS_TOKEN)


async def test_metrics_need_the_token_or_an_admin_key(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        missing = await anonymous.get("/metrics")
        wrong = await anonymous.get("/metrics", headers={"authorization": "Bearer nope"})
        token = await anonymous.get(
            "/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"}
        )
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "invalid_api_key"
    assert wrong.status_code == 401
    assert token.status_code == 200
    created = await http.post("/v1/management/api-keys", json={"name": "dev", "type": "dev"})
    assert created.status_code == 201, created.text
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {created.json()['key']}"}
    ) as dev:
        refused = await dev.get("/metrics")
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "permission_error"
    assert (await http.get("/metrics")).status_code == 200


async def test_requests_tokens_cost_and_latency_are_counted(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    before = await scrape(http)
    await client.chat.completions.create(**CHAT)  # type: ignore[call-overload]
    await client.chat.completions.create(**CHAT)  # the second is a cache hit
    assert (await http.get("/v1/management/api-keys/key_unknown")).status_code == 404
    await gateway.state.usage.flush()
    after = await scrape(http)

    def grew(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert grew("gateway_requests_total", family="chat", status="200", provider="openai") == 2
    assert grew("gateway_requests_total", family="management_api_keys", status="404") == 1
    assert grew("gateway_request_duration_seconds_count", family="chat") == 2
    assert grew("gateway_added_latency_seconds_count", family="chat") == 2
    assert grew("gateway_upstream_first_byte_seconds_count", provider="openai") == 1
    assert grew("gateway_tokens_total", family="chat", provider="openai", direction="prompt") > 0
    assert grew("gateway_tokens_total", direction="completion", model="gpt-4o-mini") > 0
    assert grew("gateway_cost_usd_total", family="chat") > 0
    assert grew("gateway_carbon_gco2e_total", family="chat") > 0
    assert grew("gateway_energy_kwh_total", family="chat") > 0
    assert grew("gateway_cache_hits_total", family="chat") == 1
    assert ("gateway_usage_log_queue_depth", ()) in after
    assert ("gateway_worker_queue_depth", (("worker", "usage_writer"),)) in after
    assert ("gateway_worker_queue_depth", (("worker", "last_used"),)) in after
    assert total(after, "gateway_usage_log_write_seconds_count") >= 1
    assert total(after, "gateway_usage_log_records_total", fate="written") >= 2


async def test_rate_limit_refusals_and_breakers_are_counted(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await http.post(
        "/v1/management/api-keys",
        json={"name": "tight", "type": "prod", "rate_limits": {"rpm": 1}},
    )
    assert created.status_code == 201, created.text
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {created.json()['key']}"}
    ) as tight:
        assert (await tight.post("/v1/chat/completions", json=CHAT)).status_code == 200
        assert (await tight.post("/v1/chat/completions", json=CHAT)).status_code == 429
    found = await scrape(http)
    assert total(found, "gateway_rate_limit_refusals_total", family="chat") == 1
    assert total(found, "gateway_circuit_breakers", provider="openai", state="closed") >= 1


async def test_labels_hold_no_request_ids(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    answer = await client.chat.completions.with_raw_response.create(**CHAT)  # type: ignore[call-overload]
    request_id = answer.headers["x-request-id"]
    text = (await http.get("/metrics")).text
    assert request_id not in text
    assert "gw_admin" not in text


async def test_live_tasks_and_open_fds_are_reported(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """A stream held open shows as more tasks and descriptors; closed, they are gone."""
    before = await scrape(http)
    assert total(before, "gateway_trio_tasks") > 5  # the lifespan's workers at least
    assert total(before, "gateway_open_fds") > 3
    body = CHAT | {"stream": True, "service": {"cache": "skip"}}
    async with (
        httpx.AsyncClient(base_url=gateway.url, headers=http.headers, timeout=10) as other,
        other.stream("POST", "/v1/chat/completions", json=body) as answer,
    ):
        async for _ in answer.aiter_lines():
            during = await scrape(http)
            break
    assert total(during, "gateway_trio_tasks") > total(before, "gateway_trio_tasks")
    assert total(during, "gateway_open_fds") > total(before, "gateway_open_fds")
