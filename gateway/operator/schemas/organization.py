"""The organisation family: workspaces, members, service accounts, organisations, the
audit log, and people's credentials (log in, log out, accept an invitation).

Shapes follow `gateway.organization.render` and the service modules that extend them.
Request bodies stay open (`obj`): `gateway.organization.input` reads the fields it knows
and ignores others. Every management route also answers 404 for an `X-Workspace-ID` the
caller cannot reach.
"""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    AUTH_ERRORS,
    INT,
    STR,
    STRS,
    TIME,
    Operation,
    Schema,
    all_required,
    arr,
    deleted,
    listing,
    nullable,
    obj,
    query,
)

ERRORS = (*AUTH_ERRORS, 404)
CONFLICTS = (*ERRORS, 409)
DATE_TIME: Schema = {"type": "string", "format": "date-time"}
ROLE: Schema = {"enum": ["owner", "admin", "developer", "viewer"]}
NAME: Schema = {"type": "string", "minLength": 1, "maxLength": 200}
WORKSPACE_IDS: Schema = arr({"type": "string", "minLength": 1}, minItems=1, maxItems=100)
WORKSPACES = "workspaces"
MEMBERS = "members"
ACCOUNTS = "service-accounts"
AUTH = "auth"


def extended(base: Schema, required: tuple[str, ...], **properties: Schema) -> Schema:
    return {"allOf": [base, obj(required, **properties)]}


WORKSPACE = all_required(
    id=STR,
    object={"const": "workspace"},
    name=STR,
    description=STR,
    organization_id=STR,
    created_at=DATE_TIME,
    request_log_bodies={"type": "boolean"},
)
MEMBER = all_required(
    id=STR,
    object={"const": "member"},
    email=STR,
    role=ROLE,
    status={"enum": ["invited", "active"]},
    workspaces=STRS,
    created_at=DATE_TIME,
    joined_at=TIME,
)
SERVICE_ACCOUNT = all_required(
    id=STR,
    object={"const": "service_account"},
    name=STR,
    role=ROLE,
    workspaces=STRS,
    created_at=DATE_TIME,
)
AUDIT_EVENT = all_required(
    id=STR,
    type=STR,
    actor=all_required(id=nullable(STR), email=nullable(STR)),
    target=all_required(type=nullable(STR), id=nullable(STR), email=nullable(STR)),
    timestamp=DATE_TIME,
    ip_address=nullable(STR),
    workspace_id=nullable(STR),
    details=ANY_OBJ,
)

WORKSPACE_OPERATIONS = {
    "organization.get_workspaces": Operation(
        "Workspaces the caller may act in", WORKSPACES, listing(WORKSPACE), errors=ERRORS
    ),
    "organization.post_workspaces": Operation(
        "Create a workspace in the caller's organisation",
        WORKSPACES,
        WORKSPACE,
        status=201,
        request=obj(("name",), name=NAME, description={"type": "string", "maxLength": 2000}),
        errors=ERRORS,
    ),
    "organization.get_workspaces_workspace_id": Operation(
        "One workspace", WORKSPACES, WORKSPACE, errors=ERRORS
    ),
    "organization.patch_workspaces_workspace_id": Operation(
        "Rename a workspace, change its description, or turn its request log's bodies on "
        "or off (off erases the bodies kept)",
        WORKSPACES,
        WORKSPACE,
        request=obj(
            (),
            name=NAME,
            description={"type": "string", "maxLength": 2000},
            request_log_bodies={"type": "boolean"},
        ),
        errors=ERRORS,
    ),
    "organization.delete_workspaces_workspace_id": Operation(
        "Delete an empty workspace (never the organisation's last)",
        WORKSPACES,
        deleted("workspace"),
        errors=CONFLICTS,
    ),
}

MEMBER_OPERATIONS = {
    "organization.get_members": Operation(
        "Members the caller may see", MEMBERS, listing(MEMBER), errors=ERRORS
    ),
    "organization.post_members": Operation(
        "Invite a person; the one-time invitation token is in this answer only",
        MEMBERS,
        extended(
            MEMBER,
            ("invitation_token", "invitation_expires_at"),
            invitation_token=STR,
            invitation_expires_at=DATE_TIME,
        ),
        status=201,
        request=obj(
            ("email", "role"),
            email={"type": "string", "format": "email"},
            role=ROLE,
            workspaces=WORKSPACE_IDS,
        ),
        errors=CONFLICTS,
    ),
    "organization.patch_members_member_id": Operation(
        "Change a member's role (up to the caller's own)",
        MEMBERS,
        MEMBER,
        request=all_required(role=ROLE),
        errors=CONFLICTS,
    ),
    "organization.delete_members_member_id": Operation(
        "Remove a member (never the last owner)", MEMBERS, deleted("member"), errors=CONFLICTS
    ),
}

