"""A slow or dead receiver's own queue, when full, drops deliveries (logged) instead of
growing."""

from __future__ import annotations

import attrs
import httpx
import pytest
import trio

from gateway.platform.config import Settings
from tests.status.receivers import HANG, WebhookReceiver
from tests.status.test_slow_receivers import subscribe


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """One delivery in flight and one waiting per destination."""
    return attrs.evolve(
        settings, webhook_destination_queue_size=1, webhook_destination_concurrency=1
    )


async def test_a_full_destination_queue_drops_and_logs(
    nursery: trio.Nursery, http: httpx.AsyncClient
) -> None:
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
