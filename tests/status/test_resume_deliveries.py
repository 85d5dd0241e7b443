"""Deliveries a stop cut short are resumed when the gateway starts again, within their
retry window; those that cannot be made any more are marked failed with the reason."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import httpx
import sqlite_utils
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.kernels.webhooks.notify import pending
from gateway.platform.config import Settings
from store import webhooks as webhook_store
from store.db import open_database
from tests.gateway.conftest import ADMIN_KEY
from tests.status.receivers import HANG, WebhookReceiver
from tests.status.test_incidents_api import check_signed, next_request, subscribe

T = TypeVar("T")


@asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A gateway on `settings` for the block, stopped (gracefully) when it ends."""
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        gateway: RunningGateway = await nursery.start(
            partial(run_gateway, settings, env={}, shutdown_trigger=stop.wait)
        )
        headers = {"authorization": f"Bearer {ADMIN_KEY}"}
        async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=10) as http:
            yield http
        stop.set()


def stored(settings: Settings, read: Callable[[sqlite_utils.Database], T]) -> T:
    """Read or write the store of a stopped gateway."""
    database = open_database(settings.data_dir)
    try:
        return database.run_sync(read)
    finally:
        database.close()


def logged(hook_id: str, body: bytes, created_at: datetime) -> webhook_store.DeliveryRecord:
    return pending(
        workspace_id="default",
        source_kind="status_webhook",
        source_id=hook_id,
        url="http://127.0.0.1:9/hook",
        event="incident.created",
        body=body,
        now=created_at,
    )


async def test_a_pending_delivery_is_resumed_after_a_restart(
    settings: Settings, receiver: WebhookReceiver
) -> None:
    receiver.statuses.append(HANG)  # the first attempt is still waiting when we stop
    async with running(settings) as http:
        hook = await subscribe(http, receiver.url(), ["incident.created"])
        body = {"title": "Elevated errors", "severity": "minor"}
        incident = (await http.post("/v1/management/incidents", json=body)).json()
        first = await next_request(receiver)
    log = stored(settings, lambda d: webhook_store.list_deliveries(d, hook["id"], "default"))
    assert [(d.status, d.attempts) for d in log] == [("pending", 0)]

    # Two more pending deliveries that can no longer be made.
    old = datetime.now(UTC) - timedelta(seconds=settings.webhook_retry_window_s + 60)
    stale = logged(hook["id"], b"{}", old)
    orphan = logged("whk_gone", b"{}", datetime.now(UTC))
    stored(settings, lambda d: [webhook_store.insert_delivery(d, r) for r in (stale, orphan)])

    async with running(settings) as http:
        again = await next_request(receiver)
        assert again.headers["x-service-delivery"] == first.headers["x-service-delivery"]
        assert check_signed(again, hook["secret"])["incident"]["id"] == incident["id"]
        with trio.fail_after(10):
            while True:
                url = f"/v1/status/webhooks/{hook['id']}/deliveries"
                entries: list[dict[str, Any]] = (await http.get(url)).json()["data"]
                statuses = {d["id"]: (d["status"], d["attempts"]) for d in entries}
                if statuses[log[0].id][0] == "delivered":
                    break
                await trio.sleep(0.01)  # the worker logs the attempt after the answer
    assert statuses == {log[0].id: ("delivered", 1), stale.id: ("failed", 0)}
    reasons = stored(
        settings,
        lambda d: {
            r.id: r.last_error
            for source in (hook["id"], "whk_gone")
            for r in webhook_store.list_deliveries(d, source, "default")
        },
    )
    assert reasons[stale.id] == "retry window ended while the gateway was stopped"
    assert reasons[orphan.id] == "its subscription or alert was deleted"
    assert receiver.requests.statistics().current_buffer_used == 0  # nothing else was sent


async def test_a_pending_agent_alert_delivery_is_resumed_not_failed(
    settings: Settings, receiver: WebhookReceiver
) -> None:
    """Agent limit warnings share the delivery log (`source_kind` `alert`), but the resume
    looked their secret up among the usage alerts only: every pending one was marked
    failed at the next start as if its alert had been deleted."""
    async with running(settings) as http:
        agent = (await http.post("/v1/mcp/agents", json={"name": "watched"})).json()
        alert = await http.post(
            f"/v1/mcp/agents/{agent['id']}/alerts",
            json={
                "type": "limit_warning",
                "thresholds": {"cost_daily": [0.5]},
                "webhook_url": receiver.url(),
            },
        )
        assert alert.status_code == 201, alert.text
    warning = pending(
        workspace_id="default",
        source_kind="alert",
        source_id=alert.json()["id"],
        url=receiver.url(),
        event="limit_warning",
        body=b'{"event": "limit_warning"}',
        now=datetime.now(UTC),
    )
    stored(settings, lambda d: webhook_store.insert_delivery(d, warning))
    async with running(settings):
        again = await next_request(receiver)
    assert again.headers["x-service-delivery"] == warning.id
    assert check_signed(again, alert.json()["secret"]) == {"event": "limit_warning"}
