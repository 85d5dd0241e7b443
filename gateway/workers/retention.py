"""The retention worker: erases data documents past their `retention_days`, and stored
responses past `responses_retention_days`.

Every `retention_check_interval_s` (0: off) it erases each expired document exactly as a
DELETE would (`gateway.documents.erasure`), with an audit event `data_document.erased`
(reason `retention`, no actor) in the erasure's own transaction. `sweep` takes the wall
time as an argument so tests drive it with a clock of their own.

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
from store import responses as response_store
from store.audit import AuditEvent
from store.documents import DocumentRecord

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
