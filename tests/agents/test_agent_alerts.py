"""Limit-warning alerts: each threshold fires once per limit period, with the spec's
payload, signed, at a local receiver; a bad alert is a 400."""

from __future__ import annotations

import json
import time

import httpx
import trio

from gateway.agents import agent_alerts
from gateway.agents.book import Notice
from gateway.app.server import RunningGateway
from gateway.kernels.webhooks.signing import SIGNATURE_HEADER, verify
from store import webhooks as webhook_store
from tests.agents.conftest import Create, agent_client
from tests.status.receivers import WebhookReceiver

LIMIT = 2e-5  # a few gpt-4o-mini requests of 20 tokens


async def test_each_threshold_fires_once_at_the_receiver(
    gateway: RunningGateway,
    http: httpx.AsyncClient,
    create_agent: Create,
    receiver: WebhookReceiver,
) -> None:
    agent = await create_agent(name="watched", limits={"cost_daily": LIMIT})
    created = await http.post(
        f"/v1/mcp/agents/{agent['id']}/alerts",
        json={
            "type": "limit_warning",
            "thresholds": {"cost_daily": [0.8, 0.5]},
            "webhook_url": receiver.url(),
        },
    )
    assert created.status_code == 201, created.text
    alert = created.json()
    assert alert["thresholds"] == {"cost_daily": [0.5, 0.8]}
    secret = alert["secret"]
    async with agent_client(gateway, agent["key"]) as me:
        for n in range(40):
            body = {
                "model": "gpt-4o-mini",
                "messages": [{"role": "user", "content": f"Step {n} of the job."}],
                "max_tokens": 20,
            }
            if (await me.post("/v1/chat/completions", json=body)).status_code != 200:
                break
    usage = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage")).json()
    assert usage["daily"]["cost"] >= 0.8 * LIMIT
    received = []
    with trio.fail_after(10):
        for _ in range(2):
            received.append(await receiver.requests.receive())
    payloads = [json.loads(r.body) for r in received]
    assert sorted(p["threshold"] for p in payloads) == [0.5, 0.8]
    for request, payload in zip(received, payloads, strict=True):
        assert set(payload) == {
            "event",
            "agent_id",
            "limit_type",
            "threshold",
            "current",
            "limit",
            "timestamp",
        }
        assert payload["event"] == "limit_warning"
        assert payload["agent_id"] == agent["id"]
        assert payload["limit_type"] == "cost_daily"
        assert payload["limit"] == LIMIT
        assert payload["current"] >= payload["threshold"] * LIMIT
        assert verify(
            secret, request.headers[SIGNATURE_HEADER.lower()], request.body, now=time.time()
        )
    # Checking again (as every later request does) fires nothing more this day.
    await agent_alerts.check(gateway.state.agents_services, Notice(agent["id"], "default"))
    ws = "default"
    deliveries = await gateway.state.db.run(
        lambda d: webhook_store.list_deliveries(d, alert["id"], ws)
    )
    assert len(deliveries) == 2
    listed = (await http.get(f"/v1/mcp/agents/{agent['id']}/alerts")).json()["data"]
    assert [a["id"] for a in listed] == [alert["id"]]
    assert "secret" not in listed[0]
    # One alert with its delivery log, then deleted (an agent at its alert ceiling had no
    # way to drop one but to delete the agent).
    one = f"/v1/mcp/agents/{agent['id']}/alerts/{alert['id']}"
    read = (await http.get(one)).json()
    assert len(read["deliveries"]) == 2 and "secret" not in read
    assert {d["event"] for d in read["deliveries"]} == {"limit_warning"}
    other = await create_agent(name="neighbour")
    assert (await http.get(f"/v1/mcp/agents/{other['id']}/alerts/{alert['id']}")).status_code == 404
    deleted = await http.delete(one)
    assert deleted.json() == {"id": alert["id"], "object": "agent_alert", "deleted": True}
    assert (await http.get(one)).json()["error"]["code"] == "alert_not_found"
    assert (await http.delete(one)).status_code == 404
    assert (await http.get(f"/v1/mcp/agents/{agent['id']}/alerts")).json()["data"] == []


async def test_bad_alerts_are_refused(http: httpx.AsyncClient, create_agent: Create) -> None:
    agent = await create_agent(name="alerts")
    path = f"/v1/mcp/agents/{agent['id']}/alerts"
    base = {"type": "limit_warning", "thresholds": {"cost_daily": [0.5]}}
    cases = [
        ({**base, "type": "budget", "webhook_url": "https://example.com/h"}, "type"),
        (
            {**base, "thresholds": {"cost_daily": [1.5]}, "webhook_url": "https://example.com/h"},
            "thresholds.cost_daily[0]",
        ),
        (
            {**base, "thresholds": {"tokens": [0.5]}, "webhook_url": "https://example.com/h"},
            "thresholds.tokens",
        ),
        ({**base, "webhook_url": "http://169.254.169.254/latest"}, "webhook_url"),
    ]
    for body, param in cases:
        response = await http.post(path, json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["param"] == param
    bad = {**base, "thresholds": {"cost_daily": [1.5]}, "webhook_url": "https://example.com/h"}
    assert (await http.post(path, json=bad)).json()["error"]["value"] == 1.5  # the item refused


async def test_an_alert_on_a_name_that_does_not_resolve_is_created(
    http: httpx.AsyncClient, create_agent: Create
) -> None:
    """`.invalid` never resolves: the alert is kept (each delivery checks the name again)
    rather than refused, so registering does not depend on the gateway's DNS."""
    agent = await create_agent(name="unresolved")
    response = await http.post(
        f"/v1/mcp/agents/{agent['id']}/alerts",
        json={
            "type": "limit_warning",
            "thresholds": {"cost_daily": [0.5]},
            "webhook_url": "https://hooks.example.invalid/agent",
        },
    )
    assert response.status_code == 201, response.text
