"""Incidents and the status page: orchestration between the store, the health book and
the notification hub.

Every change of an incident (opened, updated, resolved; by the monitor or an operator) is
written to the store first, then published as the matching status event for the
workspace's webhook subscribers; publishing never waits (see `gateway.kernels.webhooks.hub`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs
import sqlite_utils

from gateway.kernels.webhooks.hub import StatusEvent
from gateway.platform.web import iso
from gateway.status import maintenance, render
from gateway.status.incidents import event_name
from gateway.status.sla import Outage, downtime_seconds
from store import audit as audit_store
from store import incidents as incident_store
from store import usage as usage_store
from store.audit import AuditEvent
from store.incidents import IncidentRecord

if TYPE_CHECKING:
    from gateway.status.services import StatusServices

UPTIME_SPAN = timedelta(days=30)
API_SERVICE = "api"
# Worst first: the overall status is the worst of the services'.
SERVICE_STATUSES = ("major_outage", "partial_outage", "degraded", "maintenance", "operational")
_BY_SEVERITY = {"critical": "major_outage", "major": "partial_outage", "minor": "degraded"}


async def open_incident(
    svc: StatusServices,
    *,
    workspace_id: str,
    title: str,
    severity: str,
    status: str,
    message: str,
    services: tuple[str, ...],
    source: str,
    now: datetime,
    audit: AuditEvent | None = None,
) -> IncidentRecord:
    """Open an incident; `audit` (an operator's action) is written with it, in the same
    transaction, naming the new incident."""
    record = IncidentRecord(
        id=incident_store.new_incident_id(),
        workspace_id=workspace_id,
        title=title,
        status=status,
        severity=severity,
        affected_services=services,
        message=message,
        source=source,
        created_at=now,
        updated_at=now,
    )
    await svc.db.run(lambda d: _write(d, incident_store.insert, record, audit))
    _publish(svc, "created", record, now)
    return record


async def change_incident(
    svc: StatusServices,
    record: IncidentRecord,
    *,
    now: datetime,
    status: str | None = None,
    severity: str | None = None,
    message: str | None = None,
    audit: AuditEvent | None = None,
) -> IncidentRecord:
    changed = attrs.evolve(
        record,
        status=status or record.status,
        severity=severity or record.severity,
        message=record.message if message is None else message,
        updated_at=now,
    )
    await svc.db.run(lambda d: _write(d, incident_store.save, changed, audit))
    _publish(svc, "updated", changed, now, previous=record.status)
    return changed


async def resolve_incident(
    svc: StatusServices,
    record: IncidentRecord,
    *,
    message: str,
    now: datetime,
    audit: AuditEvent | None = None,
) -> IncidentRecord:
    final = "completed" if record.severity == "maintenance" else "resolved"
    resolved = attrs.evolve(
        record, status=final, message=message or record.message, updated_at=now, resolved_at=now
    )
    await svc.db.run(lambda d: _write(d, incident_store.save, resolved, audit))
    _publish(svc, "resolved", resolved, now)
    return resolved


def _write(
    db: sqlite_utils.Database,
    write: Callable[[sqlite_utils.Database, IncidentRecord], object],
    record: IncidentRecord,
    event: AuditEvent | None,
) -> None:
    """Store the incident and, for an operator's change, its audit event: one
    transaction."""
    with db.atomic():
        write(db, record)
        if event is not None:
            audit_store.append(db, attrs.evolve(event, target_id=record.id))


def _publish(
    svc: StatusServices,
    change: str,
    record: IncidentRecord,
    now: datetime,
    *,
    previous: str | None = None,
) -> None:
    event = event_name(record.severity, change, record.status, previous)
    svc.webhooks.hub.publish(
        StatusEvent(record.workspace_id, event, render.event_payload(event, record, now))
    )


def service_status(open_incidents: list[IncidentRecord], service: str) -> str:
    statuses = {
        "maintenance"
        if i.severity == "maintenance" and i.status == "in_progress"
        else _BY_SEVERITY.get(i.severity, "operational")
        for i in open_incidents
        if service in i.affected_services
    }
    return worst(statuses)


def worst(statuses: set[str]) -> str:
    return next((s for s in SERVICE_STATUSES if s in statuses), "operational")


def uptime(history: list[IncidentRecord], service: str, start: datetime, end: datetime) -> float:
    """Share of [start, end) without a critical or major incident affecting `service`."""
    outages = [
        Outage(i.created_at, i.resolved_at, i.severity)
        for i in history
        if service in i.affected_services
    ]
    down = downtime_seconds(outages, start, end)
    return round(1 - down / (end - start).total_seconds(), 6)


async def status_page(svc: StatusServices, workspace_id: str, now: datetime) -> render.StatusPage:
    """`GET /v1/status` for a workspace: its API and providers, open incidents, windows."""
    since = now - UPTIME_SPAN

    def read(d: Any) -> tuple[list[IncidentRecord], list[IncidentRecord], dict[str, Any]]:
        history = incident_store.overlapping(d, workspace_id, start=since, end=now)
        opened = incident_store.list_open(d, workspace_id)
        medians = {
            name: usage_store.median_latency_ms(
                d, workspace_id=workspace_id, provider=provider, since=since
            )
            for name, provider in _latency_targets(svc, workspace_id)
        }
        return history, opened, medians

    history, opened, medians = await svc.db.run(read)
    services = [_service(API_SERVICE, opened, history, since, now, medians[API_SERVICE])]
    for pid, entry in svc.registry.configured(workspace_id).items():
        latency = medians.get(pid) or _probe_median(svc, workspace_id, pid)
        row = _service(pid, opened, history, since, now, latency)
        if not entry.active:
            row["status"] = "disabled"
        services.append(row)
    return {
        "status": worst({s["status"] for s in services}),
        "updated_at": iso(now),
        "services": services,
        "incidents": [render.incident(i) for i in opened],
        "scheduled_maintenance": [render.window(w, now) for w in maintenance.upcoming(now)],
    }


def _latency_targets(svc: StatusServices, workspace_id: str) -> list[tuple[str, str | None]]:
    providers = svc.registry.configured(workspace_id)
    return [(API_SERVICE, None), *((pid, pid) for pid in providers)]


def _service(
    name: str,
    opened: list[IncidentRecord],
    history: list[IncidentRecord],
    since: datetime,
    now: datetime,
    latency: float | None,
) -> render.ServiceRow:
    return {
        "name": name,
        "status": service_status(opened, name),
        "uptime_30d": uptime(history, name, since, now),
        "latency_p50_ms": None if latency is None else round(latency, 1),
    }


def _probe_median(svc: StatusServices, workspace_id: str, provider_id: str) -> float | None:
    """Without traffic, the median latency of the provider's successful probes."""
    latencies = [p.latency_ms for p in svc.health.probes(workspace_id, provider_id) if p.ok]
    return statistics.median(latencies) if latencies else None
