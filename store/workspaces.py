"""Workspaces: the unit of isolation inside an organisation.

Keys, provider configurations and routing rules belong to one workspace. Migration 1
creates the `default` workspace (where the bootstrap admin key lives); migration 4 puts it,
with every existing workspace, into the default organisation.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from store import columns
from store.handle import Handle

DEFAULT_WORKSPACE_ID = "default"
DEFAULT_ORGANIZATION_ID = "org_default"


def new_workspace_id() -> str:
    return columns.new_id("ws_")


@attrs.frozen(kw_only=True)
class WorkspaceRecord:
    id: str = attrs.field(factory=new_workspace_id)
    name: str
    description: str = ""
    created_at: datetime
    organization_id: str = DEFAULT_ORGANIZATION_ID
    # Whether its request log keeps bodies (`store.request_log`; migration 23).
    request_log_bodies: bool = False


@attrs.frozen
class Holdings:
    """What a workspace still holds: deleting it would remove these."""

    api_keys: int
    routing_rules: int
    providers: int


def _from_row(row: Mapping[str, Any]) -> WorkspaceRecord:
    return WorkspaceRecord(
        id=row["id"],
        name=row["name"],
        description=row["description"],
        created_at=columns.from_iso(row["created_at"]),
        organization_id=row["organization_id"],
        request_log_bodies=bool(row.get("request_log_bodies", 0)),
    )


def insert(db: Handle, record: WorkspaceRecord) -> WorkspaceRecord:
    """Store a new workspace. Raises sqlite3.IntegrityError on a duplicate id."""
    columns.insert_row(
        db,
        "workspaces",
        {
            "id": record.id,
            "name": record.name,
            "description": record.description,
            "created_at": columns.to_iso(record.created_at),
            "organization_id": record.organization_id,
        },
    )
    return record


def get(
    db: Handle, workspace_id: str, organization_id: str | None = None
) -> WorkspaceRecord | None:
    """The workspace; with `organization_id`, only if it belongs to that organisation."""
    rows = list(db.query("SELECT * FROM workspaces WHERE id = ?", [workspace_id]))
    if not rows:
        return None
    record = _from_row(rows[0])
    if organization_id is not None and record.organization_id != organization_id:
        return None
    return record


def list_workspaces(db: Handle, organization_id: str | None = None) -> list[WorkspaceRecord]:
    """Every workspace (of one organisation, if given), oldest first."""
    if organization_id is None:
        rows = db.query("SELECT * FROM workspaces ORDER BY created_at, id")
    else:
        rows = db.query(
            "SELECT * FROM workspaces WHERE organization_id = ? ORDER BY created_at, id",
            [organization_id],
        )
    return [_from_row(row) for row in rows]


def update(
    db: Handle, workspace_id: str, *, name: str | None, description: str | None
) -> WorkspaceRecord | None:
    """Change the name and/or description; None if there is no such workspace."""
    current = get(db, workspace_id)
    if current is None:
        return None
    changed = attrs.evolve(
        current,
        name=current.name if name is None else name,
        description=current.description if description is None else description,
    )
    db.execute(
        "UPDATE workspaces SET name = ?, description = ? WHERE id = ?",
        [changed.name, changed.description, workspace_id],
    )
    return changed


def holdings(db: Handle, workspace_id: str) -> Holdings:
    """Counts of the workspace's active keys, routing rules and provider configurations."""

    def count(sql: str) -> int:
        return int(db.execute(sql, [workspace_id]).fetchone()[0])

    return Holdings(
        api_keys=count(
            "SELECT count(*) FROM api_keys WHERE workspace_id = ? AND status = 'active'"
        ),
        routing_rules=count("SELECT count(*) FROM routing_rules WHERE workspace_id = ?"),
        providers=count("SELECT count(*) FROM providers WHERE workspace_id = ?"),
    )


def delete(db: Handle, workspace_id: str) -> bool:
    """Remove a workspace with its keys and provider configurations (cascade); usage
    records and audit events stay. True if it existed."""
    cursor = db.execute("DELETE FROM workspaces WHERE id = ?", [workspace_id])
    return cursor.rowcount > 0
