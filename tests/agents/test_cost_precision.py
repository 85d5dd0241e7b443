"""Costs are never rounded to fewer digits than the prices have.

gpt-4o-mini costs $0.15 and $0.60 a million tokens, so a short request costs about
1.3e-05 USD with digits down to 1e-08; the agent's usage read rounded to 6 decimals and
showed a day cost below the cost of the request just made (1.2e-05 against 1.23e-05).
Every read of a cost (the agent's usage, analytics, a key's spend today) now agrees with
the cost the answer reported, to the digit.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import httpx
import pytest

from gateway.app.server import RunningGateway
from providers.catalog import load_catalog, round_cost

from .conftest import Create, agent_chat


async def test_an_agents_day_cost_is_at_least_the_request_just_made(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="precise")
    answer = await agent_chat(gateway, agent["key"], "run-1")
    cost = (answer.model_extra or {})["service"]["cost"]["total"]
    assert round(cost, 6) != cost  # a cost with digits past the sixth decimal
    usage = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage")).json()
    assert usage["daily"]["cost"] >= cost
    assert usage["daily"]["cost"] == usage["monthly"]["cost"] == cost
    assert {s["id"]: s["cost"] for s in usage["sessions"]}["run-1"] == cost
    assert usage["daily"]["remaining_budget"] == pytest.approx(1000.0 - cost, abs=1e-12)

    await gateway.state.usage.flush()
    today = datetime.now(UTC).date().isoformat()
    period = {"start_date": today, "end_date": today}
    pages = {}
    for page in ("usage", "costs", "usage/models"):
        read = await http.get(f"/v1/management/analytics/{page}", params=period)
        pages[page] = read.json()
    assert pages["usage"]["totals"]["cost_usd"] == cost
    assert pages["costs"]["totals"]["cost_usd"] == cost
    assert pages["usage/models"]["models"][0]["cost_usd"] == cost


def test_a_cost_keeps_every_digit_and_loses_only_float_noise() -> None:
    assert round_cost(1.23e-05) == 1.23e-05
    assert round_cost(0.1 + 0.2) == 0.3
    assert round_cost(1_234_567.12345678) == 1_234_567.12345678  # 8 decimals at $1.2M
    assert round_cost(7.5e-08 * 3) == 2.25e-07  # a price finer than 1e-8 a token
    # One token costs exactly its price, every digit of it, for every catalog model.
    for model in load_catalog().models():
        one_in, one_out = model.cost(1, 0).input, model.cost(0, 1).output
        for cost, per_1m in (
            (one_in, model.pricing.input_per_1m),
            (one_out, model.pricing.output_per_1m),
        ):
            assert Decimal(repr(cost)) == Decimal(repr(per_1m)) / 1_000_000, model.id
