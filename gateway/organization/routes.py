"""Routes of the organisation family: workspaces, members, service accounts, organisations.

Thin: each route authenticates with the one action it needs (see
`gateway.platform.roles`) and hands over to the family's service modules.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from quart import Blueprint, Response, request

from gateway.organization import access, accounts, members, plans, workspaces
from gateway.organization.caller import describe
from gateway.organization.services import OrganizationServices
from gateway.platform.auth import Principal
from gateway.platform.roles import Action
from gateway.platform.web import json_response, read_object

MANAGEMENT = "/v1/management"


def organization_blueprint(services: OrganizationServices) -> Blueprint:
    bp = Blueprint("organization", __name__)

    def route(
        path: str,
        method: str,
        action: Action,
        handler: Callable[..., Awaitable[dict[str, Any]]],
        *,
        body: bool = False,
        status: int = 200,
    ) -> None:
        async def view(**ids: str) -> Response:
            principal = await services.auth.manager(action)
            args: list[Any] = [services, principal, *ids.values()]
            if body:
                args.append(await read_object())
            return json_response(await handler(*args), status)

        slug = path.strip("/").replace("/", "_").replace("<", "").replace(">", "")
        name = f"{method.lower()}_{slug}"
        bp.add_url_rule(MANAGEMENT + path, name, view, methods=[method])

    route("/workspaces", "GET", "view_analytics", workspaces.list_workspaces)
    route("/workspaces", "POST", "manage_workspaces", workspaces.create, body=True, status=201)
    route("/workspaces/<workspace_id>", "GET", "view_analytics", workspaces.read)
    route("/workspaces/<workspace_id>", "PATCH", "manage_workspaces", workspaces.update, body=True)
    route("/workspaces/<workspace_id>", "DELETE", "manage_workspaces", workspaces.delete)

    route("/members", "GET", "view_configuration", members.list_members)
    route("/members", "POST", "invite_members", members.invite, body=True, status=201)
    route("/members/<member_id>", "PATCH", "invite_members", members.change_role, body=True)
    route("/members/<member_id>", "DELETE", "remove_members", members.remove)

    route("/service-accounts", "GET", "view_configuration", accounts.list_accounts)
    route("/service-accounts", "POST", "create_api_keys", accounts.create, body=True, status=201)
    route("/service-accounts/<account_id>", "GET", "view_configuration", accounts.read)
    route("/service-accounts/<account_id>", "DELETE", "revoke_api_keys", accounts.delete)

    route("/organization", "GET", "view_configuration", plans.read)
    route("/organization", "PATCH", "manage_billing", plans.update, body=True)

    @bp.get(f"{MANAGEMENT}/me")
    async def who_am_i() -> Response:
        # Every role may view analytics: this admits any management caller, and answers
        # for the workspace the request names, as every management route does.
        return json_response(describe(await services.auth.manager("view_analytics")))

    @bp.get(f"{MANAGEMENT}/organizations")
    async def list_organizations() -> Response:
        principal = await services.auth.any(request)
        return json_response(await access.list_organizations(services, principal))

    @bp.post(f"{MANAGEMENT}/organizations")
    async def create_organization() -> Response:
        principal: Principal = await services.auth.any(request)
        body = await read_object()
        return json_response(await access.create_organization(services, principal, body), 201)

    return bp
