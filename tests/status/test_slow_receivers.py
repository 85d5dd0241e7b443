"""A slow or dead receiver holds only its own deliveries: other subscribers are served at
once, and its own queue, when full, drops deliveries (logged) instead of growing."""

from __future__ import annotations

from typing import Any

import attrs
import httpx
import trio

from gateway.app.server import RunningGateway
from tests.status.receivers import HANG, WebhookReceiver


async def subscribe(http: httpx.AsyncClient, receiver: WebhookReceiver) -> dict[str, Any]:
    body = {"url": receiver.url(), "events": ["incident.created"]}
    response = await http.post("/v1/status/webhooks", json=body)
    assert response.status_code == 201
    result: dict[str, Any] = response.json()
    return result


async def test_a_hanging_receiver_does_not_delay_another(
    nursery: trio.Nursery, http: httpx.AsyncClient, receiver: WebhookReceiver
) -> None:
    dead = WebhookReceiver(statuses=[HANG])
    await nursery.start(dead.serve)
    await subscribe(http, dead)  # subscribed first, so fanned out first
    await subscribe(http, receiver)
    created = await http.post("/v1/management/incidents", json={"title": "x", "severity": "minor"})
    assert created.status_code == 201
    with trio.fail_after(5):
        held = await dead.requests.receive()  # the dead one has the call and holds it ...
        served = await receiver.requests.receive()  # ... while the other is served
    assert held.body == served.body
    assert (await http.get("/v1/status")).status_code == 200  # requests are not held either


async def test_a_full_destination_queue_drops_and_logs(
    gateway: RunningGateway, nursery: trio.Nursery, http: httpx.AsyncClient
) -> None:
    gateway.state.settings = attrs.evolve(
        gateway.state.settings, webhook_destination_queue_size=1, webhook_destination_concurrency=1
    )
    dead = WebhookReceiver(statuses=[HANG])
    await nursery.start(dead.serve)
    hook = await subscribe(http, dead)
    await http.post("/v1/management/incidents", json={"title": "one", "severity": "minor"})
    with trio.fail_after(5):
        await dead.requests.receive()  # the first delivery is held by the receiver
    for title in ("two", "three"):  # the second waits in the queue, the third cannot
        await http.post("/v1/management/incidents", json={"title": title, "severity": "minor"})
    path = f"/v1/status/webhooks/{hook['id']}/deliveries"
    with trio.fail_after(5):
        while True:
            log = (await http.get(path)).json()["data"]
            if len(log) == 3 and any(d["status"] == "dropped" for d in log):
                break
            await trio.sleep(0.01)  # the worker writes the log after the API answered
    by_title = {d["payload"]["incident"]["title"]: d for d in log}
    assert by_title["three"]["status"] == "dropped"
    assert by_title["three"]["last_error"] == "destination queue full"
    assert by_title["one"]["status"] == "pending"
    assert by_title["two"]["status"] == "pending"
