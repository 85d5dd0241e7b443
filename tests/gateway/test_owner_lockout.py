"""No change through the API leaves an organisation without an active owner-level
credential: an owner's key (the operator's), a key holding `admin`, an owner service
account's key, or an active owner member. The operator's key could delete or revoke
itself, shut itself out by its allowed IPs or set itself to expire, and an admin key could
drop its own `admin`: each locked the operator out. Each is now a 409 `last_owner_credential` saying
why, and the key still works afterwards; with another owner credential left, each is
allowed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.gateway.conftest import ADMIN_KEY

from .org_world import bearer, join

KEYS = "/v1/management/api-keys"


def refused(answer: httpx.Response, *words: str) -> None:
    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert error["code"] == "last_owner_credential"
    assert error["type"] == "conflict_error"
    assert "owner" in error["message"]
    for word in words:
        assert word in error["message"], error["message"]


async def my_key_id(http: httpx.AsyncClient, key: str) -> str:
    listed = (await http.get(KEYS, headers=bearer(key))).json()["data"]
    found: str = next(k["id"] for k in listed if key.endswith(k["key_hint"][-4:]))
    return found


async def still_works(http: httpx.AsyncClient, key: str) -> None:
    assert (await http.get(KEYS, headers=bearer(key))).status_code == 200


async def test_the_operators_key_cannot_remove_or_shut_out_the_last_owner_credential(
    http: httpx.AsyncClient,
) -> None:
    me = await my_key_id(http, ADMIN_KEY)
    refused(await http.delete(f"{KEYS}/{me}"), "deleted")
    refused(await http.post(f"{KEYS}/{me}/revoke"), "revoked")
    refused(await http.patch(f"{KEYS}/{me}", json={"allowed_ips": ["10.9.9.9"]}), "127.0.0.1")
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    refused(await http.patch(f"{KEYS}/{me}", json={"expires_at": soon}), "expire")
    await still_works(http, ADMIN_KEY)
    # Changes that keep it an owner it can use are fine.
    kept = await http.patch(f"{KEYS}/{me}", json={"allowed_ips": ["127.0.0.0/8"]})
    assert kept.status_code == 200, kept.text
    assert (await http.patch(f"{KEYS}/{me}", json={"allowed_ips": []})).status_code == 200


async def test_an_admin_key_left_alone_cannot_drop_its_own_admin(http: httpx.AsyncClient) -> None:
    made = await http.post(KEYS, json={"name": "second admin", "type": "admin"})
    assert made.status_code == 201, made.text
    second: dict[str, Any] = made.json()
    operator = await my_key_id(http, ADMIN_KEY)
    # Two owner credentials: the operator's key may go.
    assert (await http.delete(f"{KEYS}/{operator}")).status_code == 200
    alone = bearer(second["key"])
    drop = await http.patch(
        f"{KEYS}/{second['id']}", json={"permissions": ["chat", "management"]}, headers=alone
    )
    refused(drop, "admin")
    refused(await http.post(f"{KEYS}/{second['id']}/revoke", headers=alone))
    await still_works(http, second["key"])
    assert (await http.get(f"{KEYS}/{second['id']}", headers=alone)).json()["permissions"] == [
        "chat", "embeddings", "audio", "files", "models", "management", "admin"
    ]  # fmt: skip


async def test_an_owner_member_is_an_owner_credential_too(http: httpx.AsyncClient) -> None:
    _, owner = await join(http, bearer(ADMIN_KEY), "owner@a.example", "owner")
    me = await my_key_id(http, ADMIN_KEY)
    assert (await http.post(f"{KEYS}/{me}/revoke")).status_code == 200
    # The owner person remains, and can make the organisation a key again.
    made = await http.post(KEYS, json={"name": "again", "type": "admin"}, headers=bearer(owner))
    assert made.status_code == 201, made.text


async def test_the_last_owner_service_account_cannot_be_deleted(http: httpx.AsyncClient) -> None:
    made = await http.post(
        "/v1/management/service-accounts", json={"name": "root", "role": "owner"}
    )
    assert made.status_code == 201, made.text
    account = made.json()
    me = await my_key_id(http, ADMIN_KEY)
    assert (await http.delete(f"{KEYS}/{me}")).status_code == 200
    robot = bearer(account["api_key"])
    refused(await http.delete(f"/v1/management/service-accounts/{account['id']}", headers=robot))
    await still_works(http, account["api_key"])
