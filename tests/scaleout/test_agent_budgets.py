"""Agent budgets exact across two gateways sharing one store and one Redis: the daily
cost under concurrent requests (settled total within one estimate of the limit), the
requests per minute, the concurrent sessions, the figures each gateway shows, and a
crashed worker's reservation given back when its lease ends, the server unavailable (503)
and a fresh one seeded from the usage log."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import trio

from gateway.agents.counters import Amounts
from gateway.agents.shared import SharedAgentCounters
from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from gateway.platform.resp import RedisClient
from gateway.upstream.accounting import estimate_prompt_tokens
from providers.types import Usage
from tests.gateway.conftest import ADMIN_KEY
from tests.scaleout.redis_server import RedisServer
from tests.scaleout.test_shared_limits import pair

__all__ = ["pair"]
MAX_TOKENS = 20


async def create_agent(url: str, **body: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(
        base_url=url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    ) as http:
        created = await http.post("/v1/mcp/agents", json={"name": "roamer", **body})
    assert created.status_code == 201, created.text
    agent: dict[str, Any] = created.json()
    return agent


async def usage(url: str, agent_id: str, session: str = "default") -> dict[str, Any]:
    async with httpx.AsyncClient(
        base_url=url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    ) as http:
        answer = await http.get(f"/v1/mcp/agents/{agent_id}/usage?session={session}")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def settled(url: str, agent_id: str) -> dict[str, Any]:
    """The usage once nothing is in flight: settlements reach the server off the
    request path, a moment after the answers."""
    with trio.fail_after(5):
        while True:
            figures = await usage(url, agent_id)
            if not figures["in_flight"]:
                return figures
            await trio.sleep(0.05)


def messages(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Write line {n} about budgets."}]


async def fire(
    urls: list[str], key: str, count: int, sessions: int = 1, provider: str | None = None
) -> Counter[tuple[int, str]]:
    """`count` requests at once, spread over `urls` (and `sessions`); `provider` forces
    the vendor (no other vendor's fallback)."""
    outcomes: Counter[tuple[int, str]] = Counter()
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=count)) as http:

        async def one(n: int) -> None:
            body: dict[str, Any] = {
                "model": "gpt-4o-mini",
                "messages": messages(n),
                "max_tokens": MAX_TOKENS,
            }
            if provider is not None:
                body["provider"] = provider
            headers = {"authorization": f"Bearer {key}", "x-agent-session": f"s{n % sessions}"}
            answer = await http.post(
                urls[n % len(urls)] + "/v1/chat/completions", json=body, headers=headers
            )
            code = "" if answer.status_code == 200 else answer.json()["error"]["code"]
            outcomes[(answer.status_code, code)] += 1

        async with trio.open_nursery() as nursery:
            for n in range(count):
                nursery.start_soon(one, n)
    return outcomes


async def test_the_daily_budget_holds_across_two_gateways(pair: list[RunningGateway]) -> None:
    # Admission reserves the dearest candidate of the plan at the prompt's estimate and
    # `max_tokens` (gateway.agents.gate). The requests force openai, so the plan is
    # gpt-4o-mini alone and its estimate is close to what an answer costs. With the
    # catalog's fallback chain it would be claude-haiku-4-5's price, 8.5 times an answer:
    # one reservation would hold most of the budget, and how many are admitted would
    # depend on how many answers settle while the others arrive.
    info = pair[0].state.catalog.model("gpt-4o-mini")
    assert info is not None
    prompt = max(estimate_prompt_tokens(messages(n), None) for n in range(24))
    estimate = float(info.metered_cost(Usage(prompt, MAX_TOKENS)).total)
    limit = round(estimate * 3.5, 9)
    agent = await create_agent(pair[0].url, limits={"cost_daily": limit})
    outcomes = await fire([g.url for g in pair], agent["key"], 24, provider="openai")
    admitted = outcomes[(200, "")]
    assert outcomes[(429, "cost_limit_exceeded")] == 24 - admitted
    assert 3 <= admitted < 24
    figures = await settled(pair[1].url, agent["id"])
    spent = figures["daily"]["cost"]
    # Admission stops once the committed estimates reach the limit; actual costs are
    # below their estimates, so the settled total ends within one estimate above it.
    assert 0 < spent <= limit + estimate
    other = await usage(pair[0].url, agent["id"])
    assert other["daily"] == figures["daily"]
    # The usage log of both gateways holds the same total.
    for gateway in pair:
        await gateway.state.usage.flush()
    logged = await pair[0].state.db.run(
        lambda d: d.execute(
            "SELECT sum(cost_usd) FROM usage_records WHERE key_id = ?", [agent["key_id"]]
        ).fetchone()[0]
    )
    assert abs(logged - spent) < 1e-6  # the usage answer rounds to 6 decimals


