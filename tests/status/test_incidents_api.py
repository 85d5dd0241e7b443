"""A provider goes down and comes back through the simulator's faults: the incident opens
and resolves, `/v1/status` follows, and a signed webhook reaches a local receiver."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import trio

from gateway.app.server import RunningGateway
from gateway.kernels.webhooks.signing import verify
from gateway.status import incident_monitor
from gateway.workers.health_probes import probe_round
from providers.sim.openai import MODEL_LIST
from store import webhooks as webhook_store
from tests.status.receivers import Received, WebhookReceiver


async def subscribe(http: httpx.AsyncClient, url: str, events: list[str]) -> dict[str, Any]:
    response = await http.post("/v1/status/webhooks", json={"url": url, "events": events})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    assert body["secret"].startswith("whsec_")
    return body


async def next_request(receiver: WebhookReceiver) -> Received:
    with trio.fail_after(10):
        return await receiver.requests.receive()


def check_signed(received: Received, secret: str) -> dict[str, Any]:
    assert received.method == "POST"
    assert verify(secret, received.headers["x-service-signature"], received.body, now=time.time())
    assert not verify(
        "whsec_wrong", received.headers["x-service-signature"], received.body, now=time.time()
    )
    payload: dict[str, Any] = json.loads(received.body)
    assert received.headers["x-service-event"] == payload["event"]
    return payload


async def probe(gateway: RunningGateway, rounds: int) -> None:
    for _ in range(rounds):
        await probe_round(gateway.state.probes)
    await incident_monitor.check(gateway.state.status_services, datetime.now(UTC))


def service(page: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in page["services"] if s["name"] == name)


async def test_provider_down_and_up_opens_and_resolves_an_incident(
    gateway: RunningGateway, http: httpx.AsyncClient, receiver: WebhookReceiver
) -> None:
    assert gateway.sim is not None
    hook = await subscribe(http, receiver.url(), ["incident.created", "incident.resolved"])
    await probe(gateway, 3)
    page = (await http.get("/v1/status")).json()
    assert page["status"] == "operational"
    assert page["incidents"] == []
    assert service(page, "openai")["uptime_30d"] == 1.0
    assert service(page, "openai")["latency_p50_ms"] is not None  # from the probes

    # The simulator's fault control: OpenAI's model list (what the probes call) fails.
    control = f"http://{gateway.sim.host}:{gateway.sim.port}/_sim/faults"
    async with httpx.AsyncClient(timeout=10) as sim:
        fault = {"model": MODEL_LIST, "vendor": "openai", "status": 503}
        assert (await sim.post(control, json=fault)).status_code == 201
    await probe(gateway, 2)  # two failures: below the "down" threshold, a minor incident
    await probe(gateway, 1)  # three in a row: escalated to major (incident.updated)
    created = check_signed(await next_request(receiver), hook["secret"])
    assert created["event"] == "incident.created"
    incident = created["incident"]
    assert incident["affected_services"] == ["openai"]
    assert incident["status"] == "investigating"
    assert set(incident) == {"id", "title", "status", "severity", "affected_services", "message"}

    page = (await http.get("/v1/status")).json()
    assert page["status"] == "partial_outage"
    assert [i["id"] for i in page["incidents"]] == [incident["id"]]
    assert page["incidents"][0]["severity"] == "major"
    assert service(page, "openai")["status"] == "partial_outage"
    assert service(page, "anthropic")["status"] == "operational"

    async with httpx.AsyncClient(timeout=10) as sim:
        assert (await sim.delete(control)).json() == {"cleared": 1}
    await probe(gateway, 2)
    resolved = check_signed(await next_request(receiver), hook["secret"])
    assert resolved["event"] == "incident.resolved"
    assert resolved["incident"]["id"] == incident["id"]
    assert resolved["incident"]["status"] == "resolved"
    page = (await http.get("/v1/status")).json()
    assert page["status"] == "operational"
    assert page["incidents"] == []

    history = (await http.get(f"/v1/management/incidents/{incident['id']}")).json()
    assert [u["severity"] for u in history["updates"]] == ["minor", "major", "major"]
    assert history["resolved_at"] is not None
    deliveries = (await http.get(f"/v1/status/webhooks/{hook['id']}/deliveries")).json()["data"]
    assert {d["event"] for d in deliveries} == {"incident.created", "incident.resolved"}


async def test_a_receiver_answering_500_is_retried_and_logged(
    gateway: RunningGateway, http: httpx.AsyncClient, receiver: WebhookReceiver
) -> None:
    receiver.statuses.extend([500, 500])
    hook = await subscribe(http, receiver.url(), ["incident.created"])
    body = {"title": "Elevated errors", "severity": "minor", "message": "Looking into it"}
    created = await http.post("/v1/management/incidents", json=body)
    assert created.status_code == 201
    attempts = [check_signed(await next_request(receiver), hook["secret"]) for _ in range(3)]
    assert {a["incident"]["id"] for a in attempts} == {created.json()["id"]}
    with trio.fail_after(10):
        while True:
            log = (await http.get(f"/v1/status/webhooks/{hook['id']}/deliveries")).json()["data"]
            if log and log[0]["status"] == "delivered":
                break
            await trio.sleep(0.01)  # the worker writes the log after answering
    assert log[0]["attempts"] == 3
    assert log[0]["last_status_code"] == 200


async def test_operators_create_update_and_resolve_incidents(
    http: httpx.AsyncClient, receiver: WebhookReceiver
) -> None:
    events = [
        "incident.created",
        "incident.updated",
        "incident.resolved",
        "maintenance.scheduled",
        "maintenance.started",
        "maintenance.completed",
    ]
    hook = await subscribe(http, receiver.url(), events)
    body = {"title": "Database upgrade", "severity": "maintenance", "affected_services": ["api"]}
    created = (await http.post("/v1/management/incidents", json=body)).json()
    assert created["status"] == "scheduled"
    started = await http.patch(
        f"/v1/management/incidents/{created['id']}", json={"status": "in_progress"}
    )
    assert started.json()["status"] == "in_progress"
    page = (await http.get("/v1/status")).json()
    assert service(page, "api")["status"] == "maintenance"
    # A note while it runs is an update, not a second start (it sent maintenance.started).
    noted = await http.patch(
        f"/v1/management/incidents/{created['id']}", json={"message": "Half way."}
    )
    assert noted.json()["status"] == "in_progress"
    done = await http.post(f"/v1/management/incidents/{created['id']}/resolve", json={})
    assert done.json()["status"] == "completed"
    again = await http.post(f"/v1/management/incidents/{created['id']}/resolve")
    assert again.status_code == 409
    names = [check_signed(await next_request(receiver), hook["secret"])["event"] for _ in range(4)]
    assert sorted(names) == [
        "incident.updated",
        "maintenance.completed",
        "maintenance.scheduled",
        "maintenance.started",
    ]
    listed = (await http.get("/v1/management/incidents")).json()["data"]
    assert [i["id"] for i in listed] == [created["id"]]


async def test_status_lists_the_maintenance_windows(http: httpx.AsyncClient) -> None:
    page = (await http.get("/v1/status")).json()
    windows = page["scheduled_maintenance"]
    assert {w["type"] for w in windows} == {"primary", "backup"}
    for entry in windows:
        start = datetime.fromisoformat(entry["starts_at"].replace("Z", "+00:00"))
        assert (start.weekday(), start.hour) in ((6, 2), (2, 2))


async def test_status_needs_a_key_and_management_routes_need_the_permission(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        assert (await anonymous.get("/v1/status")).status_code == 401
    key = (await http.post("/v1/management/api-keys", json={"name": "app", "type": "dev"})).json()
    headers = {"authorization": f"Bearer {key['key']}"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=10) as app:
        assert (await app.get("/v1/status")).status_code == 200
        for method, path in (
            ("POST", "/v1/status/webhooks"),
            ("GET", "/v1/management/incidents"),
            ("POST", "/v1/alerts"),
            ("POST", "/v1/billing/sla-credit"),
        ):
            response = await app.request(method, path, json={})
            assert response.status_code == 403, (method, path)


async def test_bad_bodies_are_400s_naming_the_field(http: httpx.AsyncClient) -> None:
    cases = [
        (
            "/v1/status/webhooks",
            {"url": "https://example.com", "events": ["incident.exploded"]},
            "events[0]",
        ),
        (
            "/v1/status/webhooks",
            {"url": "ftp://example.com/x", "events": ["incident.created"]},
            "url",
        ),
        ("/v1/status/webhooks", {"events": ["incident.created"]}, "url"),
        ("/v1/management/incidents", {"title": "x", "severity": "apocalyptic"}, "severity"),
        ("/v1/management/incidents", {"title": "x", "severity": "minor", "colour": 1}, "colour"),
        (  # it was created, affecting nothing the status page shows
            "/v1/management/incidents",
            {"title": "x", "severity": "minor", "affected_services": ["api", "databse"]},
            "affected_services",
        ),
    ]
    for path, body, param in cases:
        response = await http.post(path, json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["param"] == param
    none = await http.post("/v1/status/webhooks", json={"url": "https://example.com", "events": []})
    assert (none.json()["error"]["param"], none.json()["error"]["value"]) == ("events", [])


async def test_latency_comes_from_real_traffic(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    page = (await http.get("/v1/status")).json()
    assert service(page, "api")["latency_p50_ms"] is None  # no traffic, no probes yet
    chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
    assert (await http.post("/v1/chat/completions", json=chat)).status_code == 200
    await gateway.state.usage.flush()
    page = (await http.get("/v1/status")).json()
    records = await gateway.state.db.run(
        lambda d: list(d.query("SELECT provider, latency_ms FROM usage_records"))
    )
    assert len(records) == 1
    expected = round(records[0]["latency_ms"], 1)
    assert service(page, "api")["latency_p50_ms"] == expected
    assert service(page, records[0]["provider"])["latency_p50_ms"] == expected


async def test_an_incident_keeps_its_kind_and_names_a_service(http: httpx.AsyncClient) -> None:
    """Maintenance and outages have different statuses and events: a severity change across
    the two was accepted and left, say, a `minor` incident `in_progress`."""
    incidents = "/v1/management/incidents"
    window = (
        await http.post(incidents, json={"title": "Upgrade", "severity": "maintenance"})
    ).json()
    outage = (await http.post(incidents, json={"title": "Slow", "severity": "minor"})).json()
    for record, severity in ((window, "minor"), (outage, "maintenance")):
        response = await http.patch(f"{incidents}/{record['id']}", json={"severity": severity})
        assert response.status_code == 400, response.text
        assert response.json()["error"]["param"] == "severity"
        assert (await http.get(f"{incidents}/{record['id']}")).json()["severity"] == record[
            "severity"
        ]
    assert [u["severity"] for u in outage["updates"]] == ["minor"]  # was [] until read
    raised = await http.patch(f"{incidents}/{outage['id']}", json={"severity": "critical"})
    assert raised.json()["severity"] == "critical"
    assert [u["severity"] for u in raised.json()["updates"]] == ["minor", "critical"]
    resolved = await http.post(f"{incidents}/{outage['id']}/resolve", json={"message": "ok"})
    assert resolved.json()["updates"][-1]["status"] == "resolved"
    assert resolved.json() == (await http.get(f"{incidents}/{outage['id']}")).json()
    empty = await http.post(
        incidents, json={"title": "x", "severity": "minor", "affected_services": []}
    )
    assert empty.status_code == 400
    assert empty.json()["error"]["param"] == "affected_services"


async def test_the_status_page_is_of_the_workspace_asked_for(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """`X-Workspace-ID` was ignored here (unlike the management routes): an operator asking
    for another workspace's page was shown its home workspace's incidents."""
    opened = await http.post(
        "/v1/management/incidents", json={"title": "Home", "severity": "major"}
    )
    assert opened.status_code == 201
    created = await http.post("/v1/management/workspaces", json={"name": "second"})
    other = {"x-workspace-id": created.json()["id"]}
    home = (await http.get("/v1/status")).json()
    assert [i["title"] for i in home["incidents"]] == ["Home"]
    page = (await http.get("/v1/status", headers=other)).json()
    assert page["incidents"] == [] and page["status"] == "operational"
    assert (await http.get("/v1/health/detailed", headers=other)).status_code == 200
    unknown = await http.get("/v1/status", headers={"x-workspace-id": "ws_nope"})
    assert unknown.status_code == 404
    key = (await http.post("/v1/management/api-keys", json={"name": "app", "type": "dev"})).json()
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {key['key']}"}, timeout=10
    ) as app:
        assert (await app.get("/v1/status", headers=other)).status_code in (403, 404)
        assert (await app.get("/v1/status")).json()["incidents"] == home["incidents"]


async def test_an_unsubscribed_receiver_gets_no_more_retries(
    gateway: RunningGateway, http: httpx.AsyncClient, receiver: WebhookReceiver
) -> None:
    """A delivery being retried went on calling the receiver for up to the retry window
    (an hour) after its subscription was deleted."""
    receiver.statuses.extend([500] * 40)
    hook = await subscribe(http, receiver.url(), ["incident.created"])
    body = {"title": "Elevated errors", "severity": "minor"}
    assert (await http.post("/v1/management/incidents", json=body)).status_code == 201
    await next_request(receiver)
    assert (await http.delete(f"/v1/status/webhooks/{hook['id']}")).status_code == 200
    ws = "default"
    with trio.fail_after(10):
        while True:
            log = await gateway.state.db.run(
                lambda d: webhook_store.list_deliveries(d, hook["id"], ws)
            )
            if log[0].status != "pending":
                break
            await trio.sleep(0.01)
    assert (log[0].status, log[0].last_error) == ("failed", webhook_store.SOURCE_GONE)
    assert log[0].attempts < 40
