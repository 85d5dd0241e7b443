"""The audit log: who did what to which resource, appended before the response is sent.

Events are never updated or deleted by the gateway. They keep no foreign keys, so the
history outlives the keys, members and workspaces it mentions.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs
import sqlite_utils

from store import columns

DEFAULT_LIMIT = 100


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


def append(db: sqlite_utils.Database, event: AuditEvent) -> None:
    """Record an event (committed when this returns)."""
    db.table("audit_events").insert(_to_row(event))


def list_events(
    db: sqlite_utils.Database, workspace_id: str, limit: int = DEFAULT_LIMIT
) -> list[AuditEvent]:
    """A workspace's most recent events, newest first (insertion order breaks ties)."""
    rows = db.query(
        "SELECT * FROM audit_events WHERE workspace_id = ? "
        "ORDER BY timestamp DESC, rowid DESC LIMIT ?",
        [workspace_id, limit],
    )
    return [_from_row(row) for row in rows]
