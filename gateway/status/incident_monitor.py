"""The worker that opens, escalates and resolves incidents from provider health.

Every `incident_check_interval_s` it classifies each active provider's recent probe
outcomes (`gateway.status.incidents.classify`, thresholds from the settings) and applies
the transition table to the provider's open monitor incident. Incidents whose provider is
no longer active (disabled or removed) are resolved: nobody is routed to it any more.
Operators' incidents are never touched here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import trio

from gateway.status import service
from gateway.status.incidents import Action, Thresholds, classify, decide
from store import incidents as incident_store
from store.incidents import IncidentRecord

if TYPE_CHECKING:
    from gateway.status.services import StatusServices


async def run(
    svc: StatusServices, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Check every interval until cancelled (0 turns the monitor off)."""
    interval = svc.settings.incident_check_interval_s
    task_status.started()
    if interval <= 0:
        return
    while True:
        await trio.sleep(interval)
        await check(svc, datetime.now(UTC))


def thresholds(svc: StatusServices) -> Thresholds:
    s = svc.settings
    return Thresholds(
        down_after=s.incident_down_after_probes,
        degraded_after=s.incident_degraded_after_probes,
        window=s.incident_probe_window,
        recover_after=s.incident_recover_after_probes,
    )


async def check(svc: StatusServices, now: datetime) -> None:
    """One pass over every active provider and every open monitor incident."""
    opened = await svc.db.run(incident_store.list_open)
    by_provider = {
        (i.workspace_id, i.affected_services[0]): i
        for i in opened
        if i.source == "monitor" and i.affected_services
    }
    active = set()
    for workspace_id, provider_id, _ in svc.registry.active_adapters():
        active.add((workspace_id, provider_id))
        flags = [p.ok for p in svc.health.probes(workspace_id, provider_id)]
        signal = classify(flags, thresholds(svc))
        current = by_provider.get((workspace_id, provider_id))
        action = decide(current.severity if current else None, signal)
        await _apply(svc, action, workspace_id, provider_id, current, now)
    for key, incident in by_provider.items():
        if key not in active:
            message = f"{key[1]} is no longer an active provider of this workspace."
            await service.resolve_incident(svc, incident, message=message, now=now)


async def _apply(
    svc: StatusServices,
    action: Action,
    workspace_id: str,
    provider_id: str,
    current: IncidentRecord | None,
    now: datetime,
) -> None:
    if action in (Action.OPEN_MAJOR, Action.OPEN_MINOR):
        major = action is Action.OPEN_MAJOR
        await service.open_incident(
            svc,
            workspace_id=workspace_id,
            title=f"{provider_id} {'unavailable' if major else 'degraded'}",
            severity="major" if major else "minor",
            status="investigating",
            message=_message(provider_id, major),
            services=(provider_id,),
            source="monitor",
            now=now,
        )
    elif action is Action.ESCALATE and current is not None:
        await service.change_incident(
            svc, current, severity="major", message=_message(provider_id, True), now=now
        )
    elif action is Action.RESOLVE and current is not None:
        message = f"{provider_id} answers its health probes again."
        await service.resolve_incident(svc, current, message=message, now=now)


def _message(provider_id: str, down: bool) -> str:
    if down:
        return f"Every recent health probe of {provider_id} failed; requests fall back."
    return f"Some recent health probes of {provider_id} failed."
