"""The organisation family's request bodies and the audit log's query, declared: one attrs
class each, from which both the OpenAPI document's schema and the server's checks come
(`gateway.platform.shapes`), read into plain values (pure, no I/O).

Bodies stay open (`@accepts_more`): a field the family does not know is ignored, as it
always was. Names and descriptions are trimmed, emails lower-cased (one person is one
user), workspace ids deduplicated in order.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any

import attrs

from gateway.platform.params import utc_moment
from gateway.platform.roles import Role
from gateway.platform.shapes import (
    NON_BLANK,
    NOT_NULL,
    SPACE,
    Count,
    Doc,
    Length,
    Pattern,
    Range,
    accepts_more,
    needs_fields,
    parse,
    parse_query,
)

MAX_NAME = 200
MAX_DESCRIPTION = 2000
MIN_PASSWORD = 10
MAX_PASSWORD = 1024
MAX_WORKSPACES = 100
MAX_AUDIT_LIMIT = 1000

Name = Annotated[str, NON_BLANK, Length(most=MAX_NAME)]
Description = Annotated[str, Length(most=MAX_DESCRIPTION)]
Email = Annotated[
    str,
    Pattern(f"^[^@{SPACE}]{{1,64}}@[^@{SPACE}]+\\.[^@{SPACE}]+$", "an email address"),
    Length(most=320),
]
Password = Annotated[str, Length(least=MIN_PASSWORD, most=MAX_PASSWORD)]
WorkspaceIds = Annotated[
    tuple[Annotated[str, Length(least=1)], ...],
    Count(least=1, most=MAX_WORKSPACES),
    Doc("The workspaces reached; left out or null: every workspace of the organisation"),
]


@accepts_more
@attrs.frozen
class NewWorkspace:
    """A workspace of the caller's organisation."""

    name: Name
    description: Annotated[str, NON_BLANK, Length(most=MAX_DESCRIPTION)] | None = None


@needs_fields(1)
@attrs.frozen
class WorkspaceChange:
    """A change to a workspace: at least one field. Turning `request_log_bodies` off
    erases the bodies the request log keeps."""

    name: Annotated[Name | None, NOT_NULL] = None
    description: Annotated[Description | None, NOT_NULL] = None
    request_log_bodies: Annotated[bool | None, NOT_NULL] = None


@accepts_more
@attrs.frozen
class Invitation:
    """A person invited by email, with a role (up to the caller's own)."""

    email: Email
    role: Role
    workspaces: WorkspaceIds | None = None


@accepts_more
@attrs.frozen
class RoleChange:
    role: Role


@accepts_more
@attrs.frozen
class ServiceAccountSpec:
    """A service account: a named credential with a role, and its API key."""

    name: Name
    role: Role
    workspaces: WorkspaceIds | None = None


@accepts_more
@attrs.frozen
class NewOrganization:
    name: Name


@accepts_more
@attrs.frozen
class Login:
    """An email and a password (a wrong one is 401 `invalid_credentials`)."""

    email: Email
    password: str


@accepts_more
@attrs.frozen
class InvitationAcceptance:
    """The invitation's one-time token and the person's password."""

    token: Annotated[str, Length(least=1, most=200)]
    password: Password


@attrs.frozen
class AuditQuery:
    """The audit log's page and filters."""

    limit: Annotated[int, Range(least=1, most=MAX_AUDIT_LIMIT)] = 100
    type: Annotated[str, Doc("Only events of this type: member.invited")] | None = None
    since: (
        Annotated[date | datetime, Doc("A date (YYYY-MM-DD) or an ISO 8601 time with its zone")]
        | None
    ) = None
    cursor: Annotated[str, Doc("The previous page's next_cursor")] | None = None


@attrs.frozen
class AuditFilter:
    limit: int
    type: str | None
    since: datetime | None
    cursor: str | None


def new_workspace(body: dict[str, Any]) -> NewWorkspace:
    asked = parse(NewWorkspace, body)
    description = None if asked.description is None else asked.description.strip()
    return NewWorkspace(name=asked.name.strip(), description=description)


def workspace_change(body: dict[str, Any]) -> WorkspaceChange:
    asked = parse(WorkspaceChange, body)
    return attrs.evolve(asked, name=None if asked.name is None else asked.name.strip())


def role_change(body: dict[str, Any]) -> Role:
    return parse(RoleChange, body).role


def acceptance(body: dict[str, Any]) -> InvitationAcceptance:
    return parse(InvitationAcceptance, body)


def parse_invitation(body: dict[str, Any]) -> Invitation:
    asked = parse(Invitation, body)
    return Invitation(
        email=asked.email.lower(), role=asked.role, workspaces=_unique(asked.workspaces)
    )


def parse_service_account(body: dict[str, Any]) -> ServiceAccountSpec:
    asked = parse(ServiceAccountSpec, body)
    return ServiceAccountSpec(
        name=asked.name.strip(), role=asked.role, workspaces=_unique(asked.workspaces)
    )


def organization_name(body: dict[str, Any]) -> str:
    return parse(NewOrganization, body).name.strip()


def login(body: dict[str, Any]) -> Login:
    asked = parse(Login, body)
    return Login(email=asked.email.lower(), password=asked.password)


def _unique(ids: tuple[str, ...] | None) -> tuple[str, ...] | None:
    return None if ids is None else tuple(dict.fromkeys(ids))


def parse_audit_filter(args: Any) -> AuditFilter:
    """The query of `GET /v1/management/audit-log`: limit, type, since, cursor."""
    asked = parse_query(AuditQuery, args)
    return AuditFilter(
        limit=asked.limit,
        type=asked.type or None,
        since=utc_moment(asked.since, "since"),
        cursor=asked.cursor or None,
    )
