"""The API-key management endpoints, through HTTP, with the keys they make put to use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from store import audit, keys, workspaces
from store.secrets import KeyKind, new_api_key
from store.workspaces import WorkspaceRecord
from tests.gateway.conftest import ADMIN_KEY

KEYS = "/v1/management/api-keys"
CHAT_BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hello there"}]}
UNKNOWN_ID = "key_000000000000000000000000"


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code
    assert error["message"] and error["type"] and error["doc_url"]
    return error


def parse_time(value: str) -> datetime:
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert moment.tzinfo is not None
    return moment


async def create_key(http: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await http.post(KEYS, json={"name": "test key", **body})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def as_client(gateway: RunningGateway, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=10
    )


async def chat_status(gateway: RunningGateway, key: str) -> int:
    async with as_client(gateway, key) as raw:
        return (await raw.post("/v1/chat/completions", json=CHAT_BODY)).status_code


# -- create --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "prefix", "has_management"),
    [("dev", "gw_dev_", False), ("prod", "gw_prod_", False), ("admin", "gw_admin_", True)],
)
async def test_create_returns_the_full_key_once_with_the_type_prefix(
    gateway: RunningGateway, http: httpx.AsyncClient, kind: str, prefix: str, has_management: bool
) -> None:
    created = await create_key(http, name="  ci runner  ", type=kind)
    assert created["key"].startswith(prefix)
    assert len(created["key"]) > len(prefix) + 30
    assert created["prefix"] == prefix
    assert created["name"] == "ci runner"
    assert created["status"] == "active"
    assert created["id"].startswith("key_")
    assert parse_time(created["created_at"])
    assert created["key_hint"] == f"{prefix}...{created['key'][-4:]}"
    assert ("management" in created["permissions"]) is has_management
    assert await chat_status(gateway, created["key"]) == 200
    # Never again: neither the read nor the list shows it.
    read = await http.get(f"{KEYS}/{created['id']}")
    assert "key" not in read.json()
    assert created["key"] not in read.text


async def test_create_defaults(http: httpx.AsyncClient) -> None:
    created = await create_key(http)
    assert created["type"] == "prod"
    assert created["prefix"] == "gw_prod_"
    assert set(created["permissions"]) == {"chat", "embeddings", "audio", "files", "models"}
    assert created["expires_at"] is None
    assert created["revoked_at"] is None
    assert created["allowed_models"] == []
    assert created["allowed_ips"] == []
    assert set(created["rate_limits"]) >= {"rpm", "tpm", "daily_requests"}


async def test_create_keeps_the_given_fields(http: httpx.AsyncClient) -> None:
    expires = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    created = await create_key(
        http,
        name="analytics",
        type="dev",
        permissions=["chat", "models"],
        rate_limits={"rpm": 60, "tpm": 10000, "daily_requests": 500},
        expires_at=expires.isoformat().replace("+00:00", "Z"),
        allowed_models=["gpt-4o-mini"],
        allowed_ips=["10.0.0.0/8"],
    )
    assert created["permissions"] == ["chat", "models"]
    assert created["rate_limits"]["rpm"] == 60
    assert created["rate_limits"]["tpm"] == 10000
    assert created["rate_limits"]["daily_requests"] == 500
    assert parse_time(created["expires_at"]) == expires
    assert created["allowed_models"] == ["gpt-4o-mini"]
    assert created["allowed_ips"] == ["10.0.0.0/8"]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        pytest.param({}, "name", id="name-missing"),
        pytest.param({"name": ""}, "name", id="name-empty"),
        pytest.param({"name": "   "}, "name", id="name-blank"),
        pytest.param({"name": 42}, "name", id="name-number"),
        pytest.param({"name": "x" * 201}, "name", id="name-too-long"),
        pytest.param({"name": "k", "type": "tenant"}, "type", id="type-tenant"),
        pytest.param({"name": "k", "type": "root"}, "type", id="type-unknown"),
        pytest.param({"name": "k", "permissions": "chat"}, "permissions", id="perm-string"),
        pytest.param(
            {"name": "k", "permissions": ["chat", "sudo"]}, "permissions[1]", id="perm-bad"
        ),
        pytest.param({"name": "k", "permissions": [1]}, "permissions[0]", id="perm-number"),
        pytest.param({"name": "k", "rate_limits": 5}, "rate_limits", id="limits-number"),
        pytest.param(
            {"name": "k", "rate_limits": {"rpd": 5}}, "rate_limits.rpd", id="limits-unknown"
        ),
        pytest.param({"name": "k", "rate_limits": {"rpm": -1}}, "rate_limits.rpm", id="rpm-neg"),
        pytest.param({"name": "k", "rate_limits": {"tpm": 1.5}}, "rate_limits.tpm", id="tpm-float"),
        pytest.param({"name": "k", "rate_limits": {"rpm": True}}, "rate_limits.rpm", id="rpm-bool"),
        pytest.param({"name": "k", "expires_at": "tomorrow"}, "expires_at", id="expiry-text"),
        pytest.param({"name": "k", "expires_at": 1893456000}, "expires_at", id="expiry-number"),
        pytest.param({"name": "k", "allowed_ips": ["localhost"]}, "allowed_ips[0]", id="ip-name"),
        pytest.param({"name": "k", "allowed_ips": ["10.0.0.0/33"]}, "allowed_ips[0]", id="ip-cidr"),
        pytest.param({"name": "k", "allowed_ips": "127.0.0.1"}, "allowed_ips", id="ip-string"),
        pytest.param(
            {"name": "k", "allowed_models": "gpt-4o"}, "allowed_models", id="models-string"
        ),
        pytest.param({"name": "k", "allowed_models": [""]}, "allowed_models[0]", id="models-empty"),
    ],
)
async def test_create_rejects_invalid_bodies_naming_the_parameter(
    gateway: RunningGateway, http: httpx.AsyncClient, body: dict[str, Any], param: str
) -> None:
    before = (await http.get(KEYS)).json()["data"]
    error = assert_error(await http.post(KEYS, json=body), 400, "invalid_request")
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert (await http.get(KEYS)).json()["data"] == before


@pytest.mark.parametrize(
    "moment", ["2001-01-01T00:00:00Z", "9999-12-31T23:59:59-05:00"], ids=["past", "beyond-9999"]
)
async def test_an_expiry_the_key_cannot_have_is_invalid_expiry(
    http: httpx.AsyncClient, moment: str
) -> None:
    """A well-formed timestamp in the past (or past year 9999 in UTC) is a refusal of its
    meaning, with a code of its own: the document cannot say "in the future"."""
    before = (await http.get(KEYS)).json()["data"]
    refused = await http.post(KEYS, json={"name": "k", "expires_at": moment})
    assert assert_error(refused, 400, "invalid_expiry")["param"] == "expires_at"
    assert (await http.get(KEYS)).json()["data"] == before
    created = await create_key(http)
    changed = await http.patch(f"{KEYS}/{created['id']}", json={"expires_at": moment})
    assert assert_error(changed, 400, "invalid_expiry")["param"] == "expires_at"
    assert (await http.get(f"{KEYS}/{created['id']}")).json()["expires_at"] is None


async def test_an_unknown_rate_limit_names_the_known_ones(http: httpx.AsyncClient) -> None:
    """`daily` is what the rate-limits view calls it; the key's field is `daily_requests`."""
    refused = await http.post(KEYS, json={"name": "k", "rate_limits": {"daily": 10}})
    error = assert_error(refused, 400, "invalid_request")
    assert "daily_requests" in error["message"] and error["param"] == "rate_limits.daily"


