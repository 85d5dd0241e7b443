"""Migration 13: pipeline templates."""

SCRIPT = """
-- A workspace's custom pipeline templates (gateway.pipelines): stage settings kept as one
-- JSON object (stt, llm, tts) beside the name, unique within a workspace.
CREATE TABLE pipeline_templates (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    stages TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (workspace_id, name)
);
"""
