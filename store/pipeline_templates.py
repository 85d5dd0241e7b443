"""Custom pipeline templates: a workspace's named stage settings (recognition, language
model, speech) for `POST /v1/audio/pipelines`.

The stage settings are one JSON column (`stages`: `stt`, `llm`, `tts`), validated by the
gateway before they are written. Names are unique within a workspace (a UNIQUE index,
migration 13); `NameTakenError` is raised inside the writing transaction so the gateway
can answer 409.
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
    """Another template of the workspace already has this name."""


def new_template_id() -> str:
    return columns.new_id("pt_")


@attrs.frozen(kw_only=True)
class PipelineTemplateRecord:
    id: str = attrs.field(factory=new_template_id)
    workspace_id: str
    name: str
    description: str = ""
    stages: Mapping[str, Any] = attrs.field(factory=dict, converter=columns.plain_dict)
    created_at: datetime
    updated_at: datetime


def _to_row(record: PipelineTemplateRecord) -> dict[str, Any]:
    row = attrs.asdict(record, recurse=False)
    row["stages"] = columns.to_json(record.stages)
    row["created_at"] = columns.to_iso(record.created_at)
    row["updated_at"] = columns.to_iso(record.updated_at)
    return row


def _from_row(row: Mapping[str, Any]) -> PipelineTemplateRecord:
    return PipelineTemplateRecord(
        id=row["id"],
        workspace_id=row["workspace_id"],
        name=row["name"],
        description=row["description"],
        stages=columns.json_object(row["stages"]),
        created_at=columns.from_iso(row["created_at"]),
        updated_at=columns.from_iso(row["updated_at"]),
    )


def insert(db: sqlite_utils.Database, record: PipelineTemplateRecord) -> None:
    try:
        with db.atomic():
            db.table("pipeline_templates").insert(_to_row(record))
    except sqlite3.IntegrityError as exc:
        raise NameTakenError(record.name) from exc


def replace(db: sqlite_utils.Database, record: PipelineTemplateRecord) -> None:
    """Store a changed template (same id and workspace)."""
    try:
        with db.atomic():
            db.execute(
                "UPDATE pipeline_templates SET name = ?, description = ?, stages = ?, "
                "updated_at = ? WHERE id = ? AND workspace_id = ?",
                [
                    record.name,
                    record.description,
                    columns.to_json(record.stages),
                    columns.to_iso(record.updated_at),
                    record.id,
                    record.workspace_id,
                ],
            )
    except sqlite3.IntegrityError as exc:
        raise NameTakenError(record.name) from exc


def get(
    db: sqlite_utils.Database, workspace_id: str, template_id: str
) -> PipelineTemplateRecord | None:
    """The template by id or name, or None when this workspace has none (another
    workspace's is None too)."""
    rows = list(
        db.query(
            "SELECT * FROM pipeline_templates WHERE workspace_id = ? AND (id = ? OR name = ?) "
            "ORDER BY id = ? DESC LIMIT 1",
            [workspace_id, template_id, template_id, template_id],
        )
    )
    return _from_row(rows[0]) if rows else None


def list_for_workspace(
    db: sqlite_utils.Database, workspace_id: str
) -> list[PipelineTemplateRecord]:
    rows = db.query(
        "SELECT * FROM pipeline_templates WHERE workspace_id = ? ORDER BY created_at, id",
        [workspace_id],
    )
    return [_from_row(row) for row in rows]


def delete(db: sqlite_utils.Database, workspace_id: str, template_id: str) -> bool:
    with db.atomic():
        cursor = db.execute(
            "DELETE FROM pipeline_templates WHERE id = ? AND workspace_id = ?",
            [template_id, workspace_id],
        )
    return cursor.rowcount > 0
