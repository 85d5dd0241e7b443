"""The isolation table: from another workspace or organisation, every management route
answers a foreign id exactly as an unknown one, lists show nothing foreign, and nothing
foreign changes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import ADMIN_KEY
from .management_routes import ROUTES
from .org_world import World, bearer, build_world, ok

VALID_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("PATCH", "api-keys"): {"name": "taken over"},
    ("PATCH", "routing-rules"): {"name": "taken over"},
    ("PATCH", "providers"): {"settings": {}},
    ("PATCH", "workspaces"): {"name": "taken over"},
    ("PATCH", "members"): {"role": "viewer"},
}


@pytest.fixture
async def world(http: httpx.AsyncClient) -> World:
    return await build_world(http, ADMIN_KEY)


async def foreign_ids(http: httpx.AsyncClient, world: World) -> dict[str, str]:
    """One resource of each type in the default organisation's `default` workspace."""
    key = await ok(await http.post("/v1/management/api-keys", json={"name": "victim"}), 201)
    rule = await ok(
        await http.post(
            "/v1/management/routing-rules",
            json={
                "name": "victim",
                "conditions": {"models": ["gpt-4o-mini"]},
                "actions": {"route_to": "gpt-4o-mini"},
            },
        ),
        201,
    )
    template = await ok(
        await http.post(
            "/v1/management/pipeline-templates",
            json={
                "name": "victim",
                "stt": {"model": "whisper-1"},
                "llm": {"model": "gpt-4o-mini"},
                "tts": {"model": "tts-1", "voice": "calm"},
            },
        ),
        201,
    )
    return {
        "pipeline-templates": template["id"],
        "api-keys": key["id"],
        "routing-rules": rule["id"],
        "providers": "openai",
        "workspaces": "default",
        "members": world.member_ids["developer"],
        "service-accounts": world.account["id"],
    }


def callers(world: World) -> dict[str, dict[str, str]]:
    return {
        "key of another workspace": bearer(world.other_key),
        "owner of another organisation": bearer(
            world.org_b_token, **{"x-organization-id": world.org_b}
        ),
    }


def kind_of(path: str) -> str | None:
    parts = path.split("/")
    return parts[3] if "{id}" in path else None


def unknown_for(kind: str) -> str:
    # A provider id is a vendor name: the unknown counterpart is another vendor that the
    # caller's workspace has not configured either.
    return "cohere" if kind == "providers" else "nope_000"


def same_answer(a: httpx.Response, b: httpx.Response, a_id: str, b_id: str) -> bool:
    return a.status_code == b.status_code and a.text.replace(a_id, "<id>") == b.text.replace(
        b_id, "<id>"
    )


async def test_foreign_ids_answer_like_unknown_ones_on_every_route(
    http: httpx.AsyncClient, world: World
) -> None:
    ids = await foreign_ids(http, world)
    for who, headers in callers(world).items():
        for method, path, _, body in ROUTES:
            kind = kind_of(path)
            if kind is None or kind not in ids:
                continue
            sent = VALID_BODIES.get((method, kind), body)
            foreign, unknown = ids[kind], unknown_for(kind)
            a = await http.request(
                method, path.replace("{id}", foreign), json=sent, headers=headers
            )
            b = await http.request(
                method, path.replace("{id}", unknown), json=sent, headers=headers
            )
            if (method, kind) == ("GET", "providers"):
                # A catalog entry is readable anywhere; the other workspace's set-up is not.
                assert a.json()["status"] == "inactive", (who, a.text)
                assert a.json()["configured"] is False, (who, a.text)
                continue
            assert a.status_code in (403, 404), (who, method, path, a.text)
            assert same_answer(a, b, foreign, unknown), (who, method, path, a.text, b.text)


async def test_lists_and_counts_show_nothing_foreign(http: httpx.AsyncClient, world: World) -> None:
    ids = await foreign_ids(http, world)
    secret_ids = [v for k, v in ids.items() if k not in ("providers", "workspaces")]
    for who, headers in callers(world).items():
        for method, path, _, _ in ROUTES:
            if method != "GET" or "{id}" in path:
                continue
            response = await http.get(path, headers=headers)
            assert response.status_code == 200, (who, path, response.text)
            for foreign in secret_ids:
                assert foreign not in response.text, (who, path)
            # People of the default workspace only (owners and admins act in every one).
            for email in ("developer@a.example", "viewer@a.example"):
                assert email not in response.text, (who, path)
        providers = await ok(await http.get("/v1/management/providers", headers=headers))
        assert not [p for p in providers["providers"] if p["configured"]], who
        workspaces = await ok(await http.get("/v1/management/workspaces", headers=headers))
        assert "default" not in [w["id"] for w in workspaces["data"]], who


async def test_a_foreign_workspace_cannot_be_chosen(http: httpx.AsyncClient, world: World) -> None:
    for headers in callers(world).values():
        chosen = await http.get(
            "/v1/management/api-keys", headers={**headers, "x-workspace-id": "default"}
        )
        unknown = await http.get(
            "/v1/management/api-keys", headers={**headers, "x-workspace-id": "ws_nope"}
        )
        assert chosen.status_code == unknown.status_code == 404
        assert same_answer(chosen, unknown, "default", "ws_nope")


async def test_nothing_foreign_changed(http: httpx.AsyncClient, world: World) -> None:
    ids = await foreign_ids(http, world)
    for headers in callers(world).values():
        for method, path, _, body in ROUTES:
            kind = kind_of(path)
            if kind in ids and method != "GET":
                url = path.replace("{id}", ids[kind])
                await http.request(method, url, json=body, headers=headers)
    key = await ok(await http.get(f"/v1/management/api-keys/{ids['api-keys']}"))
    assert key["status"] == "active" and key["name"] == "victim"
    rule = await ok(await http.get(f"/v1/management/routing-rules/{ids['routing-rules']}"))
    assert rule["enabled"] is True and rule["name"] == "victim"
    provider = await ok(await http.get("/v1/management/providers/openai"))
    assert provider["status"] == "active"
    members = await ok(await http.get("/v1/management/members", headers=world.as_role("owner")))
    assert world.member_ids["developer"] in [m["id"] for m in members["data"]]
    accounts = await ok(await http.get("/v1/management/service-accounts"))
    assert [a["id"] for a in accounts["data"]] == [world.account["id"]]