async def test_rpm_and_sessions_hold_across_two_gateways(pair: list[RunningGateway]) -> None:
    agent = await create_agent(pair[0].url, limits={"requests_per_minute": 7})
    outcomes = await fire([g.url for g in pair], agent["key"], 20)
    assert outcomes == {(200, ""): 7, (429, "rpm_exceeded"): 13}

    agent = await create_agent(pair[0].url, limits={"concurrent_sessions": 2})
    outcomes = await fire([g.url for g in pair], agent["key"], 12, sessions=4)
    assert outcomes[(429, "concurrent_limit_exceeded")] >= 1
    figures = await usage(pair[1].url, agent["id"], "s0")
    assert figures["active_sessions"] == 2
    listed = {row["id"] for row in figures["sessions"] if row["active"]}
    assert len(listed) == 2


async def test_a_crashed_workers_reservation_is_given_back(redis_server: RedisServer) -> None:
    async def spent(key_id: str, session: str) -> tuple[Amounts, Amounts, float]:
        return Amounts(), Amounts(), 0.0

    client = RedisClient.from_url(redis_server.url)
    try:
        crashed = SharedAgentCounters(client, spent, lease_s=0.2)
        limits: dict[str, float | None] = {"cost_daily": 1.0}
        _, held, status = await crashed.take("agt_x", "key_x", "a", limits, Amounts(cost=1.0))
        assert held is not None and status == "ok"
        # Nobody settles it (its process is gone): the budget is committed until the lease
        # ends, then given back.
        survivor = SharedAgentCounters(client, spent)
        _, refused, status = await survivor.take("agt_x", "key_x", "a", limits, Amounts(cost=0.1))
        assert (refused, status) == (None, "cost_daily")
        await trio.sleep(0.3)  # the server's own clock decides; virtual time cannot move it
        figures, taken, status = await survivor.take("agt_x", "key_x", "a", limits, Amounts())
        assert taken is not None and status == "ok"
        assert figures.daily.cost == 0.0 and figures.in_flight == 0
    finally:
        client.close()


async def test_redis_stopped_refuses_then_a_fresh_server_is_seeded_from_the_usage_log(
    nursery: trio.Nursery, shared_settings: Settings, redis_server: RedisServer
) -> None:
    gateway: RunningGateway = await nursery.start(
        lambda task_status: run_gateway(shared_settings, env={}, task_status=task_status)
    )
    agent = await create_agent(gateway.url)
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
    auth = {"authorization": f"Bearer {agent['key']}", "x-agent-session": "job"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=auth, timeout=30) as http:
        assert (await http.post("/v1/chat/completions", json=body)).status_code == 200
        before = await settled(gateway.url, agent["id"])
        redis_server.stop()
        refused = await http.post("/v1/chat/completions", json=body)
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "limits_unavailable"
        redis_server.start()  # empty: the day, month and session come from the usage log
        after = await usage(gateway.url, agent["id"], "job")
    assert before["daily"]["cost"] > 0
    assert after["daily"]["cost"] == before["daily"]["cost"]
    assert after["monthly"]["cost"] == before["monthly"]["cost"]
    assert after["session"]["cost"] == before["daily"]["cost"]


async def test_rpm_abuse_counted_across_gateways_suspends_once(
    pair: list[RunningGateway],
) -> None:
    agent = await create_agent(
        pair[0].url,
        limits={"requests_per_minute": 2},
        auto_suspend={"on_rpm_abuse": True, "abuse_threshold": 3},
    )
    statuses = []
    async with httpx.AsyncClient(timeout=30) as http:
        auth = {"authorization": f"Bearer {agent['key']}"}
        for n in range(5):  # alternating gateways: the refusals add up on the server
            body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"{n}"}]}
            answer = await http.post(
                pair[n % 2].url + "/v1/chat/completions", json=body, headers=auth
            )
            statuses.append(answer.status_code)
        assert statuses == [200, 200, 429, 429, 429]
        admin = {"authorization": f"Bearer {ADMIN_KEY}"}
        read = await http.get(f"{pair[1].url}/v1/mcp/agents/{agent['id']}", headers=admin)
        assert read.json()["status"] == "suspended"
        events = (await http.get(f"{pair[1].url}/v1/management/audit-log", headers=admin)).json()
    suspended = [e for e in events["events"] if e["type"] == "agent.suspended"]
    assert len(suspended) == 1
    assert suspended[0]["target"]["id"] == agent["id"]
