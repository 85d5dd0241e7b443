"""Agents: automated callers with their own key, limits, suspension state and alerts.

An agent's key is an ordinary `api_keys` row carrying `agent_id` (migration 11), so the
key ring authenticates it like any key and admission sees the agent with one attribute
read. Limits are stored as the agent's own overrides only (a name absent inherits the
organisation's); `organizations.agent_limits` holds the organisation's ceilings (NULL:
the gateway's defaults, see `gateway.agents.limits`). The totals an agent has spent are
read from the usage log, so a restart does not hand out a fresh budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, cast

import attrs

from store import columns
from store.handle import Handle
from store.keys import ApiKeyRecord
from store.keys import insert as insert_key

AgentStatus = Literal["active", "suspended"]


def new_agent_id() -> str:
    return columns.new_id("agt_")


def new_alert_id() -> str:
    return columns.new_id("agal_")


@attrs.frozen(kw_only=True)
class AutoSuspend:
    on_cost_limit: bool = False
    on_rpm_abuse: bool = False
    abuse_threshold: int = 10


@attrs.frozen(kw_only=True)
class AgentRecord:
    id: str = attrs.field(factory=new_agent_id)
    organization_id: str
    workspace_id: str
    name: str
    key_id: str
    tools: tuple[str, ...] = attrs.field(converter=columns.str_tuple)
    limits: Mapping[str, float] = attrs.field(factory=dict, converter=columns.plain_dict)
    template: str | None = None
    auto_suspend: AutoSuspend = attrs.field(factory=AutoSuspend)
    status: AgentStatus = "active"
    suspended_reason: str | None = None
    suspended_at: datetime | None = None
    created_at: datetime
    updated_at: datetime


@attrs.frozen(kw_only=True)
class AgentAlertRecord:
    id: str = attrs.field(factory=new_alert_id)
    agent_id: str
    workspace_id: str
    thresholds: Mapping[str, tuple[float, ...]]
    webhook_url: str
    encrypted_secret: str = attrs.field(repr=False)
    created_at: datetime


@attrs.frozen
class Spent:
    """What a key has metered since a moment: the quantities agent limits count."""

    cost: float = 0.0
    audio_seconds: float = 0.0
    pages: int = 0
    embedding_tokens: int = 0


# -- agents -------------------------------------------------------------------------------


def _to_row(record: AgentRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "organization_id": record.organization_id,
        "workspace_id": record.workspace_id,
        "name": record.name,
        "key_id": record.key_id,
        "tools": columns.to_json(record.tools),
        "limits": columns.to_json(dict(record.limits)),
        "template": record.template,
        "auto_suspend": columns.to_json(attrs.asdict(record.auto_suspend)),
        "status": record.status,
        "suspended_reason": record.suspended_reason,
        "suspended_at": columns.to_iso_or_none(record.suspended_at),
        "created_at": columns.to_iso(record.created_at),
        "updated_at": columns.to_iso(record.updated_at),
    }


def _from_row(row: Mapping[str, Any]) -> AgentRecord:
    return AgentRecord(
        id=row["id"],
        organization_id=row["organization_id"],
        workspace_id=row["workspace_id"],
        name=row["name"],
        key_id=row["key_id"],
        tools=columns.json_strings(row["tools"]),
        limits=columns.json_object(row["limits"]),
        template=row["template"],
        auto_suspend=AutoSuspend(**columns.json_object(row["auto_suspend"])),
        status=cast(AgentStatus, row["status"]),
        suspended_reason=row["suspended_reason"],
        suspended_at=columns.from_iso_or_none(row["suspended_at"]),
        created_at=columns.from_iso(row["created_at"]),
        updated_at=columns.from_iso(row["updated_at"]),
    )


def insert(db: Handle, record: AgentRecord, key: ApiKeyRecord) -> AgentRecord:
    """Store an agent and its key together (the caller's transaction, or one of its own)."""
    with db.atomic():
        insert_key(db, key)
        columns.insert_row(db, "agents", _to_row(record))
    return record


def get(db: Handle, agent_id: str, workspace_id: str | None = None) -> AgentRecord | None:
    """The agent; with `workspace_id`, only if it belongs to that workspace."""
    if workspace_id is None:
        rows = list(db.query("SELECT * FROM agents WHERE id = ?", [agent_id]))
    else:
        rows = list(
            db.query(
                "SELECT * FROM agents WHERE id = ? AND workspace_id = ?", [agent_id, workspace_id]
            )
        )
    return _from_row(rows[0]) if rows else None


def list_agents(db: Handle, workspace_id: str) -> list[AgentRecord]:
    rows = db.query(
        "SELECT * FROM agents WHERE workspace_id = ? ORDER BY created_at, id", [workspace_id]
    )
    return [_from_row(row) for row in rows]


def replace(db: Handle, record: AgentRecord) -> AgentRecord:
    """Store a changed agent (limits, auto_suspend, status); returns it."""
    row = _to_row(record)
    assignments = ", ".join(f"{name} = :{name}" for name in row if name != "id")
    db.execute(f"UPDATE agents SET {assignments} WHERE id = :id", row)
    return record


def change_status(
    db: Handle,
    agent_id: str,
    workspace_id: str,
    status: str,
    reason: str | None,
    now: datetime,
) -> bool:
    """Suspend (with `reason`, at `now`) or resume; False when the agent is unknown or
    already so. A write first, so a transaction that starts with it takes the write lock
    (waiting its turn) instead of failing to upgrade a read made before another
    process's write."""
    suspended = status == "suspended"
    cursor = db.execute(
        "UPDATE agents SET status = ?, suspended_reason = ?, suspended_at = ?, updated_at = ? "
        "WHERE id = ? AND workspace_id = ? AND status <> ?",
        [
            status,
            reason if suspended else None,
            columns.to_iso(now) if suspended else None,
            columns.to_iso(now),
            agent_id,
            workspace_id,
            status,
        ],
    )
    return bool(cursor.rowcount)


def delete(db: Handle, agent_id: str, workspace_id: str) -> str | None:
    """Remove the agent and its key; the removed key's hash (None if no such agent)."""
    with db.atomic():
        found = get(db, agent_id, workspace_id)
        if found is None:
            return None
        rows = list(db.query("SELECT key_hash FROM api_keys WHERE id = ?", [found.key_id]))
        db.execute("DELETE FROM api_keys WHERE id = ?", [found.key_id])
        db.execute("DELETE FROM agents WHERE id = ?", [agent_id])
    return str(rows[0]["key_hash"]) if rows else ""


# -- the organisation's ceilings --------------------------------------------------------------


def organization_limits(db: Handle, organization_id: str) -> dict[str, float | None] | None:
    """The organisation's own agent limits, or None when it never set them."""
    rows = list(db.query("SELECT agent_limits FROM organizations WHERE id = ?", [organization_id]))
    if not rows or rows[0]["agent_limits"] is None:
        return None
    stored = columns.json_object(rows[0]["agent_limits"])
    return {k: (None if v is None else float(v)) for k, v in stored.items()}


def set_organization_limits(
    db: Handle, organization_id: str, limits: Mapping[str, float | None] | None
) -> None:
    """Store every limit name (None: no limit); `limits=None` returns to the defaults."""
    value = None if limits is None else columns.to_json(dict(limits))
    db.execute("UPDATE organizations SET agent_limits = ? WHERE id = ?", [value, organization_id])


# -- what was spent -------------------------------------------------------------------------


def spent_since(db: Handle, key_id: str, since: datetime) -> Spent:
    """The metered totals of one key's requests since `since` (from the usage log)."""
    row = db.execute(
        "SELECT coalesce(sum(cost_usd), 0), coalesce(sum(audio_seconds), 0), "
        "coalesce(sum(pages), 0), "
        "coalesce(sum(CASE WHEN endpoint = 'embeddings' THEN prompt_tokens ELSE 0 END), 0) "
        "FROM usage_records WHERE key_id = ? AND created_epoch >= ?",
        [key_id, columns.to_epoch(since)],
    ).fetchone()
    return Spent(float(row[0]), float(row[1]), int(row[2]), int(row[3]))


def session_spent(db: Handle, key_id: str, session: str) -> float:
    """The cost of one agent session's requests (from the usage log; the partial index
    on (key_id, agent_session) answers it)."""
    row = db.execute(
        "SELECT coalesce(sum(cost_usd), 0) FROM usage_records "
        "WHERE key_id = ? AND agent_session = ?",
        [key_id, session],
    ).fetchone()
    return float(row[0])


# -- alerts ---------------------------------------------------------------------------------


def _alert_from_row(row: Mapping[str, Any]) -> AgentAlertRecord:
    thresholds = columns.json_object(row["thresholds"])
    return AgentAlertRecord(
        id=row["id"],
        agent_id=row["agent_id"],
        workspace_id=row["workspace_id"],
        thresholds={k: tuple(float(f) for f in v) for k, v in thresholds.items()},
        webhook_url=row["webhook_url"],
        encrypted_secret=row["encrypted_secret"],
        created_at=columns.from_iso(row["created_at"]),
    )


def insert_alert(db: Handle, record: AgentAlertRecord) -> AgentAlertRecord:
    columns.insert_row(
        db,
        "agent_alerts",
        {
            "id": record.id,
            "agent_id": record.agent_id,
            "workspace_id": record.workspace_id,
            "thresholds": columns.to_json({k: list(v) for k, v in record.thresholds.items()}),
            "webhook_url": record.webhook_url,
            "encrypted_secret": record.encrypted_secret,
            "created_at": columns.to_iso(record.created_at),
        },
    )
    return record


def list_alerts(db: Handle, agent_id: str) -> list[AgentAlertRecord]:
    rows = db.query(
        "SELECT * FROM agent_alerts WHERE agent_id = ? ORDER BY created_at, id", [agent_id]
    )
    return [_alert_from_row(row) for row in rows]


def get_alert(db: Handle, alert_id: str, agent_id: str) -> AgentAlertRecord | None:
    rows = list(
        db.query("SELECT * FROM agent_alerts WHERE id = ? AND agent_id = ?", [alert_id, agent_id])
    )
    return _alert_from_row(rows[0]) if rows else None


def delete_alert(db: Handle, alert_id: str, agent_id: str) -> bool:
    """Remove one of an agent's alerts (its firings go with it); False when unknown."""
    cursor = db.execute(
        "DELETE FROM agent_alerts WHERE id = ? AND agent_id = ?", [alert_id, agent_id]
    )
    return bool(cursor.rowcount)


def claim_firing(
    db: Handle,
    alert_id: str,
    limit_type: str,
    threshold: float,
    period: str,
    now: datetime,
) -> bool:
    """Record that a threshold fired in `period`; False when it already had (fire once)."""
    cursor = db.execute(
        "INSERT INTO agent_alert_firings (alert_id, limit_type, threshold, period, fired_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [alert_id, limit_type, threshold, period, columns.to_iso(now)],
    )
    return cursor.rowcount > 0
