"""Migration 2: routing rules."""

SCRIPT = """
CREATE TABLE routing_rules (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    priority INTEGER NOT NULL,
    enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    conditions TEXT NOT NULL DEFAULT '{}',
    actions TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX routing_rules_by_workspace ON routing_rules (workspace_id, priority, created_at);
-- Two enabled rules of a workspace never share a priority; disabled rules may.
CREATE UNIQUE INDEX routing_rules_enabled_priority
    ON routing_rules (workspace_id, priority) WHERE enabled = 1;
"""
