"""Status webhooks, alerts and operators' incident changes are management changes: each
writes its audit event in the change's own transaction, and a refused change writes none."""

from __future__ import annotations

import httpx

from tests.status.receivers import WebhookReceiver
from tests.status.test_alerts_api import alert_body
from tests.status.test_sla_api import last_month


async def audit_types(http: httpx.AsyncClient) -> list[str]:
    answer = await http.get("/v1/management/audit-log", params={"limit": 100})
    assert answer.status_code == 200, answer.text
    return [event["type"] for event in reversed(answer.json()["events"])]


async def test_webhook_and_alert_changes_are_in_the_audit_log(
    http: httpx.AsyncClient, receiver: WebhookReceiver
) -> None:
    before = await audit_types(http)
    hook = await http.post(
        "/v1/status/webhooks", json={"url": receiver.url(), "events": ["incident.created"]}
    )
    alert = await http.post("/v1/alerts", json=alert_body(receiver.url(), []))
    assert hook.status_code == alert.status_code == 201
    assert (await http.delete(f"/v1/status/webhooks/{hook.json()['id']}")).status_code == 200
    assert (await http.delete(f"/v1/alerts/{alert.json()['id']}")).status_code == 200
    assert (await http.delete("/v1/alerts/alert_unknown")).status_code == 404  # no event

    incident = await http.post(
        "/v1/management/incidents", json={"title": "Slow answers", "severity": "minor"}
    )
    assert incident.status_code == 201, incident.text
    url = f"/v1/management/incidents/{incident.json()['id']}"
    assert (await http.patch(url, json={"status": "identified"})).status_code == 200
    assert (await http.post(f"{url}/resolve", json={})).status_code == 200
    assert (await http.post(f"{url}/resolve", json={})).status_code == 409  # no event

    events = (await http.get("/v1/management/audit-log", params={"limit": 100})).json()
    added = (await audit_types(http))[len(before) :]
    assert added == [
        "status_webhook.created",
        "alert.created",
        "status_webhook.deleted",
        "alert.deleted",
        "incident.created",
        "incident.updated",
        "incident.resolved",
    ]
    created = next(e for e in events["events"] if e["type"] == "incident.created")
    assert created["target"]["id"] == incident.json()["id"]


async def test_an_sla_credit_request_is_in_the_audit_log(http: httpx.AsyncClient) -> None:
    period, _ = last_month()
    before = await audit_types(http)
    created = await http.post("/v1/billing/sla-credit", json={"period": period})
    assert created.status_code == 201, created.text
    refused = await http.post(
        "/v1/billing/sla-credit", json={"period": period, "incident_ids": ["inc_nope"]}
    )
    assert refused.status_code == 400  # no event
    assert (await audit_types(http))[len(before) :] == ["sla_credit.requested"]
