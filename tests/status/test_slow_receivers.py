"""A slow or dead receiver holds only its own deliveries: other subscribers are served at
once (its own full queue: `test_full_destination_queue.py`)."""

from __future__ import annotations

from typing import Any

import httpx
import trio

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
