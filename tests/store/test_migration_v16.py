"""Migration 16: the full-text stage finds a workspace's chunks by rowid in an index alone."""

from __future__ import annotations

import sqlite3

import sqlite_utils

from store.documents import _completed_in_workspace
from store.migrations import MIGRATIONS, apply_migrations


def test_chunks_are_found_by_workspace_and_rowid_without_reading_their_rows() -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    apply_migrations(db, MIGRATIONS)
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "data_chunks_by_workspace_chunk" in names
    assert "data_chunks_by_workspace" not in names
    plan = " ".join(
        str(row[3])
        for row in db.execute(
            "EXPLAIN QUERY PLAN SELECT c.id, c.document_id FROM data_chunks c "
            "WHERE c.id IN (SELECT value FROM json_each('[1, 2]')) AND c.workspace_id = 'w'"
        )
    )
    assert "COVERING INDEX data_chunks_by_workspace_chunk" in plan
    assert _completed_in_workspace(db, "w", [1, 2]) == {}
