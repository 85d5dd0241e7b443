"""Routing rules: records, their row form, and the queries the gateway needs.

A rule belongs to one workspace. Its `conditions` and `actions` are stored as the JSON
objects the gateway validated (`gateway.upstream.routing.rule_input`); this module does not
interpret them. What it does guard is the one invariant that spans rows: two *enabled*
rules of a workspace never share a priority. Disabled rules may share one, so a rule can
be parked and a replacement put in its place; enabling it again is then refused. The
check runs inside the writing transaction (`PriorityConflictError`), and a partial unique
index (migration 2) backs it up.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from store import columns
from store.handle import Handle

PRIORITY_STEP = 10
"""Gap left between a default priority and the highest one in use, room to insert later."""

_IMMUTABLE_FIELDS = frozenset({"id", "workspace_id", "created_at"})


class PriorityConflictError(Exception):
    """Another enabled rule of the workspace already holds this priority."""

    def __init__(self, priority: int, holder: RoutingRuleRecord) -> None:
        super().__init__(f"priority {priority} is held by enabled rule {holder.id}")
        self.priority = priority
        self.holder = holder


def new_rule_id() -> str:
    return columns.new_id("rule_")


@attrs.frozen(kw_only=True)
class RoutingRuleRecord:
    """One stored routing rule. Times are aware UTC datetimes."""

    id: str = attrs.field(factory=new_rule_id)
    workspace_id: str
    name: str
    priority: int
    enabled: bool = True
    conditions: Mapping[str, Any] = attrs.field(factory=dict, converter=columns.plain_dict)
    actions: Mapping[str, Any] = attrs.field(factory=dict, converter=columns.plain_dict)
    created_at: datetime
    updated_at: datetime


def _to_row(record: RoutingRuleRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "workspace_id": record.workspace_id,
        "name": record.name,
        "priority": record.priority,
        "enabled": int(record.enabled),
        "conditions": columns.to_json(record.conditions),
        "actions": columns.to_json(record.actions),
        "created_at": columns.to_iso(record.created_at),
        "updated_at": columns.to_iso(record.updated_at),
    }


def _from_row(row: Mapping[str, Any]) -> RoutingRuleRecord:
    return RoutingRuleRecord(
        id=row["id"],
        workspace_id=row["workspace_id"],
        name=row["name"],
        priority=int(row["priority"]),
        enabled=bool(row["enabled"]),
        conditions=columns.json_object(row["conditions"]),
        actions=columns.json_object(row["actions"]),
        created_at=columns.from_iso(row["created_at"]),
        updated_at=columns.from_iso(row["updated_at"]),
    )


def _select(db: Handle, where: str, params: list[Any]) -> list[RoutingRuleRecord]:
    rows = db.query(
        f"SELECT * FROM routing_rules WHERE {where} ORDER BY priority, created_at, id", params
    )
    return [_from_row(row) for row in rows]


def get(db: Handle, rule_id: str, workspace_id: str | None = None) -> RoutingRuleRecord | None:
    """The rule with this id; with `workspace_id`, only if it belongs to that workspace."""
    if workspace_id is None:
        found = _select(db, "id = ?", [rule_id])
    else:
        found = _select(db, "id = ? AND workspace_id = ?", [rule_id, workspace_id])
    return found[0] if found else None


def list_rules(db: Handle, workspace_id: str) -> list[RoutingRuleRecord]:
    """Every rule of a workspace (disabled ones included), in evaluation order."""
    return _select(db, "workspace_id = ?", [workspace_id])


def all_enabled(db: Handle) -> list[RoutingRuleRecord]:
    """Every enabled rule of every workspace, to fill the gateway's in-memory rule book."""
    return _select(db, "enabled = 1", [])


