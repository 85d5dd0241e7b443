"""Status-webhook subscriptions and the delivery log of every signed notification.

A subscription's signing secret is stored encrypted (the caller passes ciphertext); the
delivery log holds one row per notification (status webhook event or alert), updated after
each attempt, so its owner can see what was sent, when, and how the receiver answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from store import columns
from store.handle import Handle


def new_webhook_id() -> str:
    return columns.new_id("whk_")


def new_delivery_id() -> str:
    return columns.new_id("dlv_")


@attrs.frozen(kw_only=True)
class WebhookRecord:
    id: str
    workspace_id: str
    url: str
    events: tuple[str, ...] = attrs.field(converter=columns.str_tuple)
    encrypted_secret: str = attrs.field(repr=False)
    created_at: datetime


@attrs.frozen(kw_only=True)
class DeliveryRecord:
    id: str
    workspace_id: str
    source_kind: str
    source_id: str
    event: str
    url: str
    payload: str
    status: str
    attempts: int
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    delivered_at: datetime | None


def _webhook(row: Mapping[str, Any]) -> WebhookRecord:
    return WebhookRecord(
        id=row["id"],
        workspace_id=row["workspace_id"],
        url=row["url"],
        events=columns.json_strings(row["events"]),
        encrypted_secret=row["encrypted_secret"],
        created_at=columns.from_iso(row["created_at"]),
    )


def _delivery(row: Mapping[str, Any]) -> DeliveryRecord:
    fields = columns.without_rowid(row)
    for name in ("created_at", "updated_at"):
        fields[name] = columns.from_iso(row[name])
    fields["delivered_at"] = columns.from_iso_or_none(row["delivered_at"])
    return DeliveryRecord(**fields)


def insert_webhook(db: Handle, record: WebhookRecord) -> WebhookRecord:
    with db.atomic():
        db.execute(
            "INSERT INTO status_webhooks (id, workspace_id, url, events, encrypted_secret, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [
                record.id,
                record.workspace_id,
                record.url,
                columns.to_json(list(record.events)),
                record.encrypted_secret,
                columns.to_iso(record.created_at),
            ],
        )
    return record


def list_webhooks(db: Handle, workspace_id: str) -> list[WebhookRecord]:
    rows = db.query(
        "SELECT * FROM status_webhooks WHERE workspace_id = ? ORDER BY created_at, id",
        [workspace_id],
    )
    return [_webhook(row) for row in rows]


def get_webhook(db: Handle, webhook_id: str, workspace_id: str) -> WebhookRecord | None:
    rows = list(
        db.query(
            "SELECT * FROM status_webhooks WHERE id = ? AND workspace_id = ?",
            [webhook_id, workspace_id],
        )
    )
    return _webhook(rows[0]) if rows else None


def delete_webhook(db: Handle, webhook_id: str, workspace_id: str) -> bool:
    with db.atomic():
        cursor = db.execute(
            "DELETE FROM status_webhooks WHERE id = ? AND workspace_id = ?",
            [webhook_id, workspace_id],
        )
    return bool(cursor.rowcount)


def insert_delivery(db: Handle, record: DeliveryRecord) -> DeliveryRecord:
    row = attrs.asdict(record)
    row["created_at"] = columns.to_iso(record.created_at)
    row["updated_at"] = columns.to_iso(record.updated_at)
    row["delivered_at"] = columns.to_iso_or_none(record.delivered_at)
    columns.insert_row(db, "webhook_deliveries", row)
    return record


SOURCE_GONE = "its subscription or alert was deleted"


def record_attempt(
    db: Handle,
    delivery_id: str,
    *,
    status: str,
    status_code: int | None,
    error: str | None,
    now: datetime,
) -> str:
    """One more attempt of a delivery: its outcome and the delivery's resulting status,
    which is returned. A delivery that would be retried but whose subscription or alert
    was deleted meanwhile fails instead: an unsubscribed receiver gets no more calls."""
    with db.atomic():
        if status == "pending" and not _source_exists(db, delivery_id):
            status, error = "failed", SOURCE_GONE
        db.execute(
            "UPDATE webhook_deliveries SET attempts = attempts + 1, status = ?, "
            "last_status_code = ?, last_error = ?, updated_at = ?, "
            "delivered_at = CASE WHEN ? = 'delivered' THEN ? ELSE delivered_at END "
            "WHERE id = ?",
            [
                status,
                status_code,
                error,
                columns.to_iso(now),
                status,
                columns.to_iso(now),
                delivery_id,
            ],
        )
    return status


def _source_exists(db: Handle, delivery_id: str) -> bool:
    row = db.execute(
        "SELECT COALESCE(w.id, a.id, g.id) FROM webhook_deliveries d "
        "LEFT JOIN status_webhooks w ON d.source_kind = 'status_webhook' AND w.id = d.source_id "
        "LEFT JOIN alerts a ON d.source_kind = 'alert' AND a.id = d.source_id "
        "LEFT JOIN agent_alerts g ON d.source_kind = 'alert' AND g.id = d.source_id "
        "WHERE d.id = ?",
        [delivery_id],
    ).fetchone()
    return row is not None and row[0] is not None


def mark(db: Handle, delivery_id: str, status: str, error: str, now: datetime) -> None:
    """Set a delivery's final status without an attempt (dropped from a full queue)."""
    with db.atomic():
        db.execute(
            "UPDATE webhook_deliveries SET status = ?, last_error = ?, updated_at = ? WHERE id = ?",
            [status, error, columns.to_iso(now), delivery_id],
        )


def list_deliveries(
    db: Handle, source_id: str, workspace_id: str, *, limit: int = 100
) -> list[DeliveryRecord]:
    """The deliveries of one subscription or alert, newest first."""
    rows = db.query(
        "SELECT * FROM webhook_deliveries WHERE source_id = ? AND workspace_id = ? "
        "ORDER BY created_at DESC, rowid DESC LIMIT ?",
        [source_id, workspace_id, limit],
    )
    return [_delivery(row) for row in rows]


@attrs.frozen
class PendingDelivery:
    """A delivery left `pending` (a stop cut it short), with its source's signing secret
    (ciphertext), None when the subscription or alert is gone."""

    record: DeliveryRecord
    encrypted_secret: str | None = attrs.field(repr=False)


def pending_deliveries(db: Handle) -> list[PendingDelivery]:
    """Every `pending` delivery, oldest first, for the worker to resume at start, with the
    secret of its source (a status webhook, a usage alert or an agent's alert; None when
    the source was deleted)."""
    rows = db.query(
        "SELECT d.*, "
        "COALESCE(w.encrypted_secret, a.encrypted_secret, g.encrypted_secret) AS source_secret "
        "FROM webhook_deliveries d "
        "LEFT JOIN status_webhooks w ON d.source_kind = 'status_webhook' AND w.id = d.source_id "
        "LEFT JOIN alerts a ON d.source_kind = 'alert' AND a.id = d.source_id "
        # an agent's limit-warning alert logs its deliveries as `alert` too
        "LEFT JOIN agent_alerts g ON d.source_kind = 'alert' AND g.id = d.source_id "
        "WHERE d.status = 'pending' ORDER BY d.created_at, d.rowid"
    )
    found = []
    for row in rows:
        secret = row.pop("source_secret")
        found.append(PendingDelivery(_delivery(row), secret))
    return found
