"""Usage alerts of a workspace, their firing state and the history of their transitions.

`state` (`ok` or `firing`) is kept with the alert so that an alert fires once when its
condition becomes true and resolves once when it stops, across restarts too.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from store import columns
from store.handle import Handle


def new_alert_id() -> str:
    return columns.new_id("alert_")


@attrs.frozen(kw_only=True)
class AlertRecord:
    id: str
    workspace_id: str
    name: str
    metric: str
    operator: str
    threshold: float
    window_minutes: int
    notify_email: tuple[str, ...] = attrs.field(converter=columns.str_tuple)
    notify_webhook: str | None
    encrypted_secret: str | None = attrs.field(repr=False)
    state: str
    last_value: float | None
    last_evaluated_at: datetime | None
    last_changed_at: datetime | None
    created_at: datetime


@attrs.frozen
class AlertEvent:
    kind: str
    value: float | None
    email_status: str
    created_at: datetime


def _from_row(row: Mapping[str, Any]) -> AlertRecord:
    fields = dict(row)
    fields["notify_email"] = columns.json_strings(row["notify_email"])
    fields["created_at"] = columns.from_iso(row["created_at"])
    fields["last_evaluated_at"] = columns.from_iso_or_none(row["last_evaluated_at"])
    fields["last_changed_at"] = columns.from_iso_or_none(row["last_changed_at"])
    return AlertRecord(**fields)


def insert(db: Handle, record: AlertRecord) -> AlertRecord:
    row = attrs.asdict(record)
    row["notify_email"] = columns.to_json(list(record.notify_email))
    row["created_at"] = columns.to_iso(record.created_at)
    row["last_evaluated_at"] = columns.to_iso_or_none(record.last_evaluated_at)
    row["last_changed_at"] = columns.to_iso_or_none(record.last_changed_at)
    columns.insert_row(db, "alerts", row)
    return record


def get(db: Handle, alert_id: str, workspace_id: str) -> AlertRecord | None:
    rows = list(
        db.query("SELECT * FROM alerts WHERE id = ? AND workspace_id = ?", [alert_id, workspace_id])
    )
    return _from_row(rows[0]) if rows else None


def list_alerts(db: Handle, workspace_id: str | None = None) -> list[AlertRecord]:
    """A workspace's alerts, or every alert (for the evaluator), oldest first."""
    if workspace_id is None:
        rows = db.query("SELECT * FROM alerts ORDER BY created_at, id")
    else:
        rows = db.query(
            "SELECT * FROM alerts WHERE workspace_id = ? ORDER BY created_at, id", [workspace_id]
        )
    return [_from_row(row) for row in rows]


def delete(db: Handle, alert_id: str, workspace_id: str) -> bool:
    with db.atomic():
        cursor = db.execute(
            "DELETE FROM alerts WHERE id = ? AND workspace_id = ?", [alert_id, workspace_id]
        )
    return bool(cursor.rowcount)


def record_evaluation(db: Handle, alert_id: str, *, value: float | None, now: datetime) -> None:
    with db.atomic():
        db.execute(
            "UPDATE alerts SET last_value = ?, last_evaluated_at = ? WHERE id = ?",
            [value, columns.to_iso(now), alert_id],
        )


def record_transition(
    db: Handle,
    alert_id: str,
    *,
    state: str,
    kind: str,
    value: float | None,
    email_status: str,
    now: datetime,
) -> None:
    """The alert changed state: store the new state and the event, in one transaction."""
    with db.atomic():
        db.execute(
            "UPDATE alerts SET state = ?, last_value = ?, last_evaluated_at = ?, "
            "last_changed_at = ? WHERE id = ?",
            [state, value, columns.to_iso(now), columns.to_iso(now), alert_id],
        )
        db.execute(
            "INSERT INTO alert_events (alert_id, kind, value, email_status, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [alert_id, kind, value, email_status, columns.to_iso(now)],
        )


def events(db: Handle, alert_id: str) -> list[AlertEvent]:
    rows = db.query(
        "SELECT * FROM alert_events WHERE alert_id = ? ORDER BY created_at, rowid", [alert_id]
    )
    return [
        AlertEvent(r["kind"], r["value"], r["email_status"], columns.from_iso(r["created_at"]))
        for r in rows
    ]
