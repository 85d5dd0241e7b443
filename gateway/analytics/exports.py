"""Analytics exports: the request's body, the export record's JSON, and the download.

`POST .../export` stores a `processing` record and queues its id for the worker
(`gateway.analytics.export_worker`, which builds the file with
`gateway.analytics.export_build`); the record turns `complete` with `download_url` and
`expires_at` once the file is on disk. The file can be downloaded by callers of the same
workspace until `expires_at`; after it the download answers 410 and the worker deletes
the file (the record says `expired`). An export of another workspace answers 404 like an
unknown one.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import cast

from quart import Response, send_file

from gateway.analytics.answers import AnalyticsExport, ExportFormat, ExportStatus, Section
from gateway.analytics.export_file import CONTENT_TYPES
from gateway.analytics.input import SECTIONS, ExportRequest, ExportsQuery
from gateway.analytics.period import parse_period
from gateway.analytics.services import AnalyticsServices
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, not_found
from gateway.platform.extras import EXPORTS, not_installed
from gateway.platform.web import iso
from store import columns
from store import exports as store
from store.exports import ExportRecord

PATH = "/v1/management/analytics/export"


def export_terms(
    asked: ExportRequest, *, today: date
) -> tuple[str, str, ExportFormat, tuple[Section, ...]]:
    """(start, end, format, include) of an export request: its period by the period's
    rules, its sections in their own order."""
    period = parse_period({"start_date": asked.start_date, "end_date": asked.end_date}, today=today)
    ordered = tuple(section for section in SECTIONS if section in asked.include)
    return period.start.isoformat(), period.end.isoformat(), asked.format, ordered


async def create(
    analytics: AnalyticsServices, workspace_id: str, asked: ExportRequest, *, today: date
) -> ExportRecord:
    """Store a `processing` export and queue it (waiting while the worker's queue is
    full). Cancelled while waiting, the record stays `processing` and the worker builds
    it at its next start."""
    start, end, fmt, include = export_terms(asked, today=today)
    if fmt == "parquet" and not EXPORTS.installed():  # PyArrow writes Parquet
        raise not_installed("A Parquet export", (EXPORTS,))
    record = ExportRecord(
        id=columns.new_id("exp"),
        workspace_id=workspace_id,
        status="processing",
        format=fmt,
        include=include,
        start_date=start,
        end_date=end,
        created_at=datetime.now(UTC),
    )
    await analytics.db.run(lambda d: store.insert(d, record))
    await analytics.exports.send.send(record.id)
    return record


async def find(analytics: AnalyticsServices, principal: Principal, export_id: str) -> ExportRecord:
    """The caller's workspace's export; 404 for an unknown id or another workspace's."""
    record = await analytics.db.run(lambda d: store.get(d, export_id))
    if record is None or record.workspace_id != principal.workspace_id:
        raise not_found("export_not_found", f"No export '{export_id}'.", export_id=export_id)
    return record


async def recent(
    analytics: AnalyticsServices, principal: Principal, asked: ExportsQuery
) -> list[ExportRecord]:
    """The caller's workspace's latest exports (`limit` of them), newest first: what a
    console lists to follow and download them."""
    ws = principal.workspace_id
    return await analytics.db.run(lambda d: store.recent(d, ws, asked.limit))


def render(record: ExportRecord, base_url: str) -> AnalyticsExport:
    complete = record.status == "complete"
    return {
        "object": "analytics_export",
        "export_id": record.id,
        "status": cast(ExportStatus, record.status),  # the store's column holds these
        "format": cast(ExportFormat, record.format),
        "include": [cast(Section, section) for section in record.include],
        "period": {"start": record.start_date, "end": record.end_date},
        "created_at": iso(record.created_at),
        "download_url": f"{base_url}{PATH}/{record.id}/download" if complete else None,
        "expires_at": iso(record.expires_at) if complete else None,
        "rows": record.rows if complete else None,
        "size_bytes": record.bytes if complete else None,
        "error": record.error,
    }


def _expired(record: ExportRecord, now: datetime) -> bool:
    return record.status == "expired" or (
        record.expires_at is not None and record.expires_at <= now
    )


async def download(analytics: AnalyticsServices, principal: Principal, export_id: str) -> Response:
    """The file, streamed from disk with its format's Content-Type; 409 while it is not
    built (or failed), 410 once it expired."""
    record = await find(analytics, principal, export_id)
    if _expired(record, datetime.now(UTC)):
        raise ApiError(
            410, "export_expired", f"Export '{export_id}' expired.", type="not_found_error"
        )
    if record.status != "complete" or record.file_name is None:
        raise ApiError(
            409,
            "export_not_ready",
            f"Export '{export_id}' is {record.status}; download it once it is complete.",
            export_id=export_id,
            export_status=record.status,
        )
    response = await send_file(
        analytics.exports.path_of(record.file_name),
        mimetype=CONTENT_TYPES[record.format],
        as_attachment=True,
        attachment_filename=f"analytics-{record.id}.{record.format}",
    )
    # Set as is: given as `mimetype`, a text type gets a second charset parameter.
    response.content_type = CONTENT_TYPES[record.format]
    response.headers["Cache-Control"] = "no-store"
    return response
