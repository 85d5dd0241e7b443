"""Migration 1: initial."""

SCRIPT = """
CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
INSERT INTO workspaces (id, name, description, created_at)
VALUES ('default', 'Default', 'Default workspace',
        strftime('%Y-%m-%dT%H:%M:%f000+00:00', 'now'));

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('dev', 'prod', 'admin', 'tenant')),
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    last_four TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    permissions TEXT NOT NULL DEFAULT '[]',
    rate_limits TEXT NOT NULL DEFAULT '{}',
    allowed_models TEXT NOT NULL DEFAULT '[]',
    allowed_ips TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_used_at TEXT,
    expires_at TEXT,
    revoked_at TEXT,
    rotated_from TEXT
);
CREATE INDEX api_keys_by_workspace ON api_keys (workspace_id, created_at);
CREATE INDEX api_keys_by_status ON api_keys (status);

CREATE TABLE providers (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    provider_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'inactive', 'disabled')),
    encrypted_credentials TEXT NOT NULL,
    settings TEXT NOT NULL DEFAULT '{}',
    configured_at TEXT NOT NULL,
    credentials_updated_at TEXT,
    disabled_at TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, provider_id)
);

-- Usage outlives the keys and workspaces it mentions (history), hence no foreign keys.
CREATE TABLE usage_records (
    request_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    latency_ms REAL NOT NULL,
    energy_kwh REAL NOT NULL,
    carbon_gco2e REAL NOT NULL,
    status INTEGER NOT NULL,
    error_code TEXT,
    cache_hit INTEGER NOT NULL CHECK (cache_hit IN (0, 1)),
    project TEXT,
    team TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    created_epoch REAL NOT NULL
);
CREATE INDEX usage_by_key_time ON usage_records (key_id, created_epoch);
CREATE INDEX usage_by_workspace_time ON usage_records (workspace_id, created_epoch);
CREATE INDEX usage_by_workspace_provider_time
    ON usage_records (workspace_id, provider, created_epoch);
CREATE INDEX usage_by_request ON usage_records (request_id);

CREATE TABLE audit_events (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    type TEXT NOT NULL,
    actor_id TEXT,
    actor_email TEXT,
    target_type TEXT,
    target_id TEXT,
    target_email TEXT,
    ip_address TEXT,
    timestamp TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_by_workspace_time ON audit_events (workspace_id, timestamp);
"""
