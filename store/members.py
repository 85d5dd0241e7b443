"""Users (people, across organisations) and members (a user's role in one organisation).

Passwords arrive here already hashed (Argon2id, see `gateway.organization.secrets`);
invitation tokens as SHA-256 digests. Nothing secret is stored in clear.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, cast

import attrs

from store import columns
from store.handle import Handle

Role = Literal["owner", "admin", "developer", "viewer"]
MemberStatus = Literal["invited", "active"]


def new_user_id() -> str:
    return columns.new_id("usr_")


def new_member_id() -> str:
    return columns.new_id("mem_")


@attrs.frozen(kw_only=True)
class UserRecord:
    id: str = attrs.field(factory=new_user_id)
    email: str
    password_hash: str | None = None
    created_at: datetime


@attrs.frozen(kw_only=True)
class MemberRecord:
    id: str = attrs.field(factory=new_member_id)
    organization_id: str
    user_id: str
    email: str
    role: Role
    status: MemberStatus
    workspaces: tuple[str, ...] = attrs.field(default=(), converter=columns.str_tuple)
    invitation_hash: str | None = None
    invitation_expires_at: datetime | None = None
    created_at: datetime
    joined_at: datetime | None = None


def _user(row: Mapping[str, Any]) -> UserRecord:
    return UserRecord(
        id=row["id"],
        email=row["email"],
        password_hash=row["password_hash"],
        created_at=columns.from_iso(row["created_at"]),
    )


def _member(row: Mapping[str, Any]) -> MemberRecord:
    return MemberRecord(
        id=row["id"],
        organization_id=row["organization_id"],
        user_id=row["user_id"],
        email=row["email"],
        role=cast(Role, row["role"]),
        status=cast(MemberStatus, row["status"]),
        workspaces=columns.json_strings(row["workspaces"]),
        invitation_hash=row["invitation_hash"],
        invitation_expires_at=columns.from_iso_or_none(row["invitation_expires_at"]),
        created_at=columns.from_iso(row["created_at"]),
        joined_at=columns.from_iso_or_none(row["joined_at"]),
    )


_MEMBERS = "SELECT m.*, u.email FROM members m JOIN users u ON u.id = m.user_id"


def user_by_email(db: Handle, email: str) -> UserRecord | None:
    rows = list(db.query("SELECT * FROM users WHERE email = ?", [email]))
    return _user(rows[0]) if rows else None


def user_by_id(db: Handle, user_id: str) -> UserRecord | None:
    rows = list(db.query("SELECT * FROM users WHERE id = ?", [user_id]))
    return _user(rows[0]) if rows else None


def ensure_user(db: Handle, email: str, now: datetime) -> UserRecord:
    """The user with this (normalised) email, created without a password if new."""
    found = user_by_email(db, email)
    if found is not None:
        return found
    record = UserRecord(email=email, created_at=now)
    columns.insert_row(
        db,
        "users",
        {"id": record.id, "email": email, "password_hash": None, "created_at": columns.to_iso(now)},
    )
    return record


def set_password(db: Handle, user_id: str, password_hash: str) -> None:
    db.execute("UPDATE users SET password_hash = ? WHERE id = ?", [password_hash, user_id])


def insert_member(db: Handle, record: MemberRecord) -> MemberRecord:
    """Store a membership. Raises sqlite3.IntegrityError if the user is already a member."""
    columns.insert_row(
        db,
        "members",
        {
            "id": record.id,
            "organization_id": record.organization_id,
            "user_id": record.user_id,
            "role": record.role,
            "status": record.status,
            "workspaces": columns.to_json(record.workspaces),
            "invitation_hash": record.invitation_hash,
            "invitation_expires_at": columns.to_iso_or_none(record.invitation_expires_at),
            "created_at": columns.to_iso(record.created_at),
            "joined_at": columns.to_iso_or_none(record.joined_at),
        },
    )
    return record


def get_member(db: Handle, member_id: str, organization_id: str) -> MemberRecord | None:
    """The member with this id in this organisation (a foreign id finds nothing)."""
    rows = list(
        db.query(
            f"{_MEMBERS} WHERE m.id = ? AND m.organization_id = ?", [member_id, organization_id]
        )
    )
    return _member(rows[0]) if rows else None


def member_of(db: Handle, user_id: str, organization_id: str) -> MemberRecord | None:
    rows = list(
        db.query(
            f"{_MEMBERS} WHERE m.user_id = ? AND m.organization_id = ?", [user_id, organization_id]
        )
    )
    return _member(rows[0]) if rows else None


def active_memberships(db: Handle, user_id: str) -> list[MemberRecord]:
    """The user's active memberships, oldest first."""
    rows = db.query(
        f"{_MEMBERS} WHERE m.user_id = ? AND m.status = 'active' ORDER BY m.created_at, m.id",
        [user_id],
    )
    return [_member(row) for row in rows]


def list_members(db: Handle, organization_id: str) -> list[MemberRecord]:
    rows = db.query(
        f"{_MEMBERS} WHERE m.organization_id = ? ORDER BY m.created_at, m.id", [organization_id]
    )
    return [_member(row) for row in rows]


def by_invitation(db: Handle, invitation_hash: str) -> MemberRecord | None:
    rows = list(db.query(f"{_MEMBERS} WHERE m.invitation_hash = ?", [invitation_hash]))
    return _member(rows[0]) if rows else None


def activate(db: Handle, member_id: str, at: datetime) -> None:
    """Accept an invitation: the member is active and the invitation unusable."""
    db.execute(
        "UPDATE members SET status = 'active', joined_at = ?, invitation_hash = NULL, "
        "invitation_expires_at = NULL WHERE id = ?",
        [columns.to_iso(at), member_id],
    )


def set_role(db: Handle, member_id: str, role: Role) -> None:
    db.execute("UPDATE members SET role = ? WHERE id = ?", [role, member_id])


def remove(db: Handle, member_id: str) -> None:
    db.execute("DELETE FROM members WHERE id = ?", [member_id])


def count_owners(db: Handle, organization_id: str) -> int:
    """Active owners of the organisation (the last one cannot leave or be demoted)."""
    row = db.execute(
        "SELECT count(*) FROM members WHERE organization_id = ? AND role = 'owner' "
        "AND status = 'active'",
        [organization_id],
    ).fetchone()
    return int(row[0])
