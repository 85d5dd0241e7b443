"""The retention worker: erases data documents past their `retention_days` (stored
responses have their own, `gateway.responses.retention`).

Every `retention_check_interval_s` (0: off) it erases each expired document exactly as a
DELETE would (`gateway.documents.erasure`), with an audit event `data_document.erased`
(reason `retention`, no actor) in the erasure's own transaction. `sweep` takes the wall
time as an argument so tests drive it with a clock of their own.

Cancellation: the loop stops with the lifespan nursery; an erasure whose transaction has
committed still finishes its cleanup (see `erasure`).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import trio

from gateway.documents.erasure import erase_document
from gateway.kernels.periodic import sweep_every
from store import documents as document_store
from store.audit import AuditEvent
from store.documents import DocumentRecord

if TYPE_CHECKING:
    from gateway.documents.services import DocumentsServices

logger = logging.getLogger(__name__)


async def run(
    services: DocumentsServices, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    await sweep_every(
        services.settings.retention_check_interval_s,
        lambda now: sweep(services, now=now),
        task_status=task_status,
    )


async def sweep(services: DocumentsServices, *, now: float) -> list[str]:
    """Erase every document expired at `now` (Unix seconds); the ids erased."""
    erased = []
    for record in await services.db.run(lambda d: document_store.expired(d, now)):
        event = _event(record, now)
        if await erase_document(services, record.workspace_id, record.id, event) is not None:
            logger.info("data document %s erased: retention expired", record.id)
            erased.append(record.id)
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
