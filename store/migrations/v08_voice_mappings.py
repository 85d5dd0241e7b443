"""Migration 8: voice mappings."""

SCRIPT = """
-- A workspace's custom voices: a name usable wherever a `voice` is, mapped to one voice
-- id per provider (gateway.audio.voices). Names are unique within a workspace.
CREATE TABLE voice_mappings (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    mappings TEXT NOT NULL DEFAULT '{}',
    default_settings TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (workspace_id, name)
);
"""
