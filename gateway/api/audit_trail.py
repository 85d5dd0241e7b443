"""Recording a management action in the audit log, the same way from every endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from quart import request

from gateway.platform.auth import Principal
from gateway.platform.state import AppState
from store import audit
from store.audit import AuditEvent


async def record_audit(
    state: AppState,
    principal: Principal,
    kind: str,
    *,
    target_type: str,
    target_id: str,
    details: Mapping[str, Any] | None = None,
) -> None:
    """Append `kind` (e.g. `api_key.created`) by `principal` on the target, with the
    client's address as the request shows it; call it from inside a request."""
    event = AuditEvent(
        workspace_id=principal.workspace_id,
        type=kind,
        actor_id=principal.key_id,
        target_type=target_type,
        target_id=target_id,
        ip_address=request.remote_addr,
        timestamp=datetime.now(UTC),
        details=details or {},
    )
    await state.db.run(lambda d: audit.append(d, event))
