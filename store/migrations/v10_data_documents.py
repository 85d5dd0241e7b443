"""Migration 10: data documents."""

from store.migrations import postgres_form

_TABLES = """
-- Data documents for retrieval (gateway.documents): the document, its chunks with their
-- float32 vectors, and an FTS5 index over the chunks' text (external content: the text is
-- stored once, in data_chunks). `expires_at` (Unix seconds) is set from `retention_days`;
-- the retention worker erases what is past it.
CREATE TABLE data_documents (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    key_id TEXT NOT NULL,
    name TEXT NOT NULL,
    original_filename TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    kind TEXT NOT NULL,
    file_size_bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    data_classification TEXT NOT NULL,
    chunking_strategy TEXT NOT NULL,
    chunk_size_tokens INTEGER NOT NULL,
    chunk_overlap_tokens INTEGER NOT NULL,
    residency_region TEXT NOT NULL,
    retention_days INTEGER,
    expires_at REAL,
    metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL,
    error_message TEXT,
    chunk_count INTEGER NOT NULL DEFAULT 0,
    embedding_model TEXT,
    embedding_provider TEXT,
    processing_time_seconds REAL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX data_documents_by_workspace ON data_documents (workspace_id, created_at, id);
CREATE INDEX data_documents_by_expiry ON data_documents (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE TABLE data_chunks (
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL REFERENCES data_documents (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    chunk_index INTEGER NOT NULL,
    content TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    page_number INTEGER NOT NULL,
    section_header TEXT,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    vector BLOB,
    UNIQUE (document_id, chunk_index)
);
CREATE INDEX data_chunks_by_workspace ON data_chunks (workspace_id);
"""
SCRIPT = (
    _TABLES
    + """CREATE VIRTUAL TABLE data_chunks_fts USING fts5(
    content, content = 'data_chunks', content_rowid = 'id'
);
"""
)

# PostgreSQL: the chunks' text indexed in place (GIN over its tsvector, the `simple`
# configuration: words as written, no stemming, as FTS5's default tokenizer), searched by
# `store.documents.full_text`.
POSTGRES = postgres_form.translate(_TABLES) + (
    "CREATE INDEX data_chunks_fts ON data_chunks USING gin (to_tsvector('simple', content));"
)
