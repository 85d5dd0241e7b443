"""store.files: migration 6 on a version 5 database, workspace scoping, metadata filters,
quota check inside the insert, cascading deletes and vectors as float32."""

from __future__ import annotations

import sqlite3

import pytest
import sqlite_utils

from store import files
from store.files import Chunk, FileRecord, Finding, ListQuery, Page
from store.migrations import MIGRATIONS, apply_migrations


@pytest.fixture
def db() -> sqlite_utils.Database:
    database = sqlite_utils.Database(sqlite3.connect(":memory:"))
    database.execute("PRAGMA foreign_keys = ON")
    assert apply_migrations(database, MIGRATIONS[:6]) == [1, 2, 3, 4, 5, 6]
    assert apply_migrations(database, MIGRATIONS[:7]) == [7]
    apply_migrations(database)  # the later columns of `files` (the uploading agent)
    return database


def record(name: str, *, workspace: str = "default", size: int = 10, **extra: object) -> FileRecord:
    return FileRecord(
        workspace_id=workspace, key_id="key_a", filename=name, purpose="document", kind="txt",
        content_type="text/plain", bytes=size, sha256="ab" * 32, created_at=1_700_000_000,
        **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def test_reads_are_scoped_to_the_workspace(db: sqlite_utils.Database) -> None:
    mine = record("a.txt")
    files.insert(db, mine, quota_bytes=100)
    assert files.get(db, "default", mine.id) == mine
    assert files.get(db, "other", mine.id) is None
    with pytest.raises(LookupError):
        files.delete(db, "other", mine.id)


def test_metadata_filters_match_keys_literally(db: sqlite_utils.Database) -> None:
    dotted = record("a.txt", metadata={"team.name": "red", "n": 1})
    plain = record("b.txt", metadata={"team": "red"})
    for item in (dotted, plain):
        files.insert(db, item, quota_bytes=100)
    found, more = files.list_files(
        db, ListQuery(workspace_id="default", metadata={"team.name": "red"})
    )
    assert [f.id for f in found] == [dotted.id]
    assert more is False


def test_the_quota_is_checked_in_the_insert(db: sqlite_utils.Database) -> None:
    files.insert(db, record("a.txt", size=60), quota_bytes=100)
    with pytest.raises(files.QuotaExceededError):
        files.insert(db, record("b.txt", size=60), quota_bytes=100)
    files.insert(db, record("c.txt", size=60, workspace="default"), quota_bytes=200)


def test_delete_cascades_and_reports_an_unused_blob(db: sqlite_utils.Database) -> None:
    db.execute("INSERT INTO workspaces (id, name, created_at) VALUES ('w2', 'w2', 'now')")
    first, second = record("a.txt"), record("b.txt", workspace="w2")
    for item in (first, second):
        files.insert(db, item, quota_bytes=100)
    chunk = Chunk(index=0, text="hi", page=1, start_char=0, end_char=2, tokens=1)
    finding = Finding(type="email", text="a***b", page=1, start=0, end=2, confidence=1.0)
    files.replace_derived(db, first.id, [Page(1, "hi")], [chunk], [finding])
    stored = files.store_vectors(
        db, first.id, collection=None, model="m", vectors=[(0, [0.5, 1.5])]
    )
    assert stored == 1
    assert files.vectors(db, first.id) == [(0, [0.5, 1.5])]
    assert files.delete(db, "default", first.id) is None  # w2's file names the same blob
    assert files.pages(db, first.id) == []
    assert files.vectors(db, first.id) == []
    assert files.findings(db, first.id) == []
    assert files.delete(db, "w2", second.id) == "ab" * 32
