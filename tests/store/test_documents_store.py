"""Data documents in the store, on both backends: full-text search over the chunks (FTS5's
BM25 on SQLite, a GIN-indexed tsvector on PostgreSQL) and removal from the index."""

from __future__ import annotations

from typing import Any

import sqlite_utils

from store import documents
from store.documents import DocumentRecord, StoredChunk

TEXTS = (
    "the quarterly report covers revenue and churn",
    "revenue grew while churn fell in the second quarter",
    "a recipe for bread with flour water and salt",
)


def _document(sdb: Any, workspace: str = "default") -> DocumentRecord:
    record = DocumentRecord(
        organization_id="org_default",
        workspace_id=workspace,
        key_id="key_x",
        name="notes",
        original_filename="notes.txt",
        mime_type="text/plain",
        kind="text",
        file_size_bytes=10,
        sha256="ab" * 32,
        data_classification="internal",
        chunking_strategy="fixed",
        chunk_size_tokens=100,
        chunk_overlap_tokens=0,
        residency_region="eu",
        retention_days=None,
        expires_at=None,
        created_at="2025-03-01T12:00:00.000000+00:00",
        updated_at="2025-03-01T12:00:00.000000+00:00",
    )
    documents.insert(sdb, record)
    chunks = [
        StoredChunk(
            chunk_index=i,
            content=text,
            token_count=len(text.split()),
            page_number=1,
            section_header=None,
            start_char=0,
            end_char=len(text),
        )
        for i, text in enumerate(TEXTS)
    ]
    documents.store_chunks(sdb, record.id, chunks, status="completed")
    return record


def _contents(sdb: Any, found: list[tuple[int, float, str]]) -> list[str]:
    ids = [rowid for rowid, _, _ in found]
    rows = dict(sdb.execute("SELECT id, content FROM data_chunks").fetchall())
    return [rows[rowid] for rowid in ids]


def test_full_text_finds_the_chunks_with_a_term_best_first(sdb: sqlite_utils.Database) -> None:
    record = _document(sdb)
    found = documents.full_text(sdb, "default", '"churn" OR "revenue"', limit=10)
    assert sorted(_contents(sdb, found)) == sorted(TEXTS[:2])
    assert all(document == record.id for _, _, document in found)
    scores = [score for _, score, _ in found]
    assert scores == sorted(scores, reverse=True)  # higher is better
    only_bread = documents.full_text(sdb, "default", '"bread"', limit=10)
    assert _contents(sdb, only_bread) == [TEXTS[2]]
    assert documents.full_text(sdb, "default", '"absent"', limit=10) == []


def test_a_quoted_term_is_a_phrase(sdb: sqlite_utils.Database) -> None:
    _document(sdb)
    assert _contents(sdb, documents.full_text(sdb, "default", '"water and salt"', limit=5)) == [
        TEXTS[2]
    ]
    assert documents.full_text(sdb, "default", '"salt and water"', limit=5) == []


def test_another_workspaces_chunks_are_not_found(sdb: sqlite_utils.Database) -> None:
    _document(sdb)
    assert documents.full_text(sdb, "elsewhere", '"revenue"', limit=10) == []


def test_a_removed_document_leaves_the_index(sdb: sqlite_utils.Database) -> None:
    record = _document(sdb)
    with sdb.atomic():
        erased = documents.remove(sdb, "default", record.id)
    assert erased is not None and erased.chunks_deleted == 3
    assert documents.full_text(sdb, "default", '"revenue"', limit=10) == []
    assert documents.get(sdb, "default", record.id) is None
