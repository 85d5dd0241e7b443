"""Agent limits enforced before the upstream call: a cost budget that concurrent requests
cannot overshoot by more than one request's estimate, suspension on the cost limit, the
rpm limit and rpm abuse, sessions, and the metered-unit daily limits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from providers.types import Usage
from tests.agents.conftest import Create, agent_client
from tests.gateway import documents

MAX_TOKENS = 20


def prompt(n: int) -> list[dict[str, str]]:
    """A distinct prompt each time, so that no answer comes from the response cache."""
    return [{"role": "user", "content": f"Write line {n} about budgets."}]


def request_estimate(gateway: RunningGateway) -> float:
    """An upper bound of one request's reserved estimate: its prompt (well under 50
    tokens) and `max_tokens` at gpt-4o-mini's price."""
    info = gateway.state.catalog.model("gpt-4o-mini")
    assert info is not None
    return float(info.metered_cost(Usage(50, MAX_TOKENS)).total)


async def test_concurrent_requests_cannot_overshoot_the_daily_budget_and_the_agent_is_suspended(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    estimate = request_estimate(gateway)
    limit = round(estimate * 3.5, 9)
    agent = await create_agent(
        name="spender", limits={"cost_daily": limit}, auto_suspend={"on_cost_limit": True}
    )
    outcomes: list[Any] = []
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=agent["key"], max_retries=0
    ) as client:

        async def one(n: int) -> None:
            try:
                await client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=prompt(n),  # type: ignore[arg-type]
                    max_tokens=MAX_TOKENS,
                )
                outcomes.append("ok")
            except openai.APIStatusError as exc:
                outcomes.append(exc)

        async with trio.open_nursery() as nursery:
            for n in range(12):
                nursery.start_soon(one, n)
        served = outcomes.count("ok")
        refused = [o for o in outcomes if o != "ok"]
        assert served >= 1 and refused, outcomes
        # The first refusal suspends the agent: requests checked after it are 403s.
        limited = [e for e in refused if e.status_code == 429]
        assert limited, refused
        assert all(e.status_code == 403 for e in refused if e not in limited)
        for error in limited:
            body = error.body
            assert body["code"] == "cost_limit_exceeded", body
            assert body["type"] == "rate_limit_error"
            assert body["limit_type"] == "cost_daily"
            assert body["limit"] == limit
            assert body["current"] >= limit
        usage = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage")).json()
        spent = usage["daily"]["cost"]
        assert spent <= limit + estimate, (spent, limit, estimate)
        # The usage log agrees with the counters.
        await gateway.state.usage.flush()
        # With on_cost_limit the agent is suspended: the next request is a clear 403.
        assert (await http.get(f"/v1/mcp/agents/{agent['id']}")).json()["status"] == "suspended"
        try:
            await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=prompt(99),  # type: ignore[arg-type]
                max_tokens=MAX_TOKENS,
            )
            raise AssertionError("a suspended agent was served")
        except openai.PermissionDeniedError as exc:
            assert exc.body["code"] == "agent_suspended"  # type: ignore[index]
    events = (await http.get("/v1/management/audit-log")).json()["events"]
    suspended = [e for e in events if e["type"] == "agent.suspended"]
    assert len(suspended) == 1
    assert suspended[0]["target"]["id"] == agent["id"]


