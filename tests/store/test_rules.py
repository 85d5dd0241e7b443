from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from store import columns, rules, workspaces
from store.db import open_database
from store.errors import integrity_errors
from store.rules import PriorityConflictError, RoutingRuleRecord

from .conftest import T0

CONDITIONS = {"models": ["gpt-4o*"], "time_range": {"start": "09:00", "end": "17:00"}}
ACTIONS = {"route_to": "gpt-4o-mini", "fallbacks": ["claude-haiku-4-5"]}


def _create(
    sdb: sqlite_utils.Database,
    name: str = "rule",
    priority: int | None = None,
    enabled: bool = True,
    workspace_id: str = "default",
    **extra: Any,
) -> RoutingRuleRecord:
    return rules.create(
        sdb,
        workspace_id=workspace_id,
        name=name,
        priority=priority,
        enabled=enabled,
        conditions=extra.get("conditions", CONDITIONS),
        actions=extra.get("actions", ACTIONS),
        now=T0,
    )


def _add_workspace(sdb: sqlite_utils.Database, workspace_id: str) -> None:
    workspaces.insert(
        sdb, workspaces.WorkspaceRecord(id=workspace_id, name=workspace_id, created_at=T0)
    )


def test_create_round_trips_every_field(sdb: sqlite_utils.Database) -> None:
    record = _create(sdb, name="office hours", priority=5)
    assert record.id.startswith("rule_")
    assert rules.get(sdb, record.id) == record
    assert record.conditions == CONDITIONS
    assert record.actions == ACTIONS
    assert record.created_at == record.updated_at == T0
    assert record.enabled is True


def test_default_priority_is_ten_past_the_highest_including_disabled(
    sdb: sqlite_utils.Database,
) -> None:
    assert _create(sdb).priority == rules.PRIORITY_STEP
    _create(sdb, priority=35, enabled=False)
    assert _create(sdb).priority == 45
    _add_workspace(sdb, "ws_other")
    assert _create(sdb, workspace_id="ws_other").priority == rules.PRIORITY_STEP


def test_list_is_in_priority_order_and_workspace_scoped(sdb: sqlite_utils.Database) -> None:
    _add_workspace(sdb, "ws_other")
    c = _create(sdb, "c", 30)
    a = _create(sdb, "a", 10)
    b = _create(sdb, "b", 20, enabled=False)
    _create(sdb, "elsewhere", 1, workspace_id="ws_other")
    assert [r.id for r in rules.list_rules(sdb, "default")] == [a.id, b.id, c.id]
    assert rules.get(sdb, a.id, "ws_other") is None
    assert rules.get(sdb, a.id, "default") == a
    assert [r.name for r in rules.all_enabled(sdb)] == ["elsewhere", "a", "c"]


def test_enabled_rules_may_not_share_a_priority(sdb: sqlite_utils.Database) -> None:
    first = _create(sdb, "first", 10)
    with pytest.raises(PriorityConflictError) as caught:
        _create(sdb, "second", 10)
    assert caught.value.holder == first
    assert caught.value.priority == 10
    assert [r.id for r in rules.list_rules(sdb, "default")] == [first.id]


def test_disabled_rules_do_not_hold_their_priority(sdb: sqlite_utils.Database) -> None:
    parked = _create(sdb, "parked", 10, enabled=False)
    live = _create(sdb, "live", 10)
    with pytest.raises(PriorityConflictError):
        rules.set_enabled(sdb, parked.id, "default", True, T0)
    assert rules.get(sdb, parked.id) == parked
    rules.set_enabled(sdb, live.id, "default", False, T0)
    enabled = rules.set_enabled(sdb, parked.id, "default", True, T0 + timedelta(seconds=1))
    assert enabled is not None and enabled.enabled
    assert enabled.updated_at == T0 + timedelta(seconds=1)


def test_same_priority_in_two_workspaces_is_fine(sdb: sqlite_utils.Database) -> None:
    _add_workspace(sdb, "ws_other")
    _create(sdb, priority=10)
    _create(sdb, priority=10, workspace_id="ws_other")


def test_update_changes_fields_and_checks_the_priority(sdb: sqlite_utils.Database) -> None:
    a = _create(sdb, "a", 10)
    b = _create(sdb, "b", 20)
    later = T0 + timedelta(minutes=1)
    changed = rules.update(
        sdb, a.id, "default", name="a2", conditions={}, actions={"cache": {}}, updated_at=later
    )
    assert changed is not None
    assert (changed.name, changed.conditions, changed.updated_at) == ("a2", {}, later)
    assert rules.get(sdb, a.id) == changed
    with pytest.raises(PriorityConflictError):
        rules.update(sdb, a.id, "default", priority=20)
    assert rules.get(sdb, b.id) == b
    assert rules.update(sdb, a.id, "default", priority=10) is not None  # its own priority
    assert rules.update(sdb, "rule_missing", "default", name="x") is None
    assert rules.update(sdb, a.id, "elsewhere", name="x") is None
    with pytest.raises(ValueError, match="created_at"):
        rules.update(sdb, a.id, "default", created_at=T0)


def test_set_enabled_to_the_same_state_changes_nothing(sdb: sqlite_utils.Database) -> None:
    a = _create(sdb, priority=10)
    assert rules.set_enabled(sdb, a.id, "default", True, T0 + timedelta(hours=1)) == a
    assert rules.set_enabled(sdb, "rule_missing", "default", True, T0) is None


def test_delete_is_workspace_scoped(sdb: sqlite_utils.Database) -> None:
    a = _create(sdb)
    assert not rules.delete(sdb, a.id, "elsewhere")
    assert rules.delete(sdb, a.id, "default")
    assert not rules.delete(sdb, a.id, "default")
    assert rules.get(sdb, a.id) is None


def test_the_unique_index_backs_the_check(sdb: sqlite_utils.Database) -> None:
    """Even a write that skips the check cannot store two enabled rules on one priority."""
    first = _create(sdb, priority=10)
    row = {
        "id": "rule_raw",
        "workspace_id": "default",
        "name": "raw",
        "priority": 10,
        "enabled": 1,
        "conditions": "{}",
        "actions": "{}",
        "created_at": first.created_at.isoformat(),
        "updated_at": first.created_at.isoformat(),
    }
    with pytest.raises(integrity_errors()):
        columns.insert_row(sdb, "routing_rules", row)
    columns.insert_row(sdb, "routing_rules", row | {"enabled": 0})


def test_rules_go_with_their_workspace(sdb: sqlite_utils.Database) -> None:
    _add_workspace(sdb, "ws_gone")
    _create(sdb, workspace_id="ws_gone")
    workspaces.delete(sdb, "ws_gone")
    assert rules.list_rules(sdb, "ws_gone") == []


def test_rules_survive_reopening(tmp_path: Path) -> None:
    db = open_database(tmp_path)
    created = db.run_sync(lambda d: _create(d, priority=7))
    db.close()
    db = open_database(tmp_path)
    try:
        assert db.run_sync(rules.all_enabled) == [created]
    finally:
        db.close()