def conflicting(
    db: Handle, workspace_id: str, priority: int, exclude_id: str | None = None
) -> RoutingRuleRecord | None:
    """The enabled rule of the workspace holding `priority`, other than `exclude_id`."""
    found = _select(
        db,
        "workspace_id = ? AND priority = ? AND enabled = 1 AND id != ?",
        [workspace_id, priority, exclude_id or ""],
    )
    return found[0] if found else None


def next_priority(db: Handle, workspace_id: str) -> int:
    """The default priority for a new rule: `PRIORITY_STEP` past the highest one in use
    (disabled rules count, so that enabling them later cannot collide), or the step itself."""
    row = db.execute(
        "SELECT max(priority) FROM routing_rules WHERE workspace_id = ?", [workspace_id]
    ).fetchone()
    highest = row[0]
    return PRIORITY_STEP if highest is None else max(int(highest), 0) + PRIORITY_STEP


def _check_priority(db: Handle, record: RoutingRuleRecord) -> None:
    if not record.enabled:
        return
    holder = conflicting(db, record.workspace_id, record.priority, exclude_id=record.id)
    if holder is not None:
        raise PriorityConflictError(record.priority, holder)


def create(
    db: Handle,
    *,
    workspace_id: str,
    name: str,
    priority: int | None,
    enabled: bool,
    conditions: Mapping[str, Any],
    actions: Mapping[str, Any],
    now: datetime,
) -> RoutingRuleRecord:
    """Store a new rule, choosing its priority when `priority` is None (`next_priority`).

    Raises `PriorityConflictError` (and stores nothing) when it would collide.
    """
    with db.atomic():
        record = RoutingRuleRecord(
            workspace_id=workspace_id,
            name=name,
            priority=next_priority(db, workspace_id) if priority is None else priority,
            enabled=enabled,
            conditions=conditions,
            actions=actions,
            created_at=now,
            updated_at=now,
        )
        insert(db, record)
    return record


def insert(db: Handle, record: RoutingRuleRecord) -> None:
    """Store a rule built by the caller. Raises `PriorityConflictError` on a collision,
    sqlite3.IntegrityError on a duplicate id or an unknown workspace."""
    with db.atomic():
        _check_priority(db, record)
        columns.insert_row(db, "routing_rules", _to_row(record))


def update(db: Handle, rule_id: str, workspace_id: str, **fields: Any) -> RoutingRuleRecord | None:
    """Change some fields of a workspace's rule; None if it has no such rule.

    Accepts name, priority, enabled, conditions, actions (replaced whole) and updated_at,
    which is set to now unless given. Raises `PriorityConflictError` and changes nothing
    when the result would collide with another enabled rule.
    """
    frozen = _IMMUTABLE_FIELDS.intersection(fields)
    if frozen:
        raise ValueError(f"fields cannot be updated: {sorted(frozen)}")
    fields.setdefault("updated_at", datetime.now(UTC))
    with db.atomic():
        current = get(db, rule_id, workspace_id)
        if current is None:
            return None
        changed = attrs.evolve(current, **fields)
        _check_priority(db, changed)
        row = _to_row(changed)
        assignments = ", ".join(f"{name} = :{name}" for name in row if name != "id")
        db.execute(f"UPDATE routing_rules SET {assignments} WHERE id = :id", row)
    return changed


def set_enabled(
    db: Handle, rule_id: str, workspace_id: str, enabled: bool, at: datetime
) -> RoutingRuleRecord | None:
    """Enable or disable a rule. Setting the state it already has changes nothing (its
    `updated_at` included). Enabling may raise `PriorityConflictError`."""
    with db.atomic():
        current = get(db, rule_id, workspace_id)
        if current is None or current.enabled == enabled:
            return current
        return update(db, rule_id, workspace_id, enabled=enabled, updated_at=at)


def delete(db: Handle, rule_id: str, workspace_id: str) -> bool:
    """Remove a workspace's rule; True if it existed."""
    cursor = db.execute(
        "DELETE FROM routing_rules WHERE id = ? AND workspace_id = ?", [rule_id, workspace_id]
    )
    return cursor.rowcount > 0
