"""SLA-credit requests: check the cited incidents, measure the month, store the answer."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import attrs
import sqlite_utils

from gateway.platform.errors import ApiError
from gateway.status.input import SlaSpec
from gateway.status.sla import Outage, assess, month_bounds
from store import audit as audit_store
from store import incidents as incident_store
from store import organizations
from store import sla as sla_store
from store.audit import AuditEvent
from store.sla import SlaCreditRecord

if TYPE_CHECKING:
    from gateway.status.services import StatusServices


async def plan_of(svc: StatusServices, organization_id: str) -> str:
    """The plan whose SLA applies: the organisation's (set by its owner through
    `PATCH /v1/management/organization`)."""
    record = await svc.db.run(lambda d: organizations.get(d, organization_id))
    return "free" if record is None else record.plan


async def request_credit(
    svc: StatusServices,
    *,
    workspace_id: str,
    plan: str,
    spec: SlaSpec,
    now: datetime,
    audit: AuditEvent | None = None,
) -> SlaCreditRecord:
    """Measure the period's uptime from the workspace's incident history and store the
    request with its credit (and `audit`, naming it, in the same transaction); 400 when
    the period is in the future or a cited incident is not this workspace's or not in the
    period."""
    start, end = month_bounds(spec.period)
    if start > now:
        raise ApiError(
            400,
            "period_not_started",
            f"'period' {spec.period} has not started yet.",
            param="period",
            value=spec.period,
        )
    end = min(end, now)

    history = await svc.db.run(
        lambda d: incident_store.overlapping(d, workspace_id, start=start, end=end)
    )
    # Another workspace's incident is answered exactly like an unknown one.
    in_period = {i.id for i in history}
    bad = [i for i in spec.incident_ids if i not in in_period]
    if bad:
        raise ApiError(
            400,
            "invalid_incident_ids",
            f"These incidents are unknown or not in {spec.period}: {', '.join(bad)}.",
            param="incident_ids",
            value=bad,
        )
    outages = [Outage(i.created_at, i.resolved_at, i.severity) for i in history]
    result = assess(plan, outages, start, end)
    record = SlaCreditRecord(
        id=sla_store.new_request_id(),
        workspace_id=workspace_id,
        period=spec.period,
        incident_ids=spec.incident_ids,
        description=spec.description,
        plan=plan,
        sla_target=result.sla_target,
        measured_uptime=result.uptime_percent,
        downtime_minutes=result.downtime_minutes,
        credit_percent=result.credit_percent,
        status=result.status,
        created_at=now,
    )
    event = None if audit is None else attrs.evolve(audit, target_id=record.id)
    await svc.db.run(lambda d: _store(d, record, event))
    return record


def _store(db: sqlite_utils.Database, record: SlaCreditRecord, event: AuditEvent | None) -> None:
    with db.atomic():
        sla_store.insert(db, record)
        if event is not None:
            audit_store.append(db, event)
