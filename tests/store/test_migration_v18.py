"""Migration 18: a deleted file keeps its place in the list order for a day, so an `after`
cursor naming it still pages on; another workspace's deleted file stays unknown."""

from __future__ import annotations

import sqlite3
import time

import attrs
import pytest
import sqlite_utils

from store import files
from store.files import FileRecord, ListQuery
from store.migrations import MIGRATIONS, apply_migrations


def record(index: int, workspace: str = "w") -> FileRecord:
    return FileRecord(
        workspace_id=workspace, key_id="key_x", filename=f"{index}.txt", purpose="document",
        kind="txt", content_type="text/plain", bytes=1, sha256=f"{index:064d}",
        created_at=1_700_000_000 + index,
    )  # fmt: skip


def test_a_deleted_files_place_answers_its_cursor_for_a_day(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    apply_migrations(db, MIGRATIONS)
    made = [record(i) for i in range(5)]
    for made_record in made:
        files.insert(db, made_record, quota_bytes=10**9)
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    files.delete(db, "w", made[3].id)
    page, more = files.list_files(db, ListQuery(workspace_id="w", after=made[3].id))
    assert [f.id for f in page] == [made[2].id, made[1].id, made[0].id] and not more
    ascending = attrs.evolve(ListQuery(workspace_id="w", after=made[3].id), order="asc")
    assert [f.id for f in files.list_files(db, ascending)[0]] == [made[4].id]
    with pytest.raises(LookupError):
        files.list_files(db, ListQuery(workspace_id="other", after=made[3].id))
    # A day later, the next deletion forgets the place.
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0 + files.PLACE_KEPT_S + 1)
    files.delete(db, "w", made[0].id)
    with pytest.raises(LookupError):
        files.list_files(db, ListQuery(workspace_id="w", after=made[3].id))
    assert files.list_files(db, ListQuery(workspace_id="w", after=made[0].id))[0] == []
