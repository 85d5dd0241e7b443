from __future__ import annotations

import sqlite_utils

from store import keys, workspaces
from store.secrets import new_api_key

from .conftest import T0


def test_default_exists_and_new_ones_list(sdb: sqlite_utils.Database) -> None:
    assert workspaces.get(sdb, "default") is not None
    created = workspaces.WorkspaceRecord(name="Team", created_at=T0)
    workspaces.insert(sdb, created)
    assert created.id.startswith("ws_")
    assert workspaces.get(sdb, created.id) == created
    assert {w.id for w in workspaces.list_workspaces(sdb)} == {"default", created.id}


def test_delete_cascades_to_keys(sdb: sqlite_utils.Database) -> None:
    workspaces.insert(sdb, workspaces.WorkspaceRecord(id="ws_x", name="X", created_at=T0))
    record = keys.new_record(
        new_api_key("prod"), workspace_id="ws_x", name="k", kind="prod", permissions=[], now=T0
    )
    keys.insert(sdb, record)
    assert workspaces.delete(sdb, "ws_x") is True
    assert keys.get(sdb, record.id) is None
    assert workspaces.delete(sdb, "ws_x") is False
