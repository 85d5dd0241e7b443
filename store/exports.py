"""Analytics exports: their records, and the pages of usage rows an export file is built from.

Rows are read in pages by keyset ((created_epoch, rowid) after the last row of the page
before) over the (workspace, time) index, so building a file of a million rows never
holds more than one page in memory, and each page is a short read that lets the usage
writer in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs

from store import columns, dialect
from store.handle import Handle


@attrs.frozen(kw_only=True)
class ExportRecord:
    id: str
    workspace_id: str
    status: str  # processing, complete, failed, expired
    format: str
    include: tuple[str, ...] = attrs.field(converter=columns.str_tuple)
    start_date: str
    end_date: str
    created_at: datetime
    completed_at: datetime | None = None
    expires_at: datetime | None = None
    file_name: str | None = None
    rows: int = 0
    bytes: int = 0
    error: str | None = None


def insert(db: Handle, record: ExportRecord) -> None:
    with db.atomic():
        db.execute(
            "INSERT INTO analytics_exports (id, workspace_id, status, format, include, "
            "start_date, end_date, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                record.id,
                record.workspace_id,
                record.status,
                record.format,
                columns.to_json(record.include),
                record.start_date,
                record.end_date,
                columns.to_iso(record.created_at),
            ],
        )


def _from_row(row: Sequence[Any]) -> ExportRecord:
    return ExportRecord(
        id=row[0],
        workspace_id=row[1],
        status=row[2],
        format=row[3],
        include=columns.json_strings(row[4]),
        start_date=row[5],
        end_date=row[6],
        created_at=columns.from_iso(row[7]),
        completed_at=columns.from_iso_or_none(row[8]),
        expires_at=columns.from_iso_or_none(row[9]),
        file_name=row[10],
        rows=int(row[11]),
        bytes=int(row[12]),
        error=row[13],
    )


_SELECT = (
    "SELECT id, workspace_id, status, format, include, start_date, end_date, created_at, "
    "completed_at, expires_at, file_name, rows, bytes, error FROM analytics_exports"
)


def get(db: Handle, export_id: str) -> ExportRecord | None:
    row = db.execute(f"{_SELECT} WHERE id = ?", [export_id]).fetchone()
    return None if row is None else _from_row(row)


def recent(db: Handle, workspace_id: str, limit: int) -> list[ExportRecord]:
    """The workspace's latest `limit` exports, newest first (ids break a tie in time).

    A scan of the table: exports are few (each is a person's request, and the worker
    deletes expired files), so no index is kept for this listing."""
    rows = db.execute(
        f"{_SELECT} WHERE workspace_id = ? ORDER BY created_at DESC, id DESC LIMIT ?",
        [workspace_id, limit],
    ).fetchall()
    return [_from_row(row) for row in rows]


def processing_ids(db: Handle) -> list[str]:
    """Exports not yet built (a stop left them), oldest first."""
    rows = db.execute(
        "SELECT id FROM analytics_exports WHERE status = 'processing' ORDER BY created_at"
    ).fetchall()
    return [str(row[0]) for row in rows]


def complete(
    db: Handle,
    export_id: str,
    *,
    file_name: str,
    rows: int,
    size: int,
    completed_at: datetime,
    expires_at: datetime,
) -> None:
    with db.atomic():
        db.execute(
            "UPDATE analytics_exports SET status = 'complete', file_name = ?, rows = ?, "
            "bytes = ?, completed_at = ?, expires_at = ?, expires_epoch = ? WHERE id = ?",
            [
                file_name,
                rows,
                size,
                columns.to_iso(completed_at),
                columns.to_iso(expires_at),
                columns.to_epoch(expires_at),
                export_id,
            ],
        )


def fail(db: Handle, export_id: str, error: str) -> None:
    with db.atomic():
        db.execute(
            "UPDATE analytics_exports SET status = 'failed', error = ? WHERE id = ?",
            [error, export_id],
        )


def due_for_expiry(db: Handle, now: datetime) -> list[ExportRecord]:
    """Complete exports whose download period ended at or before `now`."""
    rows = db.execute(
        f"{_SELECT} WHERE status = 'complete' AND expires_epoch <= ?", [columns.to_epoch(now)]
    ).fetchall()
    return [_from_row(row) for row in rows]


def expire(db: Handle, export_id: str) -> None:
    with db.atomic():
        db.execute(
            "UPDATE analytics_exports SET status = 'expired', file_name = NULL WHERE id = ?",
            [export_id],
        )


USAGE_COLUMNS = (
    "request_id",
    "created_at",
    "key_id",
    "model",
    "provider",
    "endpoint",
    "status",
    "error_code",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cache_savings_usd",
    "latency_ms",
    "cache_hit",
)


@attrs.frozen
class Cursor:
    """Where the next page starts: after this (created_epoch, rowid)."""

    epoch: float
    rowid: int


def usage_page(
    db: Handle,
    *,
    workspace_id: str,
    since_epoch: float,
    until_epoch: float,
    after: Cursor | None,
    limit: int,
    errors_only: bool = False,
) -> tuple[list[tuple[Any, ...]], Cursor | None]:
    """Up to `limit` usage rows (`USAGE_COLUMNS`) in time order after `after`, and the
    cursor of the next page (None after the last)."""
    start = after or Cursor(since_epoch, -1)
    failed = " AND status >= 400" if errors_only else ""
    rows = db.execute(
        f"SELECT {', '.join(USAGE_COLUMNS)}, created_epoch, rowid FROM usage_records "
        "WHERE workspace_id = ? AND created_epoch >= ? AND created_epoch < ? "
        f"AND (created_epoch, rowid) > (?, ?){failed} ORDER BY created_epoch, rowid LIMIT ?",
        [workspace_id, start.epoch, until_epoch, start.epoch, start.rowid, limit],
    ).fetchall()
    width = len(USAGE_COLUMNS)
    page = [tuple(row[:width]) for row in rows]
    following = Cursor(float(rows[-1][width]), int(rows[-1][width + 1])) if rows else None
    return page, following if len(rows) == limit else None


COST_COLUMNS = ("date", "provider", "model", "requests", "cost_usd", "cache_savings_usd")


def cost_rows(
    db: Handle, *, workspace_id: str, since_epoch: int, until_epoch: int
) -> list[tuple[Any, ...]]:
    """Per day, provider and model (`COST_COLUMNS`), from the rollups: at most days x
    models x providers rows."""
    return db.execute(
        f"SELECT {dialect.of(db).date_of('start_epoch')}, provider, model, sum(requests), "
        "sum(cost_usd), "
        "sum(cache_savings_usd) FROM usage_rollups_daily "
        "WHERE workspace_id = ? AND start_epoch >= ? AND start_epoch < ? "
        "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        [workspace_id, since_epoch, until_epoch],
    ).fetchall()
