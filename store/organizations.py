"""Organisations: the top of the tenancy tree (organisation > workspaces > resources),
with the plan (free, pro, enterprise) their SLA is measured against."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from store import columns
from store.handle import Handle
from store.workspaces import DEFAULT_ORGANIZATION_ID


def new_organization_id() -> str:
    return columns.new_id("org_")


@attrs.frozen(kw_only=True)
class OrganizationRecord:
    id: str = attrs.field(factory=new_organization_id)
    name: str
    created_at: datetime
    plan: str = "free"


@attrs.frozen
class Membership:
    """One organisation a user belongs to, with the user's role there."""

    organization: OrganizationRecord
    member_id: str
    role: str


def _from_row(row: Mapping[str, Any]) -> OrganizationRecord:
    return OrganizationRecord(
        id=row["id"],
        name=row["name"],
        created_at=columns.from_iso(row["created_at"]),
        plan=row["plan"],
    )


def insert(db: Handle, record: OrganizationRecord) -> OrganizationRecord:
    columns.insert_row(
        db,
        "organizations",
        {
            "id": record.id,
            "name": record.name,
            "created_at": columns.to_iso(record.created_at),
            "plan": record.plan,
        },
    )
    return record


def set_plan(db: Handle, organization_id: str, plan: str) -> OrganizationRecord | None:
    """Change the organisation's plan; None when there is no such organisation. Joins the
    caller's transaction (a savepoint), so the change and its audit event commit together."""
    with db.atomic():
        db.execute("UPDATE organizations SET plan = ? WHERE id = ?", [plan, organization_id])
    return get(db, organization_id)


def get(db: Handle, organization_id: str) -> OrganizationRecord | None:
    rows = list(db.query("SELECT * FROM organizations WHERE id = ?", [organization_id]))
    return _from_row(rows[0]) if rows else None


def default(db: Handle) -> OrganizationRecord:
    """The organisation migration 4 created for the data that existed before."""
    found = get(db, DEFAULT_ORGANIZATION_ID)
    assert found is not None, "migration 4 creates the default organisation"
    return found


def memberships(db: Handle, user_id: str) -> list[Membership]:
    """Every organisation where the user is an active member, oldest first."""
    rows = db.query(
        "SELECT o.*, m.id AS member_id, m.role AS member_role FROM members m "
        "JOIN organizations o ON o.id = m.organization_id "
        "WHERE m.user_id = ? AND m.status = 'active' ORDER BY o.created_at, o.id",
        [user_id],
    )
    return [Membership(_from_row(row), row["member_id"], row["member_role"]) for row in rows]
