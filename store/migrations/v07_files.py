"""Migration 7: files."""

SCRIPT = """
-- Uploaded files (issue 12). The bytes live in the content-addressed blob store
-- (store/blobs.py) under `sha256`; a blob is removed when no file row names it any more.
CREATE TABLE files (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    -- The uploading key: processing (embeddings) is done and accounted in its name.
    key_id TEXT NOT NULL,
    filename TEXT NOT NULL,
    purpose TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_type TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('uploaded', 'processing', 'processed', 'error')),
    status_details TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    options TEXT NOT NULL DEFAULT '{}',
    collection TEXT,
    process_id TEXT,
    started_at INTEGER,
    completed_at INTEGER,
    duration_ms INTEGER,
    stages TEXT NOT NULL DEFAULT '{}',
    results TEXT NOT NULL DEFAULT '{}',
    language TEXT
);
CREATE INDEX files_by_workspace ON files (workspace_id, created_at, id);
CREATE INDEX files_by_sha256 ON files (sha256);
CREATE INDEX files_by_status ON files (status);

CREATE TABLE file_pages (
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (file_id, number)
);

CREATE TABLE file_chunks (
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    text TEXT NOT NULL,
    page INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    embedding_id TEXT,
    PRIMARY KEY (file_id, idx)
);

-- Vectors as little-endian float32 blobs, searched exactly (see store/files.py).
CREATE TABLE file_vectors (
    id TEXT PRIMARY KEY,
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    chunk_idx INTEGER NOT NULL,
    collection TEXT,
    model TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX file_vectors_by_file ON file_vectors (file_id);
CREATE INDEX file_vectors_by_collection ON file_vectors (collection, model);

CREATE TABLE file_pii (
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    type TEXT NOT NULL,
    text TEXT NOT NULL,
    page INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    confidence REAL NOT NULL,
    redacted INTEGER NOT NULL,
    PRIMARY KEY (file_id, idx)
);
"""
