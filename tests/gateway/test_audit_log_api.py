"""The audit log through the HTTP interface: exactly the expected events in order, the
filters and the cursor, read-only, and still there after a restart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import httpx
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings

from .conftest import ADMIN_KEY
from .org_world import bearer, join, ok

LOG = "/v1/management/audit-log"


@asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A gateway on `settings.data_dir`, stopped (cancelled) when the block ends."""
    async with trio.open_nursery() as nursery:
        gateway: RunningGateway = await nursery.start(partial(run_gateway, settings, env={}))
        async with httpx.AsyncClient(
            base_url=gateway.url, headers=bearer(ADMIN_KEY), timeout=10
        ) as http:
            yield http
        nursery.cancel_scope.cancel()


async def script(http: httpx.AsyncClient) -> tuple[dict[str, str], list[tuple[str, Any]]]:
    """A sequence of management calls; returns the owner's headers and the expected
    (type, target email or id) of each event, oldest first."""
    owner_id, owner_token = await join(http, bearer(ADMIN_KEY), "olga@a.example", "owner")
    owner = bearer(owner_token)
    key = await ok(
        await http.post("/v1/management/api-keys", json={"name": "k"}, headers=owner), 201
    )
    await ok(await http.post(f"/v1/management/api-keys/{key['id']}/revoke", headers=owner))
    await ok(
        await http.post(
            "/v1/management/providers",
            json={"provider": "mistral", "credentials": {"api_key": "sk-test-123"}},
            headers=owner,
        ),
        201,
    )
    viewer_id, _ = await join(http, owner, "vic@a.example", "viewer")
    await ok(
        await http.patch(
            f"/v1/management/members/{viewer_id}", json={"role": "developer"}, headers=owner
        )
    )
    await ok(await http.delete(f"/v1/management/members/{viewer_id}", headers=owner))
    workspace = await ok(
        await http.post("/v1/management/workspaces", json={"name": "W2"}, headers=owner), 201
    )
    account = await ok(
        await http.post(
            "/v1/management/service-accounts", json={"name": "bot", "role": "viewer"}, headers=owner
        ),
        201,
    )
    expected = [
        ("member.invited", "olga@a.example"),
        ("member.joined", "olga@a.example"),
        ("api_key.created", key["id"]),
        ("api_key.revoked", key["id"]),
        ("provider.configured", "mistral"),
        ("member.invited", "vic@a.example"),
        ("member.joined", "vic@a.example"),
        ("member.role_changed", "vic@a.example"),
        ("member.removed", "vic@a.example"),
        ("workspace.created", workspace["id"]),
        ("service_account.created", account["id"]),
    ]
    assert owner_id
    return owner, expected


def summary(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Oldest first: (type, target email if any, else target id)."""
    return [(e["type"], e["target"]["email"] or e["target"]["id"]) for e in reversed(events)]


async def test_the_log_holds_exactly_the_scripted_events_and_survives_a_restart(
    settings: Settings,
) -> None:
    async with running(settings) as http:
        owner, expected = await script(http)
        before = await ok(await http.get(LOG, headers=owner))
        assert summary(before["events"]) == expected
        first = before["events"][-1]
        assert set(first) >= {"id", "type", "actor", "target", "timestamp", "ip_address"}
        assert first["actor"] == {"id": first["actor"]["id"], "email": None}  # the admin key
        assert first["ip_address"] == "127.0.0.1" and first["timestamp"].endswith("Z")
        newest = before["events"][0]
        assert newest["actor"]["email"] == "olga@a.example"
    async with running(settings) as http:
        after = await ok(await http.get(LOG, headers=owner))
        assert after["events"] == before["events"]


async def test_filters_and_cursor(http: httpx.AsyncClient) -> None:
    owner, expected = await script(http)
    invited = await ok(await http.get(LOG, params={"type": "member.invited"}, headers=owner))
    assert [e["target"]["email"] for e in invited["events"]] == ["vic@a.example", "olga@a.example"]
    pages: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 4}
    while True:
        page = await ok(await http.get(LOG, params=params, headers=owner))
        pages += page["events"]
        assert len(page["events"]) <= 4
        if not page["has_more"]:
            break
        params["cursor"] = page["next_cursor"]
    assert summary(pages) == expected
    assert (await ok(await http.get(LOG, params={"since": "2999-01-01"}, headers=owner)))[
        "events"
    ] == []
    since = pages[2]["timestamp"]
    recent = await ok(await http.get(LOG, params={"since": since}, headers=owner))
    assert recent["events"][-1]["id"] == pages[2]["id"]
    # The last two have no UTC equivalent: they overflowed in the store as a 500.
    edges = ({"since": "9999-12-31T23:59:59-05:00"}, {"since": "0001-01-01T00:00:00+05:00"})
    for bad in ({"limit": "0"}, {"limit": "x"}, {"since": "yesterday"}, *edges):
        response = await http.get(LOG, params=bad, headers=owner)
        assert response.status_code == 400, bad
        assert response.json()["error"]["param"] in ("limit", "since")


async def test_no_route_changes_an_event(http: httpx.AsyncClient) -> None:
    await http.post("/v1/management/api-keys", json={"name": "k"})
    events = (await ok(await http.get(LOG)))["events"]
    assert events
    for method in ("DELETE", "PATCH", "PUT", "POST"):
        assert (await http.request(method, LOG)).status_code == 405
        one = await http.request(method, f"{LOG}/{events[0]['id']}", json={})
        assert one.status_code in (404, 405)
    assert (await ok(await http.get(LOG)))["events"] == events


async def test_viewers_and_developers_cannot_read_it(http: httpx.AsyncClient) -> None:
    for role in ("developer", "viewer"):
        _, token = await join(http, bearer(ADMIN_KEY), f"{role}@a.example", role)
        response = await http.get(LOG, headers=bearer(token))
        assert response.status_code == 403


async def test_a_refused_change_writes_no_event(http: httpx.AsyncClient) -> None:
    rule = {
        "name": "r",
        "priority": 7,
        "conditions": {"models": ["gpt-4o-mini"]},
        "actions": {"route_to": "gpt-4o-mini"},
    }
    await ok(await http.post("/v1/management/routing-rules", json=rule), 201)
    clash = await http.post("/v1/management/routing-rules", json=rule | {"name": "r2"})
    assert clash.status_code == 409
    busy = await http.post("/v1/management/workspaces", json={"name": "spare"})
    assert busy.status_code == 201
    kept = await http.delete("/v1/management/workspaces/default")
    assert kept.status_code == 409
    events = (await ok(await http.get(LOG, params={"type": "routing_rule.created"})))["events"]
    assert len(events) == 1
    deleted = await ok(await http.get(LOG, params={"type": "workspace.deleted"}))
    assert deleted["events"] == []
