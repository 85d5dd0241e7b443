"""Stopping and restarting an agent: the state change and its audit event in one
transaction, and the cached agent replaced, so the next request sees it.

A manager suspends or resumes through the management API (the event names the manager);
admission suspends automatically under `auto_suspend` (the event names the agent's own
key as actor and says why). Suspending a suspended agent changes nothing and records
nothing, so two concurrent triggers leave one event.
"""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import sqlite_utils

from gateway.agents.book import AgentBook, Loaded
from store import agents as agent_store
from store import audit
from store.agents import AgentRecord, AgentStatus
from store.audit import AuditEvent


@attrs.frozen
class Actor:
    id: str
    email: str | None = None
    ip_address: str | None = None


async def set_status(
    book: AgentBook,
    agent_id: str,
    workspace_id: str,
    status: AgentStatus,
    actor: Actor,
    reason: str | None,
) -> AgentRecord | None:
    """Suspend (with `reason`) or resume; the agent as stored after (None if unknown).
    Cancellation: as `Database.run` (the change and its event, or neither)."""
    now = datetime.now(UTC)

    def change(db: sqlite_utils.Database) -> AgentRecord | None:
        with db.atomic():
            done = agent_store.change_status(db, agent_id, workspace_id, status, reason, now)
            changed = agent_store.get(db, agent_id, workspace_id)
            if done and changed is not None:
                audit.append(db, _event(changed, status, actor, reason, now))
            return changed

    record = await book.db.run(change)
    if record is not None:
        await book.changed(record)
    return record


async def auto_suspend(book: AgentBook, loaded: Loaded, reason: str) -> None:
    """Suspend under `auto_suspend`; the actor is the agent's own key."""
    record = loaded.record
    await set_status(
        book, record.id, record.workspace_id, "suspended", Actor(record.key_id), reason
    )


def _event(
    record: AgentRecord, status: AgentStatus, actor: Actor, reason: str | None, now: datetime
) -> AuditEvent:
    return AuditEvent(
        organization_id=record.organization_id,
        workspace_id=record.workspace_id,
        type="agent.suspended" if status == "suspended" else "agent.resumed",
        actor_id=actor.id,
        actor_email=actor.email,
        target_type="agent",
        target_id=record.id,
        ip_address=actor.ip_address,
        timestamp=now,
        details={"reason": reason} if reason else {},
    )
