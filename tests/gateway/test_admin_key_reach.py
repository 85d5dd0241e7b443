"""An admin key made through the API reaches its organisation, as the operator's key does
(the spec: `gw_admin_` keys have full management access), so a workspace it creates it can
read, give members and make keys in. It created workspaces and then answered 404 for them.
A credential whose reach is fixed (a managing key of one workspace, a service account of
listed workspaces) may not create a workspace it could not see: never a 201 for something
the caller can no longer reach.
"""

from __future__ import annotations

from typing import Any

import httpx

from .org_world import bearer, ok

W = "/v1/management/workspaces"


async def test_an_admin_key_uses_the_workspaces_it_creates(http: httpx.AsyncClient) -> None:
    made = await ok(
        await http.post("/v1/management/api-keys", json={"name": "ops", "type": "admin"}), 201
    )
    admin = bearer(made["key"])
    ws = (await ok(await http.post(W, json={"name": "Research"}, headers=admin), 201))["id"]
    assert (await ok(await http.get(f"{W}/{ws}", headers=admin)))["name"] == "Research"
    listed = await ok(await http.get(W, headers=admin))
    assert {"default", ws} <= {w["id"] for w in listed["data"]}
    there = bearer(made["key"], **{"x-workspace-id": ws})
    member = await ok(
        await http.post(
            "/v1/management/members",
            json={"email": "r@research.example", "role": "developer", "workspaces": [ws]},
            headers=admin,
        ),
        201,
    )
    assert member["workspaces"] == [ws]
    key = await ok(
        await http.post(
            "/v1/management/api-keys", json={"name": "lab", "type": "prod"}, headers=there
        ),
        201,
    )
    keys_there = await ok(await http.get("/v1/management/api-keys", headers=there))
    assert [k["id"] for k in keys_there["data"]] == [key["id"]]
    # Its own requests still act in its home workspace unless it names another.
    home = await ok(await http.get("/v1/management/api-keys", headers=admin))
    assert made["id"] in [k["id"] for k in home["data"]]


async def test_a_credential_of_fixed_reach_cannot_create_a_workspace(
    http: httpx.AsyncClient,
) -> None:
    manager: dict[str, Any] = await ok(
        await http.post(
            "/v1/management/api-keys",
            json={"name": "manager", "type": "prod", "permissions": ["chat", "management"]},
        ),
        201,
    )
    account = await ok(
        await http.post(
            "/v1/management/service-accounts",
            json={"name": "infra", "role": "admin", "workspaces": ["default"]},
        ),
        201,
    )
    for key in (manager["key"], account["api_key"]):
        before = await ok(await http.get(W))
        refused = await http.post(W, json={"name": "Lost"}, headers=bearer(key))
        assert refused.status_code == 403, refused.text
        error = refused.json()["error"]
        assert error["type"] == "permission_error" and "reach" in error["message"]
        assert await ok(await http.get(W)) == before  # nothing was created
