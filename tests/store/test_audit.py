from __future__ import annotations

from datetime import timedelta

import sqlite_utils

from store import audit
from store.audit import AuditEvent

from .conftest import T0


def _event(kind: str, at_minute: int, workspace_id: str = "default") -> AuditEvent:
    return AuditEvent(
        workspace_id=workspace_id,
        type=kind,
        actor_id="key_admin",
        actor_email="admin@example.com",
        target_type="api_key",
        target_id="key_1",
        ip_address="10.0.0.1",
        timestamp=T0 + timedelta(minutes=at_minute),
        details={"name": "ci"},
    )


def test_round_trip(sdb: sqlite_utils.Database) -> None:
    event = _event("api_key.created", 0)
    audit.append(sdb, event)
    assert event.id.startswith("evt_")
    assert audit.list_events(sdb, "default") == [event]


def test_newest_first_with_ties_in_insertion_order(sdb: sqlite_utils.Database) -> None:
    first = _event("api_key.created", 0)
    second = _event("api_key.revoked", 5)
    same_time = _event("provider.configured", 5)
    for event in (first, second, same_time):
        audit.append(sdb, event)
    assert audit.list_events(sdb, "default") == [same_time, second, first]
    assert audit.list_events(sdb, "default", limit=1) == [same_time]


def test_workspace_scoping(sdb: sqlite_utils.Database) -> None:
    audit.append(sdb, _event("api_key.created", 0, workspace_id="ws_other"))
    assert audit.list_events(sdb, "default") == []
    assert len(audit.list_events(sdb, "ws_other")) == 1
