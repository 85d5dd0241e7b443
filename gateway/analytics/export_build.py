"""Building an export's file, and deleting the files of expired exports.

The file is written under a temporary name, a page of rows at a time (a short database
read, then a write off the event loop), and renamed into place when complete: a reader
never sees half a file, and memory holds one page whatever the export's size.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any

import trio

from gateway.analytics.export_file import Sink, open_sink
from gateway.analytics.period import Period
from gateway.analytics.services import AnalyticsServices
from store import exports as store
from store.exports import COST_COLUMNS, USAGE_COLUMNS, Cursor, ExportRecord
from store.usage_rollups import error_type

logger = logging.getLogger(__name__)

PAGE_ROWS = 1000
"""Rows per database read: the page lives twice in Python (the tuples read, the rows made
of them), so its size is most of the export's own memory; 1,000 keeps it under a few MiB
at a few per cent of the rows per second of larger pages."""
Pages = AsyncGenerator[list[dict[str, Any]], None]


def _period(record: ExportRecord) -> Period:
    return Period(date.fromisoformat(record.start_date), date.fromisoformat(record.end_date))


def _usage_row(values: tuple[Any, ...]) -> dict[str, Any]:
    row = dict(zip(USAGE_COLUMNS, values, strict=True))
    row["date"] = str(row["created_at"])[:10]
    row["cache_hit"] = bool(row["cache_hit"])
    row["error_type"] = error_type(int(row["status"]), row["error_code"])
    return row


async def _usage_pages(
    analytics: AnalyticsServices, record: ExportRecord, *, errors_only: bool
) -> Pages:
    period = _period(record)
    cursor: Cursor | None = None
    while True:

        def read(db: Any, after: Cursor | None = cursor) -> Any:
            return store.usage_page(
                db,
                workspace_id=record.workspace_id,
                since_epoch=period.since.timestamp(),
                until_epoch=period.until.timestamp(),
                after=after,
                limit=PAGE_ROWS,
                errors_only=errors_only,
            )

        page, cursor = await analytics.db.run(read)
        yield [_usage_row(values) for values in page]
        if cursor is None:
            return


async def _cost_pages(analytics: AnalyticsServices, record: ExportRecord) -> Pages:
    period = _period(record)
    rows = await analytics.db.run(
        lambda d: store.cost_rows(
            d,
            workspace_id=record.workspace_id,
            since_epoch=int(period.since.timestamp()),
            until_epoch=int(period.until.timestamp()),
        )
    )
    for start in range(0, len(rows), PAGE_ROWS):
        chunk = rows[start : start + PAGE_ROWS]
        yield [dict(zip(COST_COLUMNS, values, strict=True)) for values in chunk]


def _pages(analytics: AnalyticsServices, record: ExportRecord, section: str) -> Pages:
    if section == "costs":
        return _cost_pages(analytics, record)
    return _usage_pages(analytics, record, errors_only=section == "errors")


async def build(analytics: AnalyticsServices, record: ExportRecord) -> None:
    """Write the export's file and mark it complete (expiring `export_ttl_s` later).

    Cancellation (shutdown): the partial file is removed and the record stays
    `processing`, so the next start builds it again.
    """
    folder = analytics.exports.folder
    await trio.to_thread.run_sync(lambda: folder.mkdir(parents=True, exist_ok=True))
    final_name = f"{record.id}.{record.format}"
    partial = folder / f"{final_name}.part"
    header = {"export_id": record.id, "period": _period(record).render()}
    sink: Sink = await trio.to_thread.run_sync(open_sink, record.format, partial, header)
    rows = 0
    try:
        for section in record.include:
            await trio.to_thread.run_sync(sink.section, section)
            async with aclosing(_pages(analytics, record, section)) as pages:
                async for page in pages:
                    await trio.to_thread.run_sync(sink.write, page)
                    rows += len(page)
        await trio.to_thread.run_sync(sink.close)
    except BaseException:
        sink.abort()
        partial.unlink(missing_ok=True)
        raise
    size = partial.stat().st_size
    partial.replace(folder / final_name)
    now = datetime.now(UTC)
    expires = now + timedelta(seconds=analytics.settings.export_ttl_s)
    await analytics.db.run(
        lambda d: store.complete(
            d,
            record.id,
            file_name=final_name,
            rows=rows,
            size=size,
            completed_at=now,
            expires_at=expires,
        )
    )


async def expire_due(analytics: AnalyticsServices, now: datetime) -> int:
    """Delete the files of the exports expired at `now` and mark them `expired`; return
    how many. The file goes first: a crash between the two leaves a record the next
    sweep expires again, never a file nobody deletes."""
    due = await analytics.db.run(lambda d: store.due_for_expiry(d, now))
    for record in due:
        if record.file_name is not None:
            path = analytics.exports.path_of(record.file_name)
            await trio.to_thread.run_sync(partial(path.unlink, missing_ok=True))
        await analytics.db.run(partial(store.expire, export_id=record.id))
    return len(due)
