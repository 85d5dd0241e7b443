"""Validation of organisation request bodies into plain values (pure, no I/O)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import attrs

from gateway.platform.errors import invalid_request
from gateway.platform.params import moment
from gateway.platform.roles import ROLES, Role

MAX_NAME = 200
MAX_DESCRIPTION = 2000
MIN_PASSWORD = 10
MAX_PASSWORD = 1024
MAX_WORKSPACES = 100
MAX_AUDIT_LIMIT = 1000
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")


@attrs.frozen
class Invitation:
    email: str
    role: Role
    workspaces: tuple[str, ...] | None


@attrs.frozen
class ServiceAccountSpec:
    name: str
    role: Role
    workspaces: tuple[str, ...] | None


@attrs.frozen
class AuditFilter:
    limit: int
    type: str | None
    since: datetime | None
    cursor: str | None


def text(body: dict[str, Any], field: str, *, required: bool, limit: int) -> str | None:
    """A string field: trimmed, non-empty when present, at most `limit` characters."""
    value = body.get(field)
    if value is None:
        if required:
            raise invalid_request(f"'{field}' is required.", param=field)
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise invalid_request(
            f"'{field}' must be a non-empty string of at most {limit} characters.",
            param=field,
            value=value if isinstance(value, str | int | float | bool) else None,
        )
    return value.strip()


def email(value: Any, field: str = "email") -> str:
    """A plausible email address, lower-cased so that one person is one user."""
    if not isinstance(value, str) or not _EMAIL.match(value.strip()) or len(value) > 320:
        raise invalid_request(f"'{field}' must be an email address.", param=field)
    return value.strip().lower()


def role(value: Any, field: str = "role") -> Role:
    if value not in ROLES:
        raise invalid_request(
            f"'{field}' must be one of {', '.join(ROLES)}.",
            param=field,
            value=value if isinstance(value, str) else None,
        )
    return value  # type: ignore[no-any-return]


def workspace_ids(value: Any, field: str = "workspaces") -> tuple[str, ...] | None:
    """An optional non-empty array of workspace ids (duplicates dropped, order kept)."""
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or not value
        or len(value) > MAX_WORKSPACES
        or not all(isinstance(item, str) and item for item in value)
    ):
        raise invalid_request(f"'{field}' must be a non-empty array of workspace ids.", param=field)
    return tuple(dict.fromkeys(value))


def password(value: Any, field: str = "password") -> str:
    if not isinstance(value, str) or not MIN_PASSWORD <= len(value) <= MAX_PASSWORD:
        raise invalid_request(
            f"'{field}' must be a string of {MIN_PASSWORD} to {MAX_PASSWORD} characters.",
            param=field,
        )
    return value


def token(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 200:
        raise invalid_request(f"'{field}' is required.", param=field)
    return value


def parse_invitation(body: dict[str, Any]) -> Invitation:
    return Invitation(
        email=email(body.get("email")),
        role=role(body.get("role")),
        workspaces=workspace_ids(body.get("workspaces")),
    )


def parse_service_account(body: dict[str, Any]) -> ServiceAccountSpec:
    name = text(body, "name", required=True, limit=MAX_NAME)
    assert name is not None
    return ServiceAccountSpec(
        name=name, role=role(body.get("role")), workspaces=workspace_ids(body.get("workspaces"))
    )


def parse_audit_filter(args: dict[str, str]) -> AuditFilter:
    """The query of `GET /v1/management/audit-log`: limit, type, since, cursor."""
    raw_limit = args.get("limit", "100")
    try:
        limit = int(raw_limit)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_AUDIT_LIMIT:
        raise invalid_request(
            f"'limit' must be an integer from 1 to {MAX_AUDIT_LIMIT}.",
            param="limit",
            value=raw_limit,
        )
    kind = args.get("type") or None
    return AuditFilter(
        limit=limit,
        type=kind,
        since=moment(args.get("since"), "since"),
        cursor=args.get("cursor") or None,
    )
