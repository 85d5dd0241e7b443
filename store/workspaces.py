"""Workspaces: the unit of isolation. Keys and provider configurations belong to one.

Migration 1 creates the `default` workspace, where the bootstrap admin key lives.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs
import sqlite_utils

from store import columns

DEFAULT_WORKSPACE_ID = "default"


def new_workspace_id() -> str:
    return columns.new_id("ws_")


@attrs.frozen(kw_only=True)
class WorkspaceRecord:
    id: str = attrs.field(factory=new_workspace_id)
    name: str
    description: str = ""
    created_at: datetime


def _from_row(row: Mapping[str, Any]) -> WorkspaceRecord:
    return WorkspaceRecord(
        id=row["id"],
        name=row["name"],
        description=row["description"],
        created_at=columns.from_iso(row["created_at"]),
    )


def insert(db: sqlite_utils.Database, record: WorkspaceRecord) -> None:
    """Store a new workspace. Raises sqlite3.IntegrityError on a duplicate id."""
    db.table("workspaces").insert(
        {
            "id": record.id,
            "name": record.name,
            "description": record.description,
            "created_at": columns.to_iso(record.created_at),
        }
    )


def get(db: sqlite_utils.Database, workspace_id: str) -> WorkspaceRecord | None:
    rows = list(db.query("SELECT * FROM workspaces WHERE id = ?", [workspace_id]))
    return _from_row(rows[0]) if rows else None


def list_workspaces(db: sqlite_utils.Database) -> list[WorkspaceRecord]:
    """Every workspace, oldest first."""
    return [_from_row(row) for row in db.query("SELECT * FROM workspaces ORDER BY created_at, id")]


def delete(db: sqlite_utils.Database, workspace_id: str) -> bool:
    """Remove a workspace with its keys and provider configurations (cascade); usage
    records and audit events stay. True if it existed."""
    cursor = db.execute("DELETE FROM workspaces WHERE id = ?", [workspace_id])
    return cursor.rowcount > 0
