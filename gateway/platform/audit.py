"""Recording a management action in the audit log, the same way from every endpoint.

`audited` runs the change and appends its event in one SQLite transaction, so a change is
never stored without its event nor an event without its change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import attrs
import sqlite_utils
from quart import request

from gateway.platform.auth import Principal
from store import audit
from store.audit import ORGANIZATION_WIDE, AuditEvent
from store.db import Database

T = TypeVar("T")


def audit_event(
    principal: Principal,
    kind: str,
    *,
    target_type: str,
    target_id: str,
    target_email: str | None = None,
    details: Mapping[str, Any] | None = None,
    organization_wide: bool = False,
) -> AuditEvent:
    """The event of `kind` (e.g. `api_key.created`) by `principal` on the target, with the
    client's address as the request shows it; call it from inside a request."""
    return AuditEvent(
        organization_id=principal.organization_id,
        workspace_id=ORGANIZATION_WIDE if organization_wide else principal.workspace_id,
        type=kind,
        actor_id=principal.key_id,
        actor_email=principal.email,
        target_type=target_type,
        target_id=target_id,
        target_email=target_email,
        ip_address=request.remote_addr,
        timestamp=datetime.now(UTC),
        details=details or {},
    )


async def audited(
    db: Database,
    event: AuditEvent,
    change: Callable[[sqlite_utils.Database], T],
    *,
    target_of: Callable[[T], str] | None = None,
) -> T:
    """Run `change` and append `event` in one transaction; returns what `change` returns.

    `target_of` names the target from the result when the store makes its id. When
    `change` returns None or False (nothing was there to change) no event is written;
    when it raises, neither is stored. Cancellation: as `Database.run`.
    """

    def run(db: sqlite_utils.Database) -> T:
        with db.atomic():
            result = change(db)
            if result is not None and result is not False:
                target = target_of(result) if target_of is not None else event.target_id
                audit.append(db, attrs.evolve(event, target_id=target))
        return result

    return await db.run(run)


def written(
    change: Callable[[sqlite_utils.Database], object],
) -> Callable[[sqlite_utils.Database], bool]:
    """`change` (a store write that returns nothing) as one `audited` records an event
    for."""

    def run(db: sqlite_utils.Database) -> bool:
        change(db)
        return True

    return run


async def record_audit(
    db: Database,
    principal: Principal,
    kind: str,
    *,
    target_type: str,
    target_id: str,
    details: Mapping[str, Any] | None = None,
) -> None:
    """Append an event on its own, for an action that changes nothing stored (a provider
    test, a change held only in memory)."""
    event = audit_event(
        principal, kind, target_type=target_type, target_id=target_id, details=details
    )
    await db.run(lambda d: audit.append(d, event))