async def test_without_auto_suspend_the_budget_refuses_but_the_agent_stays_active(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    estimate = request_estimate(gateway)
    limit = round(estimate * 1.5, 9)
    agent = await create_agent(name="careful", limits={"cost_daily": limit})
    async with agent_client(gateway, agent["key"]) as me:
        answers: list[httpx.Response] = []
        while not answers or (answers[-1].status_code == 200 and len(answers) < 100):
            body = {"model": "gpt-4o-mini", "messages": prompt(len(answers)), "max_tokens": 20}
            answers.append(await me.post("/v1/chat/completions", json=body))
    codes = [a.status_code for a in answers]
    assert codes[0] == 200 and codes[-1] == 429, codes
    usage = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage")).json()
    assert limit <= usage["daily"]["cost"] <= limit + estimate
    error = answers[-1].json()["error"]
    assert error["code"] == "cost_limit_exceeded"
    assert error["resets_at"].endswith("T00:00:00Z")
    assert_retry_after_until(answers[-1], error["resets_at"])
    assert (await http.get(f"/v1/mcp/agents/{agent['id']}")).json()["status"] == "active"


def assert_retry_after_until(refused: httpx.Response, resets_at: str) -> None:
    """The budget refusals carried no `Retry-After` (the rpm one did): it counts the
    seconds to the reset."""
    reset = datetime.fromisoformat(resets_at.replace("Z", "+00:00"))
    expected = (reset - datetime.now(UTC)).total_seconds()
    assert abs(int(refused.headers["retry-after"]) - expected) <= 60


async def test_rpm_limit_then_rpm_abuse_suspends(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(
        name="looper",
        limits={"requests_per_minute": 2},
        auto_suspend={"on_rpm_abuse": True, "abuse_threshold": 3},
    )
    body = {"input": "hello", "model": "text-embedding-3-small"}
    async with agent_client(gateway, agent["key"]) as me:
        assert (await me.post("/v1/embeddings", json=body)).status_code == 200
        assert (await me.post("/v1/embeddings", json=body)).status_code == 200
        over = await me.post("/v1/embeddings", json=body)
        assert over.status_code == 429
        error = over.json()["error"]
        assert error["code"] == "rpm_exceeded"
        assert error["type"] == "rate_limit_error"
        assert error["limit"] == 2
        assert error["current"] == 2
        assert 1 <= error["retry_after_seconds"] <= 60
        assert over.headers["retry-after"] == str(error["retry_after_seconds"])
        assert (await me.post("/v1/embeddings", json=body)).status_code == 429
        assert (await http.get(f"/v1/mcp/agents/{agent['id']}")).json()["status"] == "active"
        # The third refusal within the minute reaches the abuse threshold.
        assert (await me.post("/v1/embeddings", json=body)).status_code == 429
        suspended = await me.post("/v1/embeddings", json=body)
    assert suspended.status_code == 403
    assert suspended.json()["error"]["code"] == "agent_suspended"
    read = (await http.get(f"/v1/mcp/agents/{agent['id']}")).json()
    assert read["status"] == "suspended"
    assert "rpm abuse" in read["suspended_reason"]


async def test_sessions_are_counted_and_limited(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="sessions", limits={"concurrent_sessions": 1})
    body = {"input": "hello", "model": "text-embedding-3-small"}
    async with agent_client(gateway, agent["key"], session="a") as a:
        assert (await a.post("/v1/embeddings", json=body)).status_code == 200
        assert (await a.post("/v1/embeddings", json=body)).status_code == 200
    async with agent_client(gateway, agent["key"], session="b") as b:
        refused = await b.post("/v1/embeddings", json=body)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "concurrent_limit_exceeded"
    assert (error["limit"], error["current"]) == (1, 1)
    usage = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage?session=a")).json()
    assert usage["active_sessions"] == 1
    assert usage["session"]["id"] == "a"
    assert usage["daily"]["embedding_tokens"] > 0


async def test_embedding_tokens_daily_is_a_daily_limit(
    gateway: RunningGateway, create_agent: Create
) -> None:
    agent = await create_agent(name="embedder", limits={"embedding_tokens_daily": 3})
    async with agent_client(gateway, agent["key"]) as me:
        first = await me.post(
            "/v1/embeddings", json={"input": "hi", "model": "text-embedding-3-small"}
        )
        assert first.status_code == 200, first.text
        refused = await me.post(
            "/v1/embeddings",
            json={
                "input": "a much longer text than three tokens",
                "model": "text-embedding-3-small",
            },
        )
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "daily_limit_exceeded"
    assert error["limit_type"] == "embedding_tokens_daily"
    assert error["limit"] == 3
    assert error["resets_at"].endswith("T00:00:00Z")
    assert_retry_after_until(refused, error["resets_at"])


async def test_ocr_pages_are_counted_and_limited_per_day(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="reader", limits={"ocr_pages_daily": 3})
    pdf = documents.pdf_with_text(["Invoice: 4711", "Total: 12 EUR"])
    async with agent_client(gateway, agent["key"]) as me:
        first = await me.post("/v1/ocr", files={"file": ("a.pdf", pdf)}, timeout=60)
        assert first.status_code == 200, first.text
        refused = await me.post("/v1/ocr", files={"file": ("b.pdf", pdf)}, timeout=60)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "daily_limit_exceeded"
    assert (error["limit_type"], error["limit"], error["current"]) == ("ocr_pages_daily", 3, 2)
    usage = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage")).json()
    assert usage["daily"]["ocr_pages"] == 2
    assert usage["daily"]["cost"] == pytest.approx(2 * 0.002)  # Mistral's price per page
