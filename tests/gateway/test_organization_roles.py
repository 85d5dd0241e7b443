"""The role matrix: the table in docs/organizations.md is the enforced one, and every route
obeys it."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from gateway.app.server import RunningGateway
from gateway.platform import roles

from .conftest import ADMIN_KEY
from .management_routes import ANY_CALLER, ROUTES
from .org_world import World, bearer, build_world

ROLES_PAGE = Path(__file__).resolve().parents[2] / "docs" / "organizations.md"
SPEC_ROWS = (
    "delete_organization",
    "manage_billing",
    "invite_members",
    "remove_members",
    "create_api_keys",
    "revoke_api_keys",
    "configure_providers",
    "edit_routing_rules",
    "use_api_keys",
    "view_analytics",
    "export_data",
)


def readme_matrix() -> dict[str, dict[str, bool]]:
    text = ROLES_PAGE.read_text()
    start = text.index("| action | owner | admin | developer | viewer |")
    rows: dict[str, dict[str, bool]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        action = re.sub(r"\W+", "_", cells[0].lower())
        rows[action] = dict(zip(roles.ROLES, (c == "yes" for c in cells[1:]), strict=True))
    return rows


def test_the_published_matrix_is_the_enforced_one() -> None:
    published = readme_matrix()
    assert set(SPEC_ROWS) <= set(published)
    assert tuple(published) == roles.ACTIONS
    for action, cells in published.items():
        for role, expected in cells.items():
            assert roles.allowed(role, action) is expected, (action, role)  # type: ignore[arg-type]
    assert not roles.allowed(None, "view_analytics")


def test_owner_all_admin_all_but_billing_and_deletion() -> None:
    assert all(roles.allowed("owner", a) for a in roles.ACTIONS)
    assert [a for a in roles.ACTIONS if not roles.allowed("admin", a)] == [
        "delete_organization",
        "manage_billing",
    ]


async def test_the_route_table_covers_every_management_route(gateway: RunningGateway) -> None:
    assert gateway.http is not None
    app = gateway.http.app
    served = {
        (method, re.sub(r"<\w+>", "{id}", rule.rule))
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith(("/v1/management", "/v1/sustainability", "/v1/mcp/agents"))
        for method in rule.methods or ()
        if method not in ("HEAD", "OPTIONS")
    }
    listed = {(method, path) for method, path, _, _ in ROUTES}
    organizations = {
        ("GET", "/v1/management/organizations"),
        ("POST", "/v1/management/organizations"),
    }
    assert served - organizations - set(ANY_CALLER) == listed


@pytest.fixture
async def world(http: httpx.AsyncClient) -> World:
    return await build_world(http, ADMIN_KEY)


@pytest.mark.parametrize("role", roles.ROLES)
async def test_every_route_answers_as_the_matrix_says(
    http: httpx.AsyncClient, world: World, role: str
) -> None:
    headers = world.as_role(role)
    for method, path, action, body in ROUTES:
        url = path.replace("{id}", "nope_000")
        response = await http.request(method, url, json=body, headers=headers)
        if roles.allowed(role, action):  # type: ignore[arg-type]
            assert response.status_code not in (401, 403), (role, method, path, response.text)
        else:
            assert response.status_code == 403, (role, method, path, response.text)
            assert response.json()["error"]["code"] == "insufficient_permissions"


async def test_service_account_and_plain_keys_follow_their_role(
    http: httpx.AsyncClient, world: World
) -> None:
    made = await http.post(
        "/v1/management/api-keys", json={"name": "chat only", "permissions": ["chat"]}
    )
    plain = made.json()["key"]
    callers = {
        "developer": bearer(world.account["api_key"]),
        "owner": world.admin,
        None: bearer(plain),
    }
    for role, headers in callers.items():
        for method, path, action, body in ROUTES:
            url = path.replace("{id}", "nope_000")
            response = await http.request(method, url, json=body, headers=headers)
            expected_ok = roles.allowed(role, action)  # type: ignore[arg-type]
            assert (response.status_code != 403) is expected_ok, (role, method, path)
