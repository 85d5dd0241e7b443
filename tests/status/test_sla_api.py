"""SLA-credit requests computed from incident history, and workspace isolation of the
status family."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from gateway.app.server import RunningGateway
from store import incidents as incident_store
from store.incidents import IncidentRecord
from tests.gateway.test_keys_api import foreign_key
from tests.status.receivers import WebhookReceiver


def last_month() -> tuple[str, datetime]:
    first_of_this = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    start = (first_of_this - timedelta(days=1)).replace(day=1)
    return f"{start:%Y-%m}", start


async def past_incident(
    gateway: RunningGateway,
    start: datetime,
    hours: float,
    severity: str = "major",
    ws: str = "default",
) -> str:
    record = IncidentRecord(
        id=incident_store.new_incident_id(),
        workspace_id=ws,
        title="openai unavailable",
        status="resolved",
        severity=severity,
        affected_services=("openai",),
        message="",
        source="monitor",
        created_at=start,
        updated_at=start + timedelta(hours=hours),
        resolved_at=start + timedelta(hours=hours),
    )
    await gateway.state.db.run(lambda d: incident_store.insert(d, record))
    return record.id


async def test_a_month_with_three_hours_down_earns_a_pro_credit(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    period, start = last_month()
    first = await past_incident(gateway, start + timedelta(days=2), 2)
    second = await past_incident(gateway, start + timedelta(days=2, hours=1), 2, "critical")
    await past_incident(gateway, start + timedelta(days=5), 10, "minor")  # degraded: up
    body = {"period": period, "incident_ids": [first, second], "description": "Outage on the 3rd"}
    response = await http.post("/v1/billing/sla-credit", json=body)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    month_hours = ((start + timedelta(days=32)).replace(day=1) - start).total_seconds() / 3600
    assert answer["downtime_minutes"] == 180.0
    assert answer["measured_uptime_percent"] == round(100 * (1 - 3 / month_hours), 4)
    assert answer["sla_target_percent"] == 99.9
    assert answer["plan"] == "pro"
    assert answer["credit_percent"] == 10.0
    assert answer["status"] == "approved"
    assert answer["incident_ids"] == [first, second]
    read = await http.get(f"/v1/billing/sla-credit/{answer['id']}")
    assert read.json() == answer


async def test_incidents_not_yours_or_not_in_the_period_are_a_400_naming_them(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    period, start = last_month()
    mine = await past_incident(gateway, start + timedelta(days=1), 1)
    earlier = await past_incident(gateway, start - timedelta(days=10), 1)
    await foreign_key(gateway, "admin", ("admin",))
    other_ws = (
        await gateway.state.db.run(
            lambda d: d.execute("SELECT id FROM workspaces WHERE id != 'default'").fetchone()
        )
    )[0]
    theirs = await past_incident(gateway, start + timedelta(days=1), 1, ws=other_ws)
    body = {"period": period, "incident_ids": [mine, earlier, theirs, "inc_nope"]}
    response = await http.post("/v1/billing/sla-credit", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_incident_ids"
    assert error["value"] == [earlier, theirs, "inc_nope"]
    for text in (earlier, theirs, "inc_nope"):
        assert text in error["message"]
    for bad in (
        {"period": "2026-13"},
        {"period": "next month"},
        {"period": "2999-01"},
        {"period": "0000-01"},  # year 0 cannot be a date: was a 500 (found by schemathesis)
        {"period": "9999-12"},  # its end, year 10000, cannot either
    ):
        response = await http.post("/v1/billing/sla-credit", json=bad)
        assert response.status_code == 400
        assert response.json()["error"]["param"] == "period"


async def test_free_plan_is_not_eligible(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    changed = await http.patch("/v1/management/organization", json={"plan": "free"})
    assert changed.status_code == 200, changed.text
    period, start = last_month()
    await past_incident(gateway, start, 48)
    answer = (await http.post("/v1/billing/sla-credit", json={"period": period})).json()
    assert answer["plan"] == "free"
    assert answer["sla_target_percent"] is None
    assert answer["credit_percent"] == 0.0
    assert answer["status"] == "not_eligible"


async def test_another_workspace_sees_none_of_it(
    gateway: RunningGateway, http: httpx.AsyncClient, receiver: WebhookReceiver
) -> None:
    hook = (
        await http.post(
            "/v1/status/webhooks", json={"url": receiver.url(), "events": ["incident.created"]}
        )
    ).json()
    incident = (
        await http.post("/v1/management/incidents", json={"title": "Slow", "severity": "minor"})
    ).json()
    alert = (
        await http.post(
            "/v1/alerts",
            json={
                "name": "n",
                "condition": {
                    "metric": "cost",
                    "operator": "gt",
                    "threshold": 1,
                    "window_minutes": 5,
                },
                "notify": {"email": ["a@example.com"]},
            },
        )
    ).json()
    period, _ = last_month()
    sla = (await http.post("/v1/billing/sla-credit", json={"period": period})).json()
    other = await foreign_key(gateway, "admin", ("admin",))
    headers = {"authorization": f"Bearer {other}"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=10) as them:
        for template, known in (
            ("/v1/status/webhooks/{}", hook["id"]),
            ("/v1/status/webhooks/{}/deliveries", hook["id"]),
            ("/v1/management/incidents/{}", incident["id"]),
            ("/v1/alerts/{}", alert["id"]),
            ("/v1/billing/sla-credit/{}", sla["id"]),
        ):
            response = await them.get(template.format(known))
            assert response.status_code == 404, template
            unknown = (await them.get(template.format("x_unknown"))).json()["error"]
            assert unknown["code"] == response.json()["error"]["code"]
        assert (await them.delete(f"/v1/status/webhooks/{hook['id']}")).status_code == 404
        assert (await them.delete(f"/v1/alerts/{alert['id']}")).status_code == 404
        resolve = await them.post(f"/v1/management/incidents/{incident['id']}/resolve")
        assert resolve.status_code == 404
        page = (await them.get("/v1/status")).json()
        assert page["incidents"] == []
        assert (await them.get("/v1/status/webhooks")).json()["data"] == []
    assert (await http.get(f"/v1/status/webhooks/{hook['id']}")).status_code == 200
