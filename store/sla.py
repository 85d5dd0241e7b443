"""SLA-credit requests: what was asked for, and the uptime and credit computed for it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from store import columns
from store.handle import Handle


def new_request_id() -> str:
    return columns.new_id("sla_")


@attrs.frozen(kw_only=True)
class SlaCreditRecord:
    id: str
    workspace_id: str
    period: str
    incident_ids: tuple[str, ...] = attrs.field(converter=columns.str_tuple)
    description: str
    plan: str
    sla_target: float | None
    measured_uptime: float
    downtime_minutes: float
    credit_percent: float
    status: str
    created_at: datetime


def _from_row(row: Mapping[str, Any]) -> SlaCreditRecord:
    fields = dict(row)
    fields["incident_ids"] = columns.json_strings(row["incident_ids"])
    fields["created_at"] = columns.from_iso(row["created_at"])
    return SlaCreditRecord(**fields)


def insert(db: Handle, record: SlaCreditRecord) -> SlaCreditRecord:
    row = attrs.asdict(record)
    row["incident_ids"] = columns.to_json(list(record.incident_ids))
    row["created_at"] = columns.to_iso(record.created_at)
    columns.insert_row(db, "sla_credit_requests", row)
    return record


def get(db: Handle, request_id: str, workspace_id: str) -> SlaCreditRecord | None:
    rows = list(
        db.query(
            "SELECT * FROM sla_credit_requests WHERE id = ? AND workspace_id = ?",
            [request_id, workspace_id],
        )
    )
    return _from_row(rows[0]) if rows else None
