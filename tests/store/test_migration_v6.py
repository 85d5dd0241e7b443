"""Migration 6: organisations; a version 5 database's data moves into the default one."""

from __future__ import annotations

import sqlite3

import pytest
import sqlite_utils

from store import audit, keys, organizations, workspaces
from store.audit import AuditEvent
from store.errors import integrity_errors
from store.migrations import MIGRATIONS, apply_migrations, current_version
from store.secrets import hash_key, new_api_key

from .conftest import T0


def test_existing_rows_join_the_default_organisation_and_stay_readable() -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    try:
        assert apply_migrations(db, MIGRATIONS[:5]) == [1, 2, 3, 4, 5]
        db.execute(
            "INSERT INTO workspaces (id, name, description, created_at) "
            "VALUES ('ws_old', 'Old', '', ?)",
            [T0.isoformat()],
        )
        key = new_api_key("prod")
        db.table("api_keys").insert(
            {
                "id": "key_old",
                "workspace_id": "ws_old",
                "name": "old",
                "kind": "prod",
                "prefix": "gw_prod_",
                "key_hash": hash_key(key),
                "last_four": key[-4:],
                "status": "active",
                "created_at": T0.isoformat(),
                "updated_at": T0.isoformat(),
            }
        )
        db.table("audit_events").insert(
            {
                "id": "evt_old",
                "workspace_id": "ws_old",
                "type": "api_key.created",
                "timestamp": T0.isoformat(),
            }
        )

        assert apply_migrations(db, MIGRATIONS[:6]) == [6]
        assert current_version(db) == 6
        apply_migrations(db)  # the store's code reads today's schema
        assert organizations.default(db).name == "Default"
        assert organizations.default(db).plan == "pro"  # the plan migration keeps it on Pro
        old_ws = workspaces.get(db, "ws_old")
        assert old_ws is not None and old_ws.organization_id == "org_default"
        assert {w.id for w in workspaces.list_workspaces(db, "org_default")} == {
            "default",
            "ws_old",
        }
        record = keys.find_by_hash(db, hash_key(key))
        assert record is not None
        assert (record.organization_id, record.role, record.scope) == ("org_default", None, ())
        events = audit.list_events(db, "ws_old")
        assert [(e.id, e.organization_id) for e in events] == [("evt_old", "org_default")]
    finally:
        db.close()


def test_audit_query_pages_filters_and_scopes(sdb: sqlite_utils.Database) -> None:
    def event(kind: str, workspace: str, org: str = "org_default") -> AuditEvent:
        made = AuditEvent(
            organization_id=org, workspace_id=workspace, type=kind, actor_id="a", timestamp=T0
        )
        audit.append(sdb, made)
        return made

    mine = event("api_key.created", "default")
    shared = event("member.invited", audit.ORGANIZATION_WIDE)
    event("api_key.created", "ws_other")
    event("api_key.created", "default", org="org_other")
    last = event("api_key.revoked", "default")

    def ids(**kw: object) -> list[str]:
        q = audit.AuditQuery(organization_id="org_default", workspace_id="default", **kw)  # type: ignore[arg-type]
        return [e.id for e in audit.query(sdb, q)]

    assert ids() == [last.id, shared.id, mine.id]
    assert ids(organization_wide=False) == [last.id, mine.id]
    assert ids(type="api_key.created") == [mine.id]
    assert ids(limit=1, before_id=last.id) == [shared.id]
    assert ids(before_id="evt_unknown") == []


def test_new_organisations_start_on_free_and_the_plan_is_checked(
    sdb: sqlite_utils.Database,
) -> None:
    org = organizations.insert(sdb, organizations.OrganizationRecord(name="New", created_at=T0))
    assert organizations.get(sdb, org.id) == org
    assert org.plan == "free"
    changed = organizations.set_plan(sdb, org.id, "enterprise")
    assert changed is not None and changed.plan == "enterprise"
    assert organizations.set_plan(sdb, "org_nope", "pro") is None
    with pytest.raises(integrity_errors()):
        organizations.set_plan(sdb, org.id, "gold")
