"""The organisation's plan decides the SLA of its credit requests: the owner sets it, and
each plan's credit holds at the edges of the credit table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from gateway.status.sla import credit_percent
from tests.gateway.test_keys_api import foreign_key
from tests.status.test_sla_api import past_incident

# (plan, measured uptime %, credit %): each threshold of the table, at and just below it.
EDGES: tuple[tuple[str, float, float], ...] = (
    ("free", 100.0, 0.0),
    ("free", 90.0, 0.0),
    ("pro", 100.0, 0.0),
    ("pro", 99.9, 0.0),
    ("pro", 99.89, 10.0),
    ("pro", 99.0, 10.0),
    ("pro", 98.99, 25.0),
    ("pro", 95.0, 25.0),
    ("pro", 94.99, 50.0),
    ("enterprise", 100.0, 0.0),
    ("enterprise", 99.99, 0.0),
    ("enterprise", 99.98, 10.0),
    ("enterprise", 99.9, 10.0),
    ("enterprise", 99.89, 25.0),
    ("enterprise", 99.0, 25.0),
    ("enterprise", 98.99, 50.0),
)
TARGETS = {"free": None, "pro": 99.9, "enterprise": 99.99}


@pytest.mark.parametrize(("plan", "uptime", "credit"), EDGES)
def test_credit_table_edges(plan: str, uptime: float, credit: float) -> None:
    assert credit_percent(plan, uptime) == credit


def months_ago(count: int) -> tuple[str, datetime, datetime]:
    """`YYYY-MM`, first instant and end of the month `count` months before this one."""
    first = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    for _ in range(count):
        first = (first - timedelta(days=1)).replace(day=1)
    end = (first + timedelta(days=32)).replace(day=1)
    return f"{first:%Y-%m}", first, end


async def set_plan(http: httpx.AsyncClient, plan: str) -> dict[str, Any]:
    response = await http.patch("/v1/management/organization", json={"plan": plan})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_each_plan_earns_its_credit_at_the_table_edges(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    for months, (plan, uptime, credit) in enumerate(EDGES, start=1):
        assert (await set_plan(http, plan))["plan"] == plan
        period, start, end = months_ago(months)
        down_hours = (end - start).total_seconds() * (100.0 - uptime) / 100.0 / 3600
        cited = []
        if down_hours:
            cited.append(await past_incident(gateway, start + timedelta(days=3), down_hours))
        body = {"period": period, "incident_ids": cited, "description": f"{plan} {uptime}"}
        response = await http.post("/v1/billing/sla-credit", json=body)
        assert response.status_code == 201, response.text
        answer = response.json()
        assert answer["plan"] == plan
        assert answer["sla_target_percent"] == TARGETS[plan]
        assert answer["measured_uptime_percent"] == uptime, (plan, uptime)
        assert answer["credit_percent"] == credit, (plan, uptime)
        assert answer["status"] == ("approved" if credit else "not_eligible")


async def test_the_owner_sets_the_plan_and_the_change_is_audited(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    before = (await http.get("/v1/management/organization")).json()
    assert before["object"] == "organization"
    assert before["plan"] == "pro"  # the organisation that existed before migration 9
    after = await set_plan(http, "enterprise")
    assert after == {**before, "plan": "enterprise"}
    assert (await http.get("/v1/management/organization")).json() == after
    log = (
        await http.get("/v1/management/audit-log", params={"type": "organization.plan_changed"})
    ).json()["events"]
    assert [(e["target"]["id"], e["details"]) for e in log] == [
        (before["id"], {"plan": "enterprise"})
    ]

    for bad in ({}, {"plan": "gold"}, {"plan": None}, {"plan": ["pro"]}):
        response = await http.patch("/v1/management/organization", json=bad)
        assert response.status_code == 400, bad
        assert response.json()["error"]["param"] == "plan"
    assert (await http.get("/v1/management/organization")).json()["plan"] == "enterprise"

    admin = await foreign_key(gateway, "admin", ("management",))
    headers = {"authorization": f"Bearer {admin}"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=10) as them:
        refused = await them.patch("/v1/management/organization", json={"plan": "free"})
    assert refused.status_code == 403
    assert (await http.get("/v1/management/organization")).json()["plan"] == "enterprise"
