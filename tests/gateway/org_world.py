"""Building an organisation world through the HTTP interface, for the organisation tests.

Two organisations, three workspaces, a member of each role, a service account and a
managing key of another workspace, every one made with the same calls a user would make.
"""

from __future__ import annotations

from typing import Any

import attrs
import httpx

PASSWORD = "correct horse battery staple"


def bearer(token: str, **headers: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", **headers}


async def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


async def join(
    http: httpx.AsyncClient,
    caller: dict[str, str],
    email: str,
    role: str,
    workspaces: list[str] | None = None,
) -> tuple[str, str]:
    """Invite `email`, accept with a password, log in; returns (member id, user token)."""
    body: dict[str, Any] = {"email": email, "role": role}
    if workspaces is not None:
        body["workspaces"] = workspaces
    invited = await ok(await http.post("/v1/management/members", json=body, headers=caller), 201)
    await ok(
        await http.post(
            "/v1/auth/invitations/accept",
            json={"token": invited["invitation_token"], "password": PASSWORD},
        )
    )
    return invited["id"], await log_in(http, email)


async def log_in(http: httpx.AsyncClient, email: str, password: str = PASSWORD) -> str:
    answer = await ok(
        await http.post("/v1/auth/token", json={"email": email, "password": password})
    )
    token: str = answer["access_token"]
    return token


@attrs.define
class World:
    admin: dict[str, str]
    tokens: dict[str, str]  # role -> user token in the default organisation
    member_ids: dict[str, str]
    second_workspace: str
    other_key: str  # a managing key (role admin) of the second workspace only
    account: dict[str, Any]  # the service account's creation answer
    org_b: str
    org_b_token: str  # owner of organisation B (also a developer in the default org)
    org_b_workspace: str

    def as_role(self, role: str, **headers: str) -> dict[str, str]:
        return bearer(self.tokens[role], **headers)


async def build_world(http: httpx.AsyncClient, admin_key: str) -> World:
    admin = bearer(admin_key)
    owner_id, owner = await join(http, admin, "owner@a.example", "owner")
    ws2 = await ok(
        await http.post(
            "/v1/management/workspaces",
            json={"name": "Second", "description": "another team"},
            headers=bearer(owner),
        ),
        201,
    )
    tokens = {"owner": owner}
    ids = {"owner": owner_id}
    for role, listed in (("admin", None), ("developer", ["default"]), ("viewer", ["default"])):
        ids[role], tokens[role] = await join(http, bearer(owner), f"{role}@a.example", role, listed)
    # A manager of the second workspace only: an admin key would reach the organisation.
    other = await ok(
        await http.post(
            "/v1/management/api-keys",
            json={
                "name": "second-ws-manager",
                "type": "prod",
                "permissions": ["chat", "embeddings", "audio", "files", "models", "management"],
            },
            headers=bearer(owner, **{"x-workspace-id": ws2["id"]}),
        ),
        201,
    )
    account = await ok(
        await http.post(
            "/v1/management/service-accounts",
            json={"name": "ci", "role": "developer", "workspaces": ["default"]},
            headers=bearer(owner),
        ),
        201,
    )
    _, bob = await join(http, bearer(owner), "bob@b.example", "developer", [ws2["id"]])
    org_b = await ok(
        await http.post(
            "/v1/management/organizations", json={"name": "B corp"}, headers=bearer(bob)
        ),
        201,
    )
    return World(
        admin=admin,
        tokens=tokens,
        member_ids=ids,
        second_workspace=ws2["id"],
        other_key=other["key"],
        account=account,
        org_b=org_b["id"],
        org_b_token=bob,
        org_b_workspace=org_b["workspaces"][0]["id"],
    )