ACCOUNT_OPERATIONS = {
    "organization.get_service-accounts": Operation(
        "Service accounts the caller may see", ACCOUNTS, listing(SERVICE_ACCOUNT), errors=ERRORS
    ),
    "organization.post_service-accounts": Operation(
        "Create a service account with its API key, shown in this answer only",
        ACCOUNTS,
        extended(SERVICE_ACCOUNT, ("api_key", "key_id"), api_key=STR, key_id=STR),
        status=201,
        request=obj(("name", "role"), name=NAME, role=ROLE, workspaces=WORKSPACE_IDS),
        errors=ERRORS,
    ),
    "organization.get_service-accounts_account_id": Operation(
        "One service account", ACCOUNTS, SERVICE_ACCOUNT, errors=ERRORS
    ),
    "organization.delete_service-accounts_account_id": Operation(
        "Delete a service account and its key", ACCOUNTS, deleted("service_account"), errors=ERRORS
    ),
}

ORGANIZATION_OPERATIONS = {
    "organization.who_am_i": Operation(
        "The caller: its credential, role, workspaces and the actions its role allows",
        "organizations",
        all_required(
            object={"const": "caller"},
            kind={"enum": ["api_key", "service_account", "user"]},
            id=STR,
            name=nullable(STR),
            role=nullable(ROLE),
            organization_id=STR,
            workspace_id=STR,
            workspaces=STRS,
            actions=STRS,
            permissions=STRS,
        ),
        description=(
            "For a client that shows what the caller may do (the web console): `actions` "
            "are the role's, as the roles table of docs/organizations.md gives them; "
            "`workspace_id` is the workspace this request acts in (`X-Workspace-ID`, else "
            "the credential's first); `permissions` are an API key's data-plane permissions "
            "(none for a user access token). Any caller with a role may ask."
        ),
        errors=ERRORS,
    ),
    "organization.list_organizations": Operation(
        "The calling person's organisations (a user access token; an API key gets 401)",
        "organizations",
        all_required(
            object={"const": "list"},
            organizations=arr(all_required(id=STR, name=STR, role=ROLE)),
        ),
    ),
    "organization.create_organization": Operation(
        "Create an organisation with one workspace; the caller becomes its owner",
        "organizations",
        all_required(
            id=STR,
            object={"const": "organization"},
            name=STR,
            role={"const": "owner"},
            created_at=DATE_TIME,
            workspaces=arr(WORKSPACE),
        ),
        status=201,
        request=all_required(name=NAME),
    ),
    "audit_log.audit_log": Operation(
        "Audit events, newest first, paged by cursor",
        "audit-log",
        all_required(
            object={"const": "list"},
            events=arr(AUDIT_EVENT),
            has_more={"type": "boolean"},
            next_cursor=nullable(STR),
        ),
        errors=ERRORS,
        query=(
            query("limit", {"type": "integer", "minimum": 1, "maximum": 1000}),
            query("type", STR, "Only events of this type, e.g. member.invited"),
            query("since", STR, "A date (YYYY-MM-DD) or an ISO 8601 time"),
            query("cursor", STR, "The previous page's next_cursor"),
        ),
    ),
}

AUTH_OPERATIONS = {
    "auth_tokens.log_in": Operation(
        "A user access token for an email and password",
        AUTH,
        all_required(
            access_token=STR,
            token_type={"const": "bearer"},
            expires_in=INT,
            expires_at=DATE_TIME,
        ),
        request=all_required(email={"type": "string", "format": "email"}, password=STR),
        errors=(400, 401, 408, 413, 429),
        public=True,
    ),
    "auth_tokens.log_out": Operation(
        "Revoke the user access token sent as the bearer credential",
        AUTH,
        all_required(revoked={"const": True}),
        errors=(401,),
    ),
    "auth_tokens.accept_invitation": Operation(
        "Accept an invitation with a password; the person becomes an active member",
        AUTH,
        extended(MEMBER, ("organization_id",), organization_id=STR),
        request=all_required(
            token={"type": "string", "minLength": 1, "maxLength": 200},
            password={"type": "string", "minLength": 10, "maxLength": 1024},
        ),
        errors=(400, 401, 408, 413),
        public=True,
    ),
}

PLAN: Schema = {"enum": ["free", "pro", "enterprise"]}
ORGANIZATION = all_required(
    id=STR,
    object={"const": "organization"},
    name=STR,
    plan=PLAN,
    created_at=DATE_TIME,
)
PLAN_OPERATIONS = {
    "organization.get_organization": Operation(
        "The caller's organisation, with the plan its SLA credits are measured against",
        "organizations",
        ORGANIZATION,
        errors=ERRORS,
    ),
    "organization.patch_organization": Operation(
        "Set the organisation's plan (free, pro, enterprise): the owner's billing action",
        "organizations",
        ORGANIZATION,
        request=all_required(plan=PLAN),
        errors=ERRORS,
    ),
}

OPERATIONS = {
    **WORKSPACE_OPERATIONS,
    **MEMBER_OPERATIONS,
    **ACCOUNT_OPERATIONS,
    **ORGANIZATION_OPERATIONS,
    **AUTH_OPERATIONS,
    **PLAN_OPERATIONS,
}
