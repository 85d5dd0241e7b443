"""Migration 23: the request log, and the workspace switch that keeps request bodies in it."""

SCRIPT = """
-- One row per model call the gateway answered or refused (a usage record that the request
-- log kept), written in the usage writer's batches and deleted past the log's window.
-- `id` orders the log (newest first) and is what its cursors hold; `attempts` is the
-- race's record as JSON; `body` is the sealed (PII-redacted, encrypted) request and
-- answer, only for workspaces that turned bodies on.
CREATE TABLE request_log (
    id INTEGER PRIMARY KEY,
    request_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    created_epoch INTEGER NOT NULL,
    endpoint TEXT NOT NULL,
    model_requested TEXT,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    status INTEGER NOT NULL,
    error_code TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    audio_seconds REAL NOT NULL DEFAULT 0,
    characters INTEGER NOT NULL DEFAULT 0,
    pages INTEGER NOT NULL DEFAULT 0,
    searches INTEGER NOT NULL DEFAULT 0,
    bytes_stored INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    latency_ms REAL NOT NULL DEFAULT 0,
    ttft_ms REAL,
    cache_hit INTEGER NOT NULL DEFAULT 0,
    attempts TEXT NOT NULL DEFAULT '[]',
    trace_id TEXT,
    body TEXT
);
CREATE INDEX request_log_by_workspace ON request_log (workspace_id, id);
CREATE INDEX request_log_by_request ON request_log (workspace_id, request_id);
CREATE INDEX request_log_by_time ON request_log (created_epoch);
ALTER TABLE workspaces ADD COLUMN request_log_bodies INTEGER NOT NULL DEFAULT 0;
"""
