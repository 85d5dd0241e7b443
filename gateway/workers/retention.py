"""The retention worker: erases data documents past their `retention_days`, stored
responses past `responses_retention_days`, and the request log's entries past its window.

Every `retention_check_interval_s` (0: off) it erases each expired document exactly as a
DELETE would (`gateway.documents.erasure`), with an audit event `data_document.erased`
(reason `retention`, no actor) in the erasure's own transaction, then the request log's
entries older than `request_log_days` (`purge_request_log`). `sweep` and
`purge_request_log` take the wall time as an argument so tests drive them with a clock
of their own.

Cancellation: the loop stops with the lifespan nursery; an erasure whose transaction has
committed still finishes its cleanup (see `erasure`).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import trio

from gateway.documents.erasure import erase_document
from store import documents as document_store
from store import erasure, request_log
from store import responses as response_store
from store.audit import AuditEvent
from store.documents import DocumentRecord
from store.erasure import Removal
from store.handle import Handle

if TYPE_CHECKING:
    from gateway.platform.state import AppState

logger = logging.getLogger(__name__)


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    task_status.started()
    interval = state.settings.retention_check_interval_s
    if interval <= 0:
        return
    while True:
        await sweep(state, now=time.time())
        await sweep_responses(state, now=time.time())
        await purge_request_log(state, now=time.time())
        await trio.sleep(interval)


async def sweep(state: AppState, *, now: float) -> list[str]:
    """Erase every document expired at `now` (Unix seconds); the ids erased."""
    erased = []
    for record in await state.db.run(lambda d: document_store.expired(d, now)):
        event = _event(record, now)
        if await erase_document(state, record.workspace_id, record.id, event) is not None:
            logger.info("data document %s erased: retention expired", record.id)
            erased.append(record.id)
    return erased


async def sweep_responses(state: AppState, *, now: float) -> list[str]:
    """Erase every stored response whose retention ended by `now` (`store.erasure`, as a
    DELETE does); the ids erased. No audit event: a stored response is a request's
    record, as its usage record is, not a managed object."""
    erased = []
    for workspace_id, response_id in await state.db.run(lambda d: response_store.expired(d, now)):
        if await response_store.erase_one(state.db, state.responses, workspace_id, response_id):
            erased.append(response_id)
    if erased:
        logger.info("%d stored responses erased: retention expired", len(erased))
    return erased


def _event(record: DocumentRecord, now: float) -> AuditEvent:
    return AuditEvent(
        organization_id=record.organization_id,
        workspace_id=record.workspace_id,
        type="data_document.erased",
        actor_id=None,
        target_type="data_document",
        target_id=record.id,
        timestamp=datetime.fromtimestamp(now, UTC),
        details={"reason": "retention", "retention_days": record.retention_days},
    )


async def purge_request_log(state: AppState, *, now: float) -> int:
    """Erase the request log's entries older than its window (`request_log_days`; with
    the log off, every entry) at `now` (Unix seconds), through `store.erasure` so that
    the bodies some hold leave the disk; how many went."""
    days = max(state.settings.request_log_days, 0.0)
    cutoff = datetime.fromtimestamp(now - days * 86_400, UTC)
    if not await state.db.run(lambda d: request_log.oldest_before(d, cutoff)):
        return 0

    def remove(db: Handle) -> Removal[tuple[int, int]]:
        return Removal(request_log.purge_before(db, cutoff))

    purged = await erasure.erase(state.db, remove)
    deleted, bodies = purged if purged is not None else (0, 0)
    if deleted:
        logger.info("request log: %d entries past the window erased (%d bodies)", deleted, bodies)
    return deleted
