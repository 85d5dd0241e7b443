"""Service accounts: a named role with a workspace scope, acting through one API key.

The account's key is an ordinary `api_keys` row carrying the role and scope (see
migration 4), so the key ring needs no join to authenticate it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

import attrs

from store import columns
from store.handle import Handle
from store.members import Role


def new_service_account_id() -> str:
    return columns.new_id("sa_")


@attrs.frozen(kw_only=True)
class ServiceAccountRecord:
    id: str = attrs.field(factory=new_service_account_id)
    organization_id: str
    name: str
    role: Role
    workspaces: tuple[str, ...] = attrs.field(converter=columns.str_tuple)
    created_at: datetime


def _from_row(row: Mapping[str, Any]) -> ServiceAccountRecord:
    return ServiceAccountRecord(
        id=row["id"],
        organization_id=row["organization_id"],
        name=row["name"],
        role=cast(Role, row["role"]),
        workspaces=columns.json_strings(row["workspaces"]),
        created_at=columns.from_iso(row["created_at"]),
    )


def insert(db: Handle, record: ServiceAccountRecord) -> ServiceAccountRecord:
    columns.insert_row(
        db,
        "service_accounts",
        {
            "id": record.id,
            "organization_id": record.organization_id,
            "name": record.name,
            "role": record.role,
            "workspaces": columns.to_json(record.workspaces),
            "created_at": columns.to_iso(record.created_at),
        },
    )
    return record


def get(db: Handle, account_id: str, organization_id: str) -> ServiceAccountRecord | None:
    rows = list(
        db.query(
            "SELECT * FROM service_accounts WHERE id = ? AND organization_id = ?",
            [account_id, organization_id],
        )
    )
    return _from_row(rows[0]) if rows else None


def list_accounts(db: Handle, organization_id: str) -> list[ServiceAccountRecord]:
    rows = db.query(
        "SELECT * FROM service_accounts WHERE organization_id = ? ORDER BY created_at, id",
        [organization_id],
    )
    return [_from_row(row) for row in rows]


def delete(db: Handle, account_id: str) -> list[str]:
    """Remove the account and its keys (cascade); returns the removed keys' hashes."""
    hashes = [
        str(row[0])
        for row in db.execute(
            "SELECT key_hash FROM api_keys WHERE service_account_id = ?", [account_id]
        ).fetchall()
    ]
    db.execute("DELETE FROM service_accounts WHERE id = ?", [account_id])
    return hashes
