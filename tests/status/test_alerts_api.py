"""Usage alerts end to end: an alert fires once, resolves once, and notifies by a signed
webhook and by email (to a local SMTP server), or records the email as undeliverable."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import httpx
import trio

from gateway.app.server import RunningGateway
from gateway.kernels.webhooks.signing import verify
from gateway.status.alert_evaluator import evaluate_all
from tests.status.receivers import SmtpReceiver, WebhookReceiver

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hello"}]}


def alert_body(url: str | None, emails: list[str]) -> dict[str, Any]:
    notify: dict[str, Any] = {"email": emails}
    if url is not None:
        notify["webhook"] = url
    return {
        "name": "Any traffic",
        "condition": {
            "metric": "request_count",
            "operator": "gt",
            "threshold": 0,
            "window_minutes": 5,
        },
        "notify": notify,
    }


async def traffic(gateway: RunningGateway, http: httpx.AsyncClient) -> datetime:
    assert (await http.post("/v1/chat/completions", json=CHAT)).status_code == 200
    await gateway.state.usage.flush()
    return datetime.now(UTC) + timedelta(seconds=1)


async def test_an_alert_fires_once_and_resolves_with_webhook_and_email(
    gateway: RunningGateway,
    http: httpx.AsyncClient,
    receiver: WebhookReceiver,
    smtp: SmtpReceiver,
) -> None:
    created = await http.post("/v1/alerts", json=alert_body(receiver.url(), ["ops@example.com"]))
    assert created.status_code == 201, created.text
    alert = created.json()
    secret = alert["webhook_secret"]
    assert alert["state"] == "ok"
    now = await traffic(gateway, http)
    limiter = trio.CapacityLimiter(1)

    await evaluate_all(gateway.state.status_services, now, limiter)
    with trio.fail_after(10):
        hook = await receiver.requests.receive()
        mail = await smtp.mails.receive()
    assert verify(secret, hook.headers["x-service-signature"], hook.body, now=time.time())
    payload = json.loads(hook.body)
    assert payload["event"] == "alert.triggered"
    assert payload["alert"]["value"] == 1.0
    assert mail.recipients == ("ops@example.com",)
    assert b"Alert triggered: Any traffic" in mail.data

    # Still true a minute later: nothing more is sent.
    await evaluate_all(gateway.state.status_services, now + timedelta(minutes=1), limiter)
    # The request has left the 5-minute window: resolved, once.
    await evaluate_all(gateway.state.status_services, now + timedelta(minutes=6), limiter)
    await evaluate_all(gateway.state.status_services, now + timedelta(minutes=7), limiter)
    with trio.fail_after(10):
        hook = await receiver.requests.receive()
        mail = await smtp.mails.receive()
    assert json.loads(hook.body)["event"] == "alert.resolved"
    assert b"Alert resolved" in mail.data

    read = (await http.get(f"/v1/alerts/{alert['id']}")).json()
    assert [(e["kind"], e["email_status"]) for e in read["events"]] == [
        ("triggered", "sent"),
        ("resolved", "sent"),
    ]
    assert read["state"] == "ok"
    assert read["last_value"] == 0.0
    assert len(read["deliveries"]) == 2
    assert "webhook_secret" not in read
    assert receiver.requests.statistics().current_buffer_used == 0
    assert smtp.mails.statistics().current_buffer_used == 0


async def test_without_smtp_the_email_is_recorded_as_undeliverable(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    status = gateway.state.status_services
    without_smtp = attrs.evolve(status, settings=attrs.evolve(status.settings, smtp_host=None))
    alert = (await http.post("/v1/alerts", json=alert_body(None, ["ops@example.com"]))).json()
    now = await traffic(gateway, http)
    await evaluate_all(without_smtp, now, trio.CapacityLimiter(1))
    read = (await http.get(f"/v1/alerts/{alert['id']}")).json()
    assert read["state"] == "firing"
    assert [(e["kind"], e["email_status"]) for e in read["events"]] == [
        ("triggered", "undeliverable")
    ]


async def test_alert_crud_and_validation(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    created = (await http.post("/v1/alerts", json=alert_body(None, ["a@example.com"]))).json()
    listed = (await http.get("/v1/alerts")).json()["data"]
    assert [a["id"] for a in listed] == [created["id"]]
    assert (await http.delete(f"/v1/alerts/{created['id']}")).json()["deleted"] is True
    assert (await http.get(f"/v1/alerts/{created['id']}")).status_code == 404
    assert (await http.delete(f"/v1/alerts/{created['id']}")).status_code == 404
    bad: list[tuple[dict[str, Any], str]] = [
        ({"condition": {"metric": "mood"}}, "condition.metric"),
        ({"condition": {"operator": "eq"}}, "condition.operator"),
        ({"condition": {"threshold": "high"}}, "condition.threshold"),
        ({"condition": {"window_minutes": 0}}, "condition.window_minutes"),
        ({"notify": {"email": ["not-an-address"]}}, "notify.email[0]"),
        ({"notify": {}}, "notify"),
    ]
    for change, param in bad:
        body = alert_body(None, ["a@example.com"])
        for key, value in change.items():
            body[key] = {**body[key], **value} if key == "condition" else value
        response = await http.post("/v1/alerts", json=body)
        assert response.status_code == 400, (change, response.text)
        assert response.json()["error"]["param"] == param
    body = alert_body(None, ["a@example.com", "not-an-address"])
    error = (await http.post("/v1/alerts", json=body)).json()["error"]
    assert "not-an-address" in error["message"]  # it said "must hold up to 20 addresses"
    body = alert_body(None, [f"ops{i}@example.com" for i in range(21)])
    error = (await http.post("/v1/alerts", json=body)).json()["error"]
    assert "up to 20" in error["message"] and error["value"] == 21
