"""Routes of the organisation family: workspaces, members, service accounts, organisations.

Thin: each route authenticates with the one action it needs (see
`gateway.platform.roles`), declares its operation (the OpenAPI document is written from
the family's input and render types), and hands over to the family's service modules.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from quart import Blueprint, Response, request

from gateway.organization import access, accounts, members, plans, render, workspaces
from gateway.organization import input as shapes
from gateway.organization.caller import describe
from gateway.organization.services import OrganizationServices
from gateway.platform.answers import Deleted, ListOf
from gateway.platform.apidoc import MARK, Operation, operation
from gateway.platform.auth import Principal
from gateway.platform.roles import Action
from gateway.platform.web import json_response, read_object

MANAGEMENT = "/v1/management"
Handler = Callable[..., Awaitable[Mapping[str, object]]]
MEMBER_GONE = {404: "member_not_found"}
ACCOUNT_GONE = {404: "service_account_not_found"}
UNKNOWN_WORKSPACE = {400: "unknown_workspace"}


def _op(summary: str, tag: str, permission: Action, **declared: Any) -> Operation:
    return Operation(summary=summary, tag=tag, permission=permission, **declared)


ROUTES: tuple[tuple[str, str, Action, Handler, Operation], ...] = (
    (
        "/workspaces",
        "GET",
        "view_analytics",
        workspaces.list_workspaces,
        _op(
            "Workspaces the caller may act in",
            "workspaces",
            "view_analytics",
            answer=ListOf[render.Workspace],
        ),
    ),
    (
        "/workspaces",
        "POST",
        "manage_workspaces",
        workspaces.create,
        _op(
            "Create a workspace in the caller's organisation",
            "workspaces",
            "manage_workspaces",
            body=shapes.NewWorkspace,
            answer=render.Workspace,
            status=201,
            description="The caller must reach every workspace of the organisation.",
        ),
    ),
    (
        "/workspaces/<workspace_id>",
        "GET",
        "view_analytics",
        workspaces.read,
        _op("One workspace", "workspaces", "view_analytics", answer=render.Workspace),
    ),
    (
        "/workspaces/<workspace_id>",
        "PATCH",
        "manage_workspaces",
        workspaces.update,
        _op(
            "Rename a workspace, change its description, or turn its request log's bodies "
            "on or off (off erases the bodies kept)",
            "workspaces",
            "manage_workspaces",
            body=shapes.WorkspaceChange,
            answer=render.Workspace,
        ),
    ),
    (
        "/workspaces/<workspace_id>",
        "DELETE",
        "manage_workspaces",
        workspaces.delete,
        _op(
            "Delete an empty workspace (never the organisation's last)",
            "workspaces",
            "manage_workspaces",
            answer=Deleted,
            errors={409: ("workspace_not_empty", "last_workspace")},
        ),
    ),
    (
        "/members",
        "GET",
        "view_configuration",
        members.list_members,
        _op(
            "Members the caller may see",
            "members",
            "view_configuration",
            answer=ListOf[render.Member],
        ),
    ),
    (
        "/members",
        "POST",
        "invite_members",
        members.invite,
        _op(
            "Invite a person; the one-time invitation token is in this answer only",
            "members",
            "invite_members",
            body=shapes.Invitation,
            answer=render.InvitedMember,
            status=201,
            description="The role is at most the caller's own.",
            errors={**UNKNOWN_WORKSPACE, 409: "member_exists"},
        ),
    ),
    (
        "/members/<member_id>",
        "PATCH",
        "invite_members",
        members.change_role,
        _op(
            "Change a member's role (up to the caller's own)",
            "members",
            "invite_members",
            body=shapes.RoleChange,
            answer=render.Member,
            errors={**MEMBER_GONE, 409: "last_owner"},
        ),
    ),
    (
        "/members/<member_id>",
        "DELETE",
        "remove_members",
        members.remove,
        _op(
            "Remove a member (never the last owner)",
            "members",
            "remove_members",
            answer=Deleted,
            errors={**MEMBER_GONE, 409: "last_owner"},
        ),
    ),
    (
        "/service-accounts",
        "GET",
        "view_configuration",
        accounts.list_accounts,
        _op(
            "Service accounts the caller may see",
            "service-accounts",
            "view_configuration",
            answer=ListOf[render.ServiceAccount],
        ),
    ),
    (
        "/service-accounts",
        "POST",
        "create_api_keys",
        accounts.create,
        _op(
            "Create a service account with its API key, shown in this answer only",
            "service-accounts",
            "create_api_keys",
            body=shapes.ServiceAccountSpec,
            answer=render.NewServiceAccount,
            status=201,
            errors=UNKNOWN_WORKSPACE,
        ),
    ),
    (
        "/service-accounts/<account_id>",
        "GET",
        "view_configuration",
        accounts.read,
        _op(
            "One service account",
            "service-accounts",
            "view_configuration",
            answer=render.ServiceAccount,
            errors=ACCOUNT_GONE,
        ),
    ),
    (
        "/service-accounts/<account_id>",
        "DELETE",
        "revoke_api_keys",
        accounts.delete,
        _op(
            "Delete a service account and its key",
            "service-accounts",
            "revoke_api_keys",
            answer=Deleted,
            errors={**ACCOUNT_GONE, 409: "last_owner_credential"},
        ),
    ),
    (
        "/organization",
        "GET",
        "view_configuration",
        plans.read,
        _op(
            "The caller's organisation, with the plan its SLA credits are measured against",
            "organizations",
            "view_configuration",
            answer=plans.Organization,
            errors={404: "organization_not_found"},
        ),
    ),
    (
        "/organization",
        "PATCH",
        "manage_billing",
        plans.update,
        _op(
            "Set the organisation's plan (free, pro, enterprise): the owner's billing action",
            "organizations",
            "manage_billing",
            body=plans.PlanChange,
            answer=plans.Organization,
            errors={404: "organization_not_found"},
        ),
    ),
)


def organization_blueprint(services: OrganizationServices) -> Blueprint:
    bp = Blueprint("organization", __name__)
    for path, method, action, handler, declared in ROUTES:
        _table_route(bp, services, path, method, action, handler, declared)
    _caller_routes(bp, services)
    return bp


def _table_route(
    bp: Blueprint,
    services: OrganizationServices,
    path: str,
    method: str,
    action: Action,
    handler: Handler,
    declared: Operation,
) -> None:
    """One route of `ROUTES`: the caller a manager allowed `action`, the ids of the path
    and the body (when it declares one) handed to `handler`."""
    reads_body = declared.body is not None and method in ("POST", "PATCH")

    async def view(**ids: str) -> Response:
        principal = await services.auth.manager(action)
        args: list[Any] = [services, principal, *ids.values()]
        if reads_body:
            args.append(await read_object())
        return json_response(await handler(*args), declared.status)

    setattr(view, MARK, declared)
    slug = path.strip("/").replace("/", "_").replace("<", "").replace(">", "")
    name = f"{method.lower()}_{slug}"
    bp.add_url_rule(MANAGEMENT + path, name, view, methods=[method])


def _caller_routes(bp: Blueprint, services: OrganizationServices) -> None:
    """What the caller is, and the organisations of a person (a user access token)."""

    @bp.get(f"{MANAGEMENT}/me")
    @operation(
        "The caller: its credential, role, workspaces and the actions its role allows",
        "organizations",
        answer=render.Caller,
        permission="view_analytics",
        description="For a client that shows what the caller may do (the web console): "
        "`actions` are the role's, as the roles table of docs/organizations.md gives them; "
        "`workspace_id` is the workspace this request acts in (`X-Workspace-ID`, else the "
        "credential's first); `permissions` are an API key's data-plane permissions (none "
        "for a user access token). Any caller with a role may ask.",
    )
    async def who_am_i() -> Response:
        # Every role may view analytics: this admits any management caller, and answers
        # for the workspace the request names, as every management route does.
        return json_response(describe(await services.auth.manager("view_analytics")))

    @bp.get(f"{MANAGEMENT}/organizations")
    @operation(
        "The calling person's organisations (a user access token; an API key gets 401)",
        "organizations",
        answer=render.Memberships,
    )
    async def list_organizations() -> Response:
        principal = await services.auth.any(request)
        return json_response(await access.list_organizations(services, principal))

    @bp.post(f"{MANAGEMENT}/organizations")
    @operation(
        "Create an organisation with one workspace; the caller becomes its owner",
        "organizations",
        body=shapes.NewOrganization,
        answer=render.CreatedOrganization,
        status=201,
        description="Called with a user access token; an API key gets 401.",
    )
    async def create_organization() -> Response:
        principal: Principal = await services.auth.any(request)
        body = await read_object()
        return json_response(await access.create_organization(services, principal, body), 201)
