"""Voice mappings: a workspace's named custom voices, each a voice id per provider.

Names are unique within a workspace (a UNIQUE index, migration 5); `NameTakenError` is
raised inside the writing transaction so the gateway can answer 409 rather than fail.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs
import sqlite_utils

from store import columns


class NameTakenError(Exception):
    """Another mapping of the workspace already has this name."""


def new_mapping_id() -> str:
    return columns.new_id("vm_")


@attrs.frozen(kw_only=True)
class VoiceMappingRecord:
    id: str = attrs.field(factory=new_mapping_id)
    workspace_id: str
    name: str
    description: str = ""
    mappings: Mapping[str, str] = attrs.field(factory=dict, converter=columns.plain_dict)
    default_settings: Mapping[str, Any] = attrs.field(factory=dict, converter=columns.plain_dict)
    created_at: datetime
    updated_at: datetime


def _to_row(record: VoiceMappingRecord) -> dict[str, Any]:
    row = attrs.asdict(record, recurse=False)
    row["mappings"] = columns.to_json(record.mappings)
    row["default_settings"] = columns.to_json(record.default_settings)
    row["created_at"] = columns.to_iso(record.created_at)
    row["updated_at"] = columns.to_iso(record.updated_at)
    return row


def _from_row(row: Mapping[str, Any]) -> VoiceMappingRecord:
    return VoiceMappingRecord(
        id=row["id"],
        workspace_id=row["workspace_id"],
        name=row["name"],
        description=row["description"],
        mappings=columns.json_object(row["mappings"]),
        default_settings=columns.json_object(row["default_settings"]),
        created_at=columns.from_iso(row["created_at"]),
        updated_at=columns.from_iso(row["updated_at"]),
    )


def insert(db: sqlite_utils.Database, record: VoiceMappingRecord) -> None:
    try:
        with db.atomic():
            db.table("voice_mappings").insert(_to_row(record))
    except sqlite3.IntegrityError as exc:
        raise NameTakenError(record.name) from exc


def replace(db: sqlite_utils.Database, record: VoiceMappingRecord) -> None:
    """Store a changed mapping (same id and workspace)."""
    try:
        with db.atomic():
            db.execute(
                "UPDATE voice_mappings SET name = ?, description = ?, mappings = ?, "
                "default_settings = ?, updated_at = ? WHERE id = ? AND workspace_id = ?",
                [
                    record.name,
                    record.description,
                    columns.to_json(record.mappings),
                    columns.to_json(record.default_settings),
                    columns.to_iso(record.updated_at),
                    record.id,
                    record.workspace_id,
                ],
            )
    except sqlite3.IntegrityError as exc:
        raise NameTakenError(record.name) from exc


def get(db: sqlite_utils.Database, workspace_id: str, mapping_id: str) -> VoiceMappingRecord | None:
    """The mapping, or None when it does not exist in this workspace (another's is None)."""
    rows = list(
        db.query(
            "SELECT * FROM voice_mappings WHERE id = ? AND workspace_id = ?",
            [mapping_id, workspace_id],
        )
    )
    return _from_row(rows[0]) if rows else None


def by_name(db: sqlite_utils.Database, workspace_id: str, name: str) -> VoiceMappingRecord | None:
    rows = list(
        db.query(
            "SELECT * FROM voice_mappings WHERE workspace_id = ? AND name = ?",
            [workspace_id, name],
        )
    )
    return _from_row(rows[0]) if rows else None


def list_for_workspace(db: sqlite_utils.Database, workspace_id: str) -> list[VoiceMappingRecord]:
    rows = db.query(
        "SELECT * FROM voice_mappings WHERE workspace_id = ? ORDER BY created_at, id",
        [workspace_id],
    )
    return [_from_row(row) for row in rows]


def delete(db: sqlite_utils.Database, workspace_id: str, mapping_id: str) -> bool:
    with db.atomic():
        cursor = db.execute(
            "DELETE FROM voice_mappings WHERE id = ? AND workspace_id = ?",
            [mapping_id, workspace_id],
        )
    return cursor.rowcount > 0
