"""The audit log: who did what to which resource, written in the change's transaction.

Events are never updated or deleted by the gateway. They keep no foreign keys, so the
history outlives the keys, members and workspaces it mentions. An event belongs to an
organisation and either to one workspace (keys, providers, rules) or, with
`workspace_id` = `ORGANIZATION_WIDE`, to the whole organisation (members, workspaces,
service accounts). Insertion order (the rowid) is the log's order: one writer appends.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from store import columns
from store.handle import Handle
from store.workspaces import DEFAULT_ORGANIZATION_ID

DEFAULT_LIMIT = 100
ORGANIZATION_WIDE = ""


def new_event_id() -> str:
    return columns.new_id("evt_")


@attrs.frozen(kw_only=True)
class AuditEvent:
    """One audited action, e.g. type `api_key.created` with the key as target."""

    id: str = attrs.field(factory=new_event_id)
    workspace_id: str
    type: str
    actor_id: str | None
    actor_email: str | None = None
    target_type: str | None = None
    target_id: str | None = None
    target_email: str | None = None
    ip_address: str | None = None
    timestamp: datetime
    details: Mapping[str, Any] = attrs.field(factory=dict, converter=columns.plain_dict)
    organization_id: str = DEFAULT_ORGANIZATION_ID


@attrs.frozen(kw_only=True)
class AuditQuery:
    """A page of an organisation's log as one workspace's caller may see it."""

    organization_id: str
    workspace_id: str
    limit: int = DEFAULT_LIMIT
    type: str | None = None
    since: datetime | None = None
    before_id: str | None = None
    organization_wide: bool = True
    """Include the organisation-wide events (for callers that reach every workspace)."""


def _to_row(event: AuditEvent) -> dict[str, Any]:
    row = attrs.asdict(event, recurse=False)
    row["timestamp"] = columns.to_iso(event.timestamp)
    row["details"] = columns.to_json(event.details)
    return row


def _from_row(row: Mapping[str, Any]) -> AuditEvent:
    fields = {name: row[name] for name in attrs.fields_dict(AuditEvent)}
    fields["timestamp"] = columns.from_iso(row["timestamp"])
    fields["details"] = columns.json_object(row["details"])
    return AuditEvent(**fields)


def append(db: Handle, event: AuditEvent) -> None:
    """Record an event (committed when this returns)."""
    columns.insert_row(db, "audit_events", _to_row(event))


def list_events(db: Handle, workspace_id: str, limit: int = DEFAULT_LIMIT) -> list[AuditEvent]:
    """A workspace's most recent events, newest first (insertion order breaks ties)."""
    rows = db.query(
        "SELECT * FROM audit_events WHERE workspace_id = ? "
        "ORDER BY timestamp DESC, rowid DESC LIMIT ?",
        [workspace_id, limit],
    )
    return [_from_row(row) for row in rows]


def query(db: Handle, q: AuditQuery) -> list[AuditEvent]:
    """The organisation-wide events and the workspace's own, newest first.

    `before_id` (a cursor: the last id of the previous page) continues after that event;
    an id the caller may not see matches nothing, so the page is empty.
    """
    shared = ORGANIZATION_WIDE if q.organization_wide else q.workspace_id
    where = ["organization_id = ?", "workspace_id IN (?, ?)"]
    params: list[Any] = [q.organization_id, q.workspace_id, shared]
    if q.type is not None:
        where.append("type = ?")
        params.append(q.type)
    if q.since is not None:
        where.append("timestamp >= ?")
        params.append(columns.to_iso(q.since))
    if q.before_id is not None:
        where.append(
            "rowid < coalesce((SELECT rowid FROM audit_events WHERE id = ? "
            "AND organization_id = ? AND workspace_id IN (?, ?)), 0)"
        )
        params += [q.before_id, q.organization_id, q.workspace_id, shared]
    sql = f"SELECT * FROM audit_events WHERE {' AND '.join(where)} ORDER BY rowid DESC LIMIT ?"
    return [_from_row(row) for row in db.query(sql, [*params, q.limit])]