async def test_management_key_without_admin_cannot_create_admin_keys(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    manager = await create_key(http, permissions=["chat", "models", "management"])
    async with as_client(gateway, manager["key"]) as as_manager:
        error = assert_error(
            await as_manager.post(KEYS, json={"name": "escalate", "type": "admin"}),
            403,
            "insufficient_permissions",
        )
        assert error["type"] == "permission_error"
        error = assert_error(
            await as_manager.post(KEYS, json={"name": "escalate", "permissions": ["admin"]}),
            403,
            "insufficient_permissions",
        )
        # What it holds it may hand out.
        allowed = await as_manager.post(KEYS, json={"name": "ok", "permissions": ["chat"]})
        assert allowed.status_code == 201, allowed.text
    names = [k["name"] for k in (await http.get(KEYS)).json()["data"]]
    assert "escalate" not in names
    assert "ok" in names


async def test_a_management_only_key_makes_ordinary_keys(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """Management permission is what the spec asks of a key-managing caller: a key holding
    only `management` makes a key with the defaults, which can then chat."""
    manager = await create_key(http, permissions=["management"])
    async with as_client(gateway, manager["key"]) as as_manager:
        made = await as_manager.post(KEYS, json={"name": "service"})
        assert made.status_code == 201, made.text
        assert made.json()["permissions"] == ["chat", "embeddings", "audio", "files", "models"]
        refused = await as_manager.post(KEYS, json={"name": "x", "permissions": ["admin"]})
        assert_error(refused, 403, "insufficient_permissions")
    assert await chat_status(gateway, made.json()["key"]) == 200


async def test_management_key_cannot_take_over_an_admin_key(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """Rotating an admin key would hand its caller a fresh admin key: refused."""
    admin = await create_key(http, name="ops admin", type="admin")
    manager = await create_key(http, permissions=["chat", "models", "management"])
    async with as_client(gateway, manager["key"]) as as_manager:
        rotated = await as_manager.post(f"{KEYS}/{admin['id']}/rotate", json={})
        assert_error(rotated, 403, "insufficient_permissions")
        assert "new_key" not in rotated.text
        path = f"{KEYS}/{admin['id']}"
        for response in (
            await as_manager.patch(path, json={"allowed_ips": ["203.0.113.1"]}),
            await as_manager.post(f"{path}/revoke"),
            await as_manager.delete(path),
        ):
            assert_error(response, 403, "insufficient_permissions")
        # Reading is fine, and so is changing a key within its own permissions.
        assert (await as_manager.get(path)).status_code == 200
        peer = await as_manager.post(KEYS, json={"name": "peer", "permissions": ["chat"]})
        assert (await as_manager.post(f"{KEYS}/{peer.json()['id']}/rotate")).status_code == 200
    assert await chat_status(gateway, admin["key"]) == 200
    read = (await http.get(f"{KEYS}/{admin['id']}")).json()
    assert read["allowed_ips"] == []
    assert read["expires_at"] is None
    listed = (await http.get(KEYS)).json()["data"]
    assert [k["name"] for k in listed].count("ops admin") == 1


# -- list and read -------------------------------------------------------------------------


async def test_list_never_shows_keys_but_shows_hints(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    made = [await create_key(http, name=f"k{i}", type=t) for i, t in enumerate(("dev", "prod"))]
    response = await http.get(KEYS)
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "list"
    by_id = {k["id"]: k for k in body["data"]}
    assert {m["id"] for m in made} <= set(by_id)
    for entry in body["data"]:
        assert "key" not in entry
        assert "usage" not in entry
    for m in made:
        assert by_id[m["id"]]["key_hint"] == m["key_hint"]
        assert m["key"] not in response.text
    assert ADMIN_KEY not in response.text


async def test_read_shows_today_usage_of_the_key(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http)
    fresh = (await http.get(f"{KEYS}/{created['id']}")).json()
    assert fresh["usage"] == {"requests_today": 0, "tokens_today": 0, "cost_today_usd": 0}
    tokens, cost = 0, 0.0
    async with as_client(gateway, created["key"]) as raw:
        for n in range(3):
            prompt = [{"role": "user", "content": f"Question {n}: what is {n} + {n}?"}]
            answer = await raw.post("/v1/chat/completions", json=CHAT_BODY | {"messages": prompt})
            assert answer.status_code == 200, answer.text
            tokens += answer.json()["usage"]["total_tokens"]
            cost += answer.json()["service"]["cost"]["total"]
    # Another key's traffic is not counted.
    assert await chat_status(gateway, ADMIN_KEY) == 200
    usage = (await http.get(f"{KEYS}/{created['id']}")).json()["usage"]
    assert usage["requests_today"] == 3
    assert usage["tokens_today"] == tokens > 0
    assert usage["cost_today_usd"] == pytest.approx(cost) and cost > 0


async def test_a_key_read_right_after_a_request_says_when_it_was_used(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """The last-used worker writes every few seconds; reads include what it has not yet."""
    created = await create_key(http)
    assert (await http.get(f"{KEYS}/{created['id']}")).json()["last_used_at"] is None
    before = datetime.now(UTC)
    assert await chat_status(gateway, created["key"]) == 200
    read = (await http.get(f"{KEYS}/{created['id']}")).json()
    assert parse_time(read["last_used_at"]) >= before
    listed = {k["id"]: k for k in (await http.get(KEYS)).json()["data"]}
    assert listed[created["id"]]["last_used_at"] == read["last_used_at"]


async def test_unknown_ids_give_404_key_not_found(http: httpx.AsyncClient) -> None:
    for response in (
        await http.get(f"{KEYS}/{UNKNOWN_ID}"),
        await http.patch(f"{KEYS}/{UNKNOWN_ID}", json={"name": "x"}),
        await http.post(f"{KEYS}/{UNKNOWN_ID}/rotate", json={}),
        await http.post(f"{KEYS}/{UNKNOWN_ID}/revoke"),
        await http.delete(f"{KEYS}/{UNKNOWN_ID}"),
    ):
        error = assert_error(response, 404, "key_not_found")
        assert error["type"] == "not_found_error"


# -- patch ---------------------------------------------------------------------------------


async def test_patch_renames_and_merges_rate_limits(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http, rate_limits={"rpm": 100, "tpm": 5000})
    response = await http.patch(
        f"{KEYS}/{created['id']}", json={"name": "renamed", "rate_limits": {"rpm": 20}}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"id", "name", "rate_limits", "updated_at"}
    assert body["id"] == created["id"]
    assert body["name"] == "renamed"
    assert body["rate_limits"]["rpm"] == 20
    assert body["rate_limits"]["tpm"] == 5000
    assert parse_time(body["updated_at"]) >= parse_time(created["updated_at"])
    read = (await http.get(f"{KEYS}/{created['id']}")).json()
    assert read["name"] == "renamed"
    assert read["rate_limits"]["rpm"] == 20
    assert read["rate_limits"]["tpm"] == 5000
    # The key still works after the patch.
    assert await chat_status(gateway, created["key"]) == 200


async def test_patch_null_limit_clears_only_that_limit(http: httpx.AsyncClient) -> None:
    created = await create_key(http, rate_limits={"rpm": 100, "tpm": 5000})
    response = await http.patch(f"{KEYS}/{created['id']}", json={"rate_limits": {"rpm": None}})
    assert response.status_code == 200, response.text
    assert response.json()["rate_limits"]["rpm"] is None
    assert response.json()["rate_limits"]["tpm"] == 5000


@pytest.mark.parametrize(
    ("body", "param"),
    [
        pytest.param({}, None, id="empty"),
        pytest.param({"colour": "blue"}, "colour", id="unknown-field"),
        pytest.param({"name": None}, "name", id="null-name"),
        pytest.param({"permissions": None}, "permissions", id="null-permissions"),
        pytest.param({"name": ""}, "name", id="empty-name"),
        pytest.param({"rate_limits": {"rpm": "fast"}}, "rate_limits.rpm", id="bad-limit"),
    ],
)
async def test_patch_rejects_bad_bodies(
    http: httpx.AsyncClient, body: dict[str, Any], param: str | None
) -> None:
    created = await create_key(http)
    error = assert_error(
        await http.patch(f"{KEYS}/{created['id']}", json=body), 400, "invalid_request"
    )
    assert error["param"] == param
    read = (await http.get(f"{KEYS}/{created['id']}")).json()
    assert read["name"] == created["name"]
    assert read["updated_at"] == created["updated_at"]


# -- rotate --------------------------------------------------------------------------------


async def test_rotate_new_key_works_at_once_and_old_key_until_grace_ends(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http, type="dev")
    before = datetime.now(UTC)
    response = await http.post(f"{KEYS}/{created['id']}/rotate", json={"grace_period_hours": 2})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == created["id"]
    assert body["new_key"].startswith("gw_dev_")
    assert body["new_key"] != created["key"]
    rotated_at = parse_time(body["rotated_at"])
    assert rotated_at >= before - timedelta(seconds=1)
    grace_end = parse_time(body["old_key_expires_at"])
    assert abs(grace_end - (rotated_at + timedelta(hours=2))) < timedelta(seconds=2)
    assert await chat_status(gateway, body["new_key"]) == 200
    assert await chat_status(gateway, created["key"]) == 200
    old = (await http.get(f"{KEYS}/{created['id']}")).json()
    assert parse_time(old["expires_at"]) == grace_end


async def test_rotate_defaults_to_a_24_hour_grace(http: httpx.AsyncClient) -> None:
    created = await create_key(http)
    response = await http.post(f"{KEYS}/{created['id']}/rotate")
    assert response.status_code == 200, response.text
    body = response.json()
    grace = parse_time(body["old_key_expires_at"]) - parse_time(body["rotated_at"])
    assert abs(grace - timedelta(hours=24)) < timedelta(seconds=2)


async def test_rotate_without_grace_stops_the_old_key_at_once(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http)
    response = await http.post(f"{KEYS}/{created['id']}/rotate", json={"grace_period_hours": 0})
    assert response.status_code == 200, response.text
    async with as_client(gateway, created["key"]) as old:
        refused = await old.post("/v1/chat/completions", json=CHAT_BODY)
    error = assert_error(refused, 401, "invalid_api_key")
    assert error["type"] == "authentication_error"
    assert await chat_status(gateway, response.json()["new_key"]) == 200


@pytest.mark.parametrize("grace", [-1, "2", 1.5, True, 24 * 365])
async def test_rotate_rejects_bad_grace_periods(
    gateway: RunningGateway, http: httpx.AsyncClient, grace: object
) -> None:
    created = await create_key(http)
    response = await http.post(f"{KEYS}/{created['id']}/rotate", json={"grace_period_hours": grace})
    error = assert_error(response, 400, "invalid_request")
    assert error["param"] == "grace_period_hours"
    assert await chat_status(gateway, created["key"]) == 200
    assert len((await http.get(KEYS)).json()["data"]) == 2


async def test_rotated_key_keeps_its_settings_and_expiry(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    expires = (datetime.now(UTC) + timedelta(hours=10)).replace(microsecond=0)
    created = await create_key(
        http,
        name="limited",
        permissions=["chat"],
        rate_limits={"rpm": 7},
        allowed_models=["gpt-4o-mini"],
        expires_at=expires.isoformat(),
    )
    body = (await http.post(f"{KEYS}/{created['id']}/rotate", json={})).json()
    # The grace period never outlives the key's own expiry.
    assert parse_time(body["old_key_expires_at"]) == expires
    successor = (await http.get(f"{KEYS}/{body['new_key_id']}")).json()
    assert successor["name"] == "limited"
    assert successor["permissions"] == ["chat"]
    assert successor["rate_limits"]["rpm"] == 7
    assert successor["allowed_models"] == ["gpt-4o-mini"]
    assert parse_time(successor["expires_at"]) == expires
    assert successor["key_hint"].endswith(body["new_key"][-4:])


async def test_a_key_can_be_rotated_only_once(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """A second rotation of the old key would issue a key that dies with the old key's
    grace period; the successor is the one to rotate."""
    created = await create_key(http)
    first = (
        await http.post(f"{KEYS}/{created['id']}/rotate", json={"grace_period_hours": 1})
    ).json()
    again = await http.post(f"{KEYS}/{created['id']}/rotate", json={})
    error = assert_error(again, 400, "key_rotated")
    assert first["new_key_id"] in error["message"]
    assert len((await http.get(KEYS)).json()["data"]) == 3  # admin, old, one successor
    second = await http.post(f"{KEYS}/{first['new_key_id']}/rotate", json={})
    assert second.status_code == 200, second.text
    assert (await http.get(f"{KEYS}/{second.json()['new_key_id']}")).json()["expires_at"] is None
    for key in (created["key"], first["new_key"], second.json()["new_key"]):
        assert await chat_status(gateway, key) == 200


async def test_an_expired_key_cannot_be_rotated(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    expires_at = datetime.now(UTC) + timedelta(seconds=0.5)
    created = await create_key(http, expires_at=expires_at.isoformat())
    await trio.sleep((expires_at - datetime.now(UTC)).total_seconds() + 0.05)
    response = await http.post(f"{KEYS}/{created['id']}/rotate", json={})
    assert_error(response, 400, "key_expired")
    assert "new_key" not in response.text


async def test_revoked_key_cannot_be_rotated(http: httpx.AsyncClient) -> None:
    created = await create_key(http)
    assert (await http.post(f"{KEYS}/{created['id']}/revoke")).status_code == 200
    response = await http.post(f"{KEYS}/{created['id']}/rotate", json={})
    assert_error(response, 400, "key_revoked")
    assert "new_key" not in response.text


# -- revoke and delete ---------------------------------------------------------------------


async def test_revoke_marks_the_key_and_stops_it(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http)
    assert await chat_status(gateway, created["key"]) == 200
    response = await http.post(f"{KEYS}/{created['id']}/revoke")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == created["id"]
    assert body["status"] == "revoked"
    revoked_at = parse_time(body["revoked_at"])
    assert abs(revoked_at - datetime.now(UTC)) < timedelta(seconds=5)
    assert await chat_status(gateway, created["key"]) == 401
    read = (await http.get(f"{KEYS}/{created['id']}")).json()
    assert read["status"] == "revoked"
    assert parse_time(read["revoked_at"]) == revoked_at


async def test_delete_removes_the_key(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    created = await create_key(http)
    response = await http.delete(f"{KEYS}/{created['id']}")
    assert response.status_code == 200, response.text
    assert response.json()["id"] == created["id"]
    assert response.json()["deleted"] is True
    assert await chat_status(gateway, created["key"]) == 401
    assert_error(await http.get(f"{KEYS}/{created['id']}"), 404, "key_not_found")
    assert created["id"] not in {k["id"] for k in (await http.get(KEYS)).json()["data"]}
    assert_error(await http.delete(f"{KEYS}/{created['id']}"), 404, "key_not_found")


async def test_deleting_a_rotated_key_keeps_its_successor(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http)
    rotated = (await http.post(f"{KEYS}/{created['id']}/rotate", json={})).json()
    assert (await http.delete(f"{KEYS}/{created['id']}")).status_code == 200
    assert await chat_status(gateway, created["key"]) == 401
    assert await chat_status(gateway, rotated["new_key"]) == 200


# -- audit and storage ---------------------------------------------------------------------


async def test_create_and_revoke_are_audited(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http, name="audited")
    assert (await http.post(f"{KEYS}/{created['id']}/revoke")).status_code == 200
    events = await gateway.state.db.run(lambda d: audit.list_events(d, "default"))
    mine = [e for e in events if e.target_id == created["id"]]
    assert sorted(e.type for e in mine) == ["api_key.created", "api_key.revoked"]
    for event in mine:
        assert event.target_type == "api_key"
        assert event.actor_id is not None
        assert event.timestamp.tzinfo is not None
        assert created["key"] not in repr(event)


async def test_clear_keys_never_reach_the_database_files(
    gateway: RunningGateway, http: httpx.AsyncClient, settings: Settings
) -> None:
    made = [await create_key(http, name=f"secret {t}", type=t) for t in ("dev", "prod", "admin")]
    rotated = (await http.post(f"{KEYS}/{made[0]['id']}/rotate", json={})).json()
    clear = [m["key"] for m in made] + [rotated["new_key"], ADMIN_KEY]
    files = [p for p in settings.data_dir.iterdir() if p.name.startswith("gateway.db")]
    assert any(p.name == "gateway.db" for p in files)
    stored = b"".join(p.read_bytes() for p in files)
    assert b"secret dev" in stored  # the records are there ...
    for key in clear:
        assert key.encode() not in stored  # ... but not the keys
        assert key[len("gw_admin_") :].encode() not in stored


# -- workspace isolation -------------------------------------------------------------------


async def foreign_key(gateway: RunningGateway, kind: KeyKind, permissions: tuple[str, ...]) -> str:
    """A key of a second workspace, written straight to the store (as the CLI would)."""
    now = datetime.now(UTC)
    workspace = WorkspaceRecord(name="other team", created_at=now)
    full_key = new_api_key(kind)
    record = keys.new_record(
        full_key,
        workspace_id=workspace.id,
        name="other admin",
        kind=kind,
        permissions=permissions,
        now=now,
    )

    def write(d: Any) -> None:
        workspaces.insert(d, workspace)
        keys.insert(d, record)

    await gateway.state.db.run(write)
    return full_key


@pytest.mark.parametrize(
    ("kind", "permissions"),
    [("prod", ("chat", "models", "management")), ("admin", keys.ALL_PERMISSIONS)],
)
async def test_another_workspace_cannot_see_or_touch_default_keys(
    gateway: RunningGateway, http: httpx.AsyncClient, kind: KeyKind, permissions: tuple[str, ...]
) -> None:
    target = await create_key(http, name="default workspace key")
    other = await foreign_key(gateway, kind, permissions)
    async with as_client(gateway, other) as as_other:
        listed = await as_other.get(KEYS)
        assert listed.status_code == 200, listed.text
        assert [k["name"] for k in listed.json()["data"]] == ["other admin"]
        path = f"{KEYS}/{target['id']}"
        for response in (
            await as_other.get(path),
            await as_other.patch(path, json={"name": "hijacked"}),
            await as_other.post(f"{path}/rotate", json={}),
            await as_other.post(f"{path}/revoke"),
            await as_other.delete(path),
        ):
            assert_error(response, 404, "key_not_found")
        own = await as_other.post(KEYS, json={"name": "theirs", "permissions": ["chat"]})
        assert own.status_code == 201, own.text
    read = (await http.get(f"{KEYS}/{target['id']}")).json()
    assert read["name"] == "default workspace key"
    assert read["status"] == "active"
    assert await chat_status(gateway, target["key"]) == 200
    assert "theirs" not in [k["name"] for k in (await http.get(KEYS)).json()["data"]]
