"""Organisations, members, user tokens and service accounts through the HTTP interface."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from store import columns

from .conftest import ADMIN_KEY
from .org_world import PASSWORD, World, bearer, build_world, join, log_in, ok


@pytest.fixture
async def world(http: httpx.AsyncClient) -> World:
    return await build_world(http, ADMIN_KEY)


async def test_organizations_list_every_membership_with_its_role(
    http: httpx.AsyncClient, world: World
) -> None:
    listed = await ok(
        await http.get("/v1/management/organizations", headers=bearer(world.org_b_token))
    )
    assert [(o["name"], o["role"]) for o in listed["organizations"]] == [
        ("Default", "developer"),
        ("B corp", "owner"),
    ]
    refused = await http.get("/v1/management/organizations", headers=world.admin)
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"


async def test_a_user_token_acts_within_its_role(http: httpx.AsyncClient, world: World) -> None:
    developer = world.as_role("developer")
    listed = await ok(await http.get("/v1/management/api-keys", headers=developer))
    assert "bootstrap-admin" in [k["name"] for k in listed["data"]]
    refused = await http.post("/v1/management/api-keys", json={"name": "x"}, headers=developer)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "insufficient_permissions"
    made = await ok(
        await http.post(
            "/v1/management/api-keys", json={"name": "y"}, headers=world.as_role("admin")
        ),
        201,
    )
    assert made["key"].startswith("gw_prod_")


async def test_user_tokens_do_not_call_models(gateway: RunningGateway, world: World) -> None:
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=world.tokens["owner"], max_retries=0
    ) as c:
        with pytest.raises(openai.AuthenticationError):
            await c.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
            )


async def test_service_account_key_acts_with_its_role_in_its_workspaces(
    gateway: RunningGateway, http: httpx.AsyncClient, world: World
) -> None:
    key = world.account["api_key"]
    assert world.account["role"] == "developer" and world.account["name"] == "ci"
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0) as c:
        answer = await c.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
    assert answer.choices[0].message.content
    assert (await http.get("/v1/management/api-keys", headers=bearer(key))).status_code == 200
    refused = await http.post("/v1/management/api-keys", json={"name": "z"}, headers=bearer(key))
    assert refused.status_code == 403
    elsewhere = await http.get(
        "/v1/management/api-keys",
        headers=bearer(key, **{"x-workspace-id": world.second_workspace}),
    )
    assert elsewhere.status_code == 404
    assert elsewhere.json()["error"]["code"] == "workspace_not_found"

    listed = await ok(await http.get("/v1/management/service-accounts", headers=world.admin))
    assert [a["id"] for a in listed["data"]] == [world.account["id"]]
    assert "api_key" not in listed["data"][0]
    gone = await ok(
        await http.delete(
            f"/v1/management/service-accounts/{world.account['id']}", headers=world.admin
        )
    )
    assert gone["deleted"] is True
    assert (await http.get("/v1/management/api-keys", headers=bearer(key))).status_code == 401


async def test_a_role_above_the_callers_cannot_be_handed_out(
    http: httpx.AsyncClient, world: World
) -> None:
    admin = world.as_role("admin")
    for path, body in (
        ("/v1/management/members", {"email": "x@a.example", "role": "owner"}),
        ("/v1/management/service-accounts", {"name": "boss", "role": "owner"}),
    ):
        refused = await http.post(path, json=body, headers=admin)
        assert refused.status_code == 403, refused.text
    demote_owner = await http.patch(
        f"/v1/management/members/{world.member_ids['owner']}",
        json={"role": "viewer"},
        headers=admin,
    )
    assert demote_owner.status_code == 403


async def test_the_last_owner_stays(http: httpx.AsyncClient, world: World) -> None:
    owner = world.as_role("owner")
    me = world.member_ids["owner"]
    for response in (
        await http.patch(f"/v1/management/members/{me}", json={"role": "admin"}, headers=owner),
        await http.delete(f"/v1/management/members/{me}", headers=owner),
    ):
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "last_owner"
    promoted = await ok(
        await http.patch(
            f"/v1/management/members/{world.member_ids['admin']}",
            json={"role": "owner"},
            headers=owner,
        )
    )
    assert promoted["role"] == "owner"
    await ok(
        await http.patch(f"/v1/management/members/{me}", json={"role": "admin"}, headers=owner)
    )


async def test_a_removed_member_loses_access(http: httpx.AsyncClient, world: World) -> None:
    viewer = world.as_role("viewer")
    assert (await http.get("/v1/management/workspaces", headers=viewer)).status_code == 200
    changed = await ok(
        await http.patch(
            f"/v1/management/members/{world.member_ids['viewer']}",
            json={"role": "developer"},
            headers=world.as_role("admin"),
        )
    )
    assert changed["role"] == "developer"
    await ok(
        await http.delete(
            f"/v1/management/members/{world.member_ids['viewer']}", headers=world.as_role("admin")
        )
    )
    assert (await http.get("/v1/management/workspaces", headers=viewer)).status_code == 401
    listed = await ok(await http.get("/v1/management/members", headers=world.admin))
    assert "viewer@a.example" not in [m["email"] for m in listed["data"]]


async def test_invitations_are_one_time_and_expire(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    invited = await ok(
        await http.post(
            "/v1/management/members", json={"email": "Carol@A.example", "role": "viewer"}
        ),
        201,
    )
    assert invited["email"] == "carol@a.example" and invited["status"] == "invited"
    body = {"token": invited["invitation_token"], "password": PASSWORD}
    await ok(await http.post("/v1/auth/invitations/accept", json=body))
    again = await http.post("/v1/auth/invitations/accept", json=body)
    assert again.status_code == 401
    assert again.json()["error"]["code"] == "invalid_invitation"

    late = await ok(
        await http.post(
            "/v1/management/members", json={"email": "dan@a.example", "role": "viewer"}
        ),
        201,
    )
    past = columns.to_iso(datetime.now(UTC) - timedelta(seconds=1))
    await gateway.state.db.run(
        lambda d: d.execute(
            "UPDATE members SET invitation_expires_at = ? WHERE id = ?", [past, late["id"]]
        )
    )
    expired = await http.post(
        "/v1/auth/invitations/accept",
        json={"token": late["invitation_token"], "password": PASSWORD},
    )
    assert expired.status_code == 401
    assert expired.json() == again.json()
    short = await http.post(
        "/v1/auth/invitations/accept", json={"token": "gwi_x", "password": "short"}
    )
    assert short.status_code == 400 and short.json()["error"]["param"] == "password"


async def test_failed_logins_say_nothing_and_are_throttled(http: httpx.AsyncClient) -> None:
    await join(http, {"authorization": f"Bearer {ADMIN_KEY}"}, "erin@a.example", "viewer")
    wrong = await http.post(
        "/v1/auth/token", json={"email": "erin@a.example", "password": "not the password"}
    )
    unknown = await http.post(
        "/v1/auth/token", json={"email": "nobody@a.example", "password": "not the password"}
    )
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json()
    for _ in range(2):
        await http.post("/v1/auth/token", json={"email": "erin@a.example", "password": "nope!"})
    throttled = await http.post(
        "/v1/auth/token", json={"email": "erin@a.example", "password": PASSWORD}
    )
    assert throttled.status_code == 429
    assert throttled.json()["error"]["code"] == "too_many_login_attempts"
    assert int(throttled.headers["retry-after"]) >= 1


async def test_user_tokens_can_be_revoked(http: httpx.AsyncClient) -> None:
    _, token = await join(http, {"authorization": f"Bearer {ADMIN_KEY}"}, "fay@a.example", "admin")
    assert (await http.get("/v1/management/members", headers=bearer(token))).status_code == 200
    await ok(await http.post("/v1/auth/token/revoke", headers=bearer(token)))
    assert (await http.get("/v1/management/members", headers=bearer(token))).status_code == 401
    again = await http.post("/v1/auth/token/revoke", headers=bearer(token))
    assert again.status_code == 401
    fresh = await log_in(http, "fay@a.example")
    assert (await http.get("/v1/management/members", headers=bearer(fresh))).status_code == 200


async def test_workspaces_list_read_update_and_delete(
    http: httpx.AsyncClient, world: World
) -> None:
    owner = world.as_role("owner")
    made = await ok(
        await http.post("/v1/management/workspaces", json={"name": "Third"}, headers=owner), 201
    )
    listed = await ok(await http.get("/v1/management/workspaces", headers=owner))
    assert [w["name"] for w in listed["data"]] == ["Default", "Second", "Third"]
    developer = await ok(
        await http.get("/v1/management/workspaces", headers=world.as_role("developer"))
    )
    assert [w["id"] for w in developer["data"]] == ["default"]
    renamed = await ok(
        await http.patch(
            f"/v1/management/workspaces/{made['id']}", json={"description": "d"}, headers=owner
        )
    )
    assert renamed["name"] == "Third" and renamed["description"] == "d"
    busy = await http.delete(f"/v1/management/workspaces/{world.second_workspace}", headers=owner)
    assert busy.status_code == 409
    assert busy.json()["error"]["holds"]["api_keys"] == 1
    await ok(await http.delete(f"/v1/management/workspaces/{made['id']}", headers=owner))
    gone = await http.get(f"/v1/management/workspaces/{made['id']}", headers=owner)
    assert gone.status_code == 404
    bad = await http.post("/v1/management/workspaces", json={"name": ""}, headers=owner)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "name"


async def test_secrets_are_never_stored_in_clear(
    gateway: RunningGateway, http: httpx.AsyncClient, world: World
) -> None:
    invited = await ok(
        await http.post(
            "/v1/management/members", json={"email": "gus@a.example", "role": "viewer"}
        ),
        201,
    )
    secrets = [
        PASSWORD,
        invited["invitation_token"],
        world.tokens["owner"],
        world.account["api_key"],
        world.other_key,
    ]

    def dump(d: object) -> str:
        import sqlite3

        conn = d.conn  # type: ignore[attr-defined]
        assert isinstance(conn, sqlite3.Connection)
        return "\n".join(conn.iterdump())

    text = await gateway.state.db.run(dump)
    for secret in secrets:
        assert secret not in text
    assert "$argon2id$" in text


async def test_an_expired_user_token_is_refused(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    _, token = await join(http, {"authorization": f"Bearer {ADMIN_KEY}"}, "hal@a.example", "admin")
    assert (await http.get("/v1/management/members", headers=bearer(token))).status_code == 200
    past = columns.to_iso(datetime.now(UTC) - timedelta(seconds=1))
    await gateway.state.db.run(lambda d: d.execute("UPDATE user_tokens SET expires_at = ?", [past]))
    refused = await http.get("/v1/management/members", headers=bearer(token))
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"


async def test_the_operators_key_uses_the_workspaces_it_creates(http: httpx.AsyncClient) -> None:
    """The admin key made at start owns its organisation: a workspace it creates can at
    once be given members and service accounts, and is listed; its own requests still act
    in its home workspace unless `X-Workspace-ID` names another."""
    created = await ok(
        await http.post("/v1/management/workspaces", json={"name": "Search", "description": "t"}),
        201,
    )
    ws = created["id"]
    listed = await ok(await http.get("/v1/management/workspaces"))
    assert ws in [w["id"] for w in listed["data"]]
    assert (await ok(await http.get(f"/v1/management/workspaces/{ws}")))["name"] == "Search"
    member = await ok(
        await http.post(
            "/v1/management/members",
            json={"email": "dev@search.example", "role": "developer", "workspaces": [ws]},
        ),
        201,
    )
    assert member["workspaces"] == [ws]
    account = await ok(
        await http.post(
            "/v1/management/service-accounts",
            json={"name": "indexer", "role": "developer", "workspaces": [ws]},
        ),
        201,
    )
    assert {"id", "name", "api_key", "role"} <= set(account)
    robot = bearer(account["api_key"])
    keys_there = await ok(await http.get("/v1/management/api-keys", headers=robot))
    assert "bootstrap-admin" not in [k["name"] for k in keys_there["data"]]
    events = await ok(await http.get("/v1/management/audit-log"))
    assert {"member.invited", "service_account.created"} <= {e["type"] for e in events["events"]}
    home = await ok(await http.get("/v1/management/api-keys"))
    assert "bootstrap-admin" in [k["name"] for k in home["data"]]
    chosen = await ok(await http.get("/v1/management/api-keys", headers={"x-workspace-id": ws}))
    assert "bootstrap-admin" not in [k["name"] for k in chosen["data"]]


async def test_a_managing_key_stays_in_its_workspace(http: httpx.AsyncClient, world: World) -> None:
    """A key of one workspace holding `management` (not `admin`, whose keys reach the
    organisation: tests/gateway/test_admin_key_reach.py) neither lists nor names another
    workspace."""
    other = bearer(world.other_key)
    listed = await ok(await http.get("/v1/management/workspaces", headers=other))
    assert [w["id"] for w in listed["data"]] == [world.second_workspace]
    refused = await http.post(
        "/v1/management/service-accounts",
        json={"name": "escape", "role": "developer", "workspaces": ["default"]},
        headers=other,
    )
    assert refused.status_code == 400
