"""The organisation family's response objects (pure)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from gateway.platform.answers import Time
from gateway.platform.roles import ROLES
from gateway.platform.shapes import Choices, Doc
from gateway.platform.web import iso as iso
from store.audit import ORGANIZATION_WIDE, AuditEvent
from store.members import MemberRecord
from store.service_accounts import ServiceAccountRecord
from store.workspaces import WorkspaceRecord

Role = Annotated[str, Choices(ROLES)]


class Workspace(TypedDict):
    """A workspace: the unit keys, providers, rules and usage belong to."""

    id: str
    object: Literal["workspace"]
    name: str
    description: str
    organization_id: str
    created_at: Time
    request_log_bodies: Annotated[
        bool, Doc("Whether the request log keeps the bodies of requests (PII redacted)")
    ]


class Member(TypedDict):
    """A person of the organisation, invited or active."""

    id: str
    object: Literal["member"]
    email: str
    role: Role
    status: Annotated[str, Choices(("invited", "active"))]
    workspaces: list[str]
    created_at: Time
    joined_at: Time | None


class InvitedMember(Member):
    """An invitation: the one-time token is in this answer only."""

    invitation_token: str
    invitation_expires_at: Time


class JoinedMember(Member):
    """A person who accepted an invitation."""

    organization_id: str


class ServiceAccount(TypedDict):
    """A named credential with a role, for a program rather than a person."""

    id: str
    object: Literal["service_account"]
    name: str
    role: Role
    workspaces: list[str]
    created_at: Time


class NewServiceAccount(ServiceAccount):
    """A service account and its API key, shown in this answer only."""

    api_key: str
    key_id: str


class AuditActor(TypedDict):
    id: str | None
    email: str | None


class AuditTarget(TypedDict):
    type: str | None
    id: str | None
    email: str | None


class AuditEventShown(TypedDict):
    """One audited action: who did what to what, when, from where."""

    id: str
    type: str
    actor: AuditActor
    target: AuditTarget
    timestamp: Time
    ip_address: str | None
    workspace_id: Annotated[str | None, Doc("null for an organisation-wide event")]
    details: dict[str, Any]


class AuditPage(TypedDict):
    """Audit events, newest first."""

    object: Literal["list"]
    events: list[AuditEventShown]
    has_more: bool
    next_cursor: str | None


class Caller(TypedDict):
    """The caller: its credential, role, workspaces and what its role allows."""

    object: Literal["caller"]
    kind: Annotated[str, Choices(("api_key", "service_account", "user"))]
    id: str
    name: str | None
    role: Role | None
    organization_id: str
    workspace_id: Annotated[str, Doc("The workspace this request acts in")]
    workspaces: list[str]
    actions: Annotated[list[str], Doc("The role's actions (docs/organizations.md)")]
    permissions: Annotated[list[str], Doc("An API key's data-plane permissions")]


class Membership(TypedDict):
    id: str
    name: str
    role: Role


class Memberships(TypedDict):
    """The organisations the calling person belongs to."""

    object: Literal["list"]
    organizations: list[Membership]


class CreatedOrganization(TypedDict):
    """A new organisation, with its one workspace; the caller is its owner."""

    id: str
    object: Literal["organization"]
    name: str
    role: Literal["owner"]
    created_at: Time
    workspaces: list[Workspace]


class AccessToken(TypedDict):
    """A user access token, sent as the bearer credential."""

    access_token: str
    token_type: Literal["bearer"]
    expires_in: Annotated[int, Doc("Seconds")]
    expires_at: Time


class TokenRevoked(TypedDict):
    revoked: Literal[True]


def workspace(record: WorkspaceRecord) -> Workspace:
    return {
        "id": record.id,
        "object": "workspace",
        "name": record.name,
        "description": record.description,
        "organization_id": record.organization_id,
        "created_at": iso(record.created_at),
        "request_log_bodies": record.request_log_bodies,
    }


def member(record: MemberRecord) -> Member:
    return {
        "id": record.id,
        "object": "member",
        "email": record.email,
        "role": record.role,
        "status": record.status,
        "workspaces": list(record.workspaces),
        "created_at": iso(record.created_at),
        "joined_at": iso(record.joined_at),
    }


def service_account(record: ServiceAccountRecord) -> ServiceAccount:
    return {
        "id": record.id,
        "object": "service_account",
        "name": record.name,
        "role": record.role,
        "workspaces": list(record.workspaces),
        "created_at": iso(record.created_at),
    }


def audit_event(event: AuditEvent) -> AuditEventShown:
    """The spec's audit event (`id`, `type`, `actor`, `target`, `timestamp`,
    `ip_address`), plus the workspace (null for organisation-wide events) and details."""
    return {
        "id": event.id,
        "type": event.type,
        "actor": {"id": event.actor_id, "email": event.actor_email},
        "target": {"type": event.target_type, "id": event.target_id, "email": event.target_email},
        "timestamp": iso(event.timestamp),
        "ip_address": event.ip_address,
        "workspace_id": None if event.workspace_id == ORGANIZATION_WIDE else event.workspace_id,
        "details": dict(event.details),
    }
