"""Incidents and their updates: what the status page shows and what SLA credits count.

An incident belongs to one workspace (providers are configured per workspace). It is open
while `resolved_at` is null; resolved incidents are kept, since the uptime of a period is
computed from them. `started_epoch`/`resolved_epoch` duplicate the times as numbers for the
range queries behind uptime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from store import columns
from store.handle import Handle


def new_incident_id() -> str:
    return columns.new_id("inc_")


@attrs.frozen(kw_only=True)
class IncidentRecord:
    id: str
    workspace_id: str
    title: str
    status: str
    severity: str
    affected_services: tuple[str, ...] = attrs.field(converter=columns.str_tuple)
    message: str
    source: str
    created_at: datetime
    updated_at: datetime
    resolved_at: datetime | None = None

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None


@attrs.frozen
class IncidentUpdate:
    status: str
    severity: str
    message: str
    created_at: datetime


def _from_row(row: Mapping[str, Any]) -> IncidentRecord:
    return IncidentRecord(
        id=row["id"],
        workspace_id=row["workspace_id"],
        title=row["title"],
        status=row["status"],
        severity=row["severity"],
        affected_services=columns.json_strings(row["affected_services"]),
        message=row["message"],
        source=row["source"],
        created_at=columns.from_iso(row["created_at"]),
        updated_at=columns.from_iso(row["updated_at"]),
        resolved_at=columns.from_iso_or_none(row["resolved_at"]),
    )


def insert(db: Handle, record: IncidentRecord) -> IncidentRecord:
    """Store a new incident and its first update, in one transaction."""
    with db.atomic():
        db.execute(
            "INSERT INTO incidents (id, workspace_id, title, status, severity, "
            "affected_services, message, source, created_at, updated_at, resolved_at, "
            "started_epoch, resolved_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                record.id,
                record.workspace_id,
                record.title,
                record.status,
                record.severity,
                columns.to_json(list(record.affected_services)),
                record.message,
                record.source,
                columns.to_iso(record.created_at),
                columns.to_iso(record.updated_at),
                columns.to_iso_or_none(record.resolved_at),
                columns.to_epoch(record.created_at),
                None if record.resolved_at is None else columns.to_epoch(record.resolved_at),
            ],
        )
        _add_update(db, record)
    return record


def save(db: Handle, record: IncidentRecord) -> IncidentRecord:
    """Write an incident's new state (status, severity, message, resolution) and log it."""
    with db.atomic():
        db.execute(
            "UPDATE incidents SET title = ?, status = ?, severity = ?, affected_services = ?, "
            "message = ?, updated_at = ?, resolved_at = ?, resolved_epoch = ? WHERE id = ?",
            [
                record.title,
                record.status,
                record.severity,
                columns.to_json(list(record.affected_services)),
                record.message,
                columns.to_iso(record.updated_at),
                columns.to_iso_or_none(record.resolved_at),
                None if record.resolved_at is None else columns.to_epoch(record.resolved_at),
                record.id,
            ],
        )
        _add_update(db, record)
    return record


def _add_update(db: Handle, record: IncidentRecord) -> None:
    db.execute(
        "INSERT INTO incident_updates (incident_id, status, severity, message, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            record.id,
            record.status,
            record.severity,
            record.message,
            columns.to_iso(record.updated_at),
        ],
    )


def get(db: Handle, incident_id: str, workspace_id: str) -> IncidentRecord | None:
    """The incident, or None when it is unknown or another workspace's."""
    rows = list(
        db.query(
            "SELECT * FROM incidents WHERE id = ? AND workspace_id = ?",
            [incident_id, workspace_id],
        )
    )
    return _from_row(rows[0]) if rows else None


def updates(db: Handle, incident_id: str) -> list[IncidentUpdate]:
    rows = db.query(
        "SELECT * FROM incident_updates WHERE incident_id = ? ORDER BY created_at, rowid",
        [incident_id],
    )
    return [
        IncidentUpdate(r["status"], r["severity"], r["message"], columns.from_iso(r["created_at"]))
        for r in rows
    ]


def list_open(db: Handle, workspace_id: str | None = None) -> list[IncidentRecord]:
    """Open incidents, oldest first: of one workspace, or of all (for the monitor)."""
    where, params = "resolved_epoch IS NULL", []
    if workspace_id is not None:
        where += " AND workspace_id = ?"
        params.append(workspace_id)
    rows = db.query(f"SELECT * FROM incidents WHERE {where} ORDER BY started_epoch", params)
    return [_from_row(row) for row in rows]


def list_recent(db: Handle, workspace_id: str, *, limit: int) -> list[IncidentRecord]:
    """A workspace's incidents, newest first."""
    rows = db.query(
        "SELECT * FROM incidents WHERE workspace_id = ? ORDER BY started_epoch DESC LIMIT ?",
        [workspace_id, limit],
    )
    return [_from_row(row) for row in rows]


def overlapping(
    db: Handle, workspace_id: str, *, start: datetime, end: datetime
) -> list[IncidentRecord]:
    """A workspace's incidents that were open at some moment of [start, end)."""
    rows = db.query(
        "SELECT * FROM incidents WHERE workspace_id = ? AND started_epoch < ? "
        "AND (resolved_epoch IS NULL OR resolved_epoch > ?) ORDER BY started_epoch",
        [workspace_id, columns.to_epoch(end), columns.to_epoch(start)],
    )
    return [_from_row(row) for row in rows]


def find_many(db: Handle, workspace_id: str, ids: Sequence[str]) -> list[IncidentRecord]:
    """Those of `ids` that are this workspace's incidents."""
    if not ids:
        return []
    marks = ", ".join("?" for _ in ids)
    rows = db.query(
        f"SELECT * FROM incidents WHERE workspace_id = ? AND id IN ({marks})",
        [workspace_id, *ids],
    )
    return [_from_row(row) for row in rows]
